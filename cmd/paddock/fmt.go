package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"github.com/paddock-platform/paddock/schemas"
)

// newFmtCmd is `paddock fmt`: rewrite spec and vars files in canonical HCL
// layout, like `terraform fmt`.
func newFmtCmd() *cobra.Command {
	var check, diff bool
	cmd := &cobra.Command{
		Use:   "fmt [DIR|FILE|-]...",
		Short: "Rewrite spec files in the canonical layout",
		Long: `Fmt rewrites *.hcl spec files and *.pvars.hcl vars files in the canonical HCL layout
(indentation, aligned equals signs, spacing), and lists the files it changed. A
directory means its spec and vars files (not its subdirectories); "-" formats
standard input to standard output. A file with syntax errors is left alone and its
errors are reported.

With -check nothing is written: the files that need formatting are listed and the
exit status is 1 if there are any (for CI). -diff prints what changes.`,
		Example: `  paddock fmt examples/local
  paddock fmt -check -diff .`,
		// Flags are parsed here, so both terraform's -check and --check work.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, rawArgs []string) error {
			var args []string
			for i, a := range rawArgs {
				switch a {
				case "-check", "--check":
					check = true
				case "-diff", "--diff":
					diff = true
				case "-h", "-help", "--help":
					return cmd.Help()
				case "--":
					args = append(args, rawArgs[i+1:]...)
				default:
					if strings.HasPrefix(a, "-") && a != "-" {
						return fmt.Errorf("unknown flag %s: fmt takes -check and -diff", a)
					}
					args = append(args, a)
					continue
				}
				if a == "--" {
					break
				}
			}
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			if len(args) == 1 && args[0] == "-" {
				return fmtStdin(cmd.InOrStdin(), out, errOut)
			}
			files, err := schemas.FormatTargets(args)
			if err != nil {
				return err
			}
			var unformatted, broken int
			for _, name := range files {
				src, diags := schemas.ReadSpecFile(name)
				if diags.HasErrors() {
					schemas.WriteDiagnostics(errOut, nil, diags)
					broken++
					continue
				}
				formatted, diags := schemas.Format(name, src)
				if diags.HasErrors() {
					schemas.WriteDiagnostics(errOut, nil, diags)
					broken++
					continue
				}
				if bytes.Equal(src, formatted) {
					continue
				}
				unformatted++
				fmt.Fprintln(out, name)
				if diff {
					fmt.Fprint(out, schemas.Diff(name, src, formatted))
				}
				if !check {
					if err := writeFilePreservingMode(name, formatted); err != nil {
						return err
					}
				}
			}
			switch {
			case broken > 0:
				return &exitError{code: 1, err: fmt.Errorf("%d file%s with errors left unchanged", broken, countSuffix(broken, ""))}
			case check && unformatted > 0:
				return &exitError{code: 1, err: fmt.Errorf("%d file%s not formatted: run paddock fmt", unformatted, countSuffix(unformatted, ""))}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "write nothing; exit 1 if any file needs formatting")
	cmd.Flags().BoolVar(&diff, "diff", false, "print the changes as a unified diff")
	return cmd
}

func fmtStdin(in io.Reader, out, errOut io.Writer) error {
	// Read one byte past the limit, so that Format refuses what is too large.
	src, err := io.ReadAll(io.LimitReader(in, schemas.MaxSpecFileSize+1))
	if err != nil {
		return err
	}
	formatted, diags := schemas.Format("<stdin>", src)
	if diags.HasErrors() {
		schemas.WriteDiagnostics(errOut, map[string]*hcl.File{"<stdin>": {Bytes: src}}, diags)
		return &exitError{code: 1, err: fmt.Errorf("standard input could not be parsed")}
	}
	_, err = out.Write(formatted)
	return err
}

func writeFilePreservingMode(name string, data []byte) error {
	info, err := os.Stat(name)
	if err != nil {
		return err
	}
	return os.WriteFile(name, data, info.Mode().Perm())
}
