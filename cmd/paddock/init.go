package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/mod/modfile"

	"github.com/paddock-platform/paddock/internal/scaffold"
)

// commitTime is the time of the commit this binary was built from, in Unix
// seconds: `make build` sets it beside commit (-ldflags "-X main.commitTime=...").
var commitTime string

// buildCommitTime is the time of the commit buildCommit names, zero when
// unknown. It comes from where the commit came from: the linked-in value, or
// the revision Go stamped.
func buildCommitTime() (time.Time, error) {
	if commit != "" {
		if commitTime == "" {
			return time.Time{}, nil
		}
		sec, err := strconv.ParseInt(commitTime, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("this binary's commit time %q is not in Unix seconds", commitTime)
		}
		return time.Unix(sec, 0).UTC(), nil
	}
	bi, ok := readBuildInfo()
	if !ok {
		return time.Time{}, nil
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.time" {
			t, err := time.Parse(time.RFC3339, s.Value)
			if err != nil {
				return time.Time{}, fmt.Errorf("this binary's commit time %q: %w", s.Value, err)
			}
			return t.UTC(), nil
		}
	}
	return time.Time{}, nil
}

// ownVersion is the Paddock version this binary was built from, as go.mod
// requires it.
func ownVersion() (string, error) {
	t, err := buildCommitTime()
	if err != nil {
		return "", err
	}
	return scaffold.PaddockVersion(buildCommit(), t)
}

// checkoutPath is the absolute path of a local Paddock checkout (a
// directory whose go.mod is Paddock's).
func checkoutPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(abs, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("--replace %s: not a Paddock checkout: %w", p, err)
	}
	if got := modfile.ModulePath(b); got != scaffold.PaddockModule {
		return "", fmt.Errorf("--replace %s: its go.mod is module %q, not %s", p, got, scaffold.PaddockModule)
	}
	return abs, nil
}

func newInitCmd() *cobra.Command {
	var o scaffold.Options
	var replace string
	cmd := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Write a new platform repository into DIR (default .): a Pulumi project running Paddock's program, a stack, a starter spec, a drift workflow",
		Long: "init writes a platform repository: Pulumi.yaml (runtime go), main.go running Paddock's\n" +
			"program, go.mod requiring Paddock at this binary's own version, stacks/Pulumi.<stack>.yaml,\n" +
			"a starter spec in " + scaffold.SpecDir + "/ (the local example), a nightly drift workflow in\n" +
			".github/workflows/ and a README. It writes nothing when any of those files exists.\n\n" +
			"The version is a pseudo-version of the commit `make build` linked in; a binary that does\n" +
			"not know its commit, or was built from uncommitted changes, needs --paddock-version, or\n" +
			"--replace PATH to build against a local checkout. init does not run `go mod tidy` (it\n" +
			"needs the module proxy): the README it writes says to.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) > 0 {
				dir = args[0]
			}
			abs, err := filepath.Abs(dir)
			if err != nil {
				return err
			}
			if o.Name == "" {
				o.Name = filepath.Base(abs)
				if err := scaffold.ValidateName(o.Name); err != nil {
					return fmt.Errorf("%w (taken from the directory's name): give one with --name", err)
				}
			}
			if err := scaffold.ValidateName(o.Name); err != nil {
				return err
			}
			if replace != "" {
				if o.Replace, err = checkoutPath(replace); err != nil {
					return err
				}
			}
			if o.PaddockVersion == "" {
				v, err := ownVersion()
				switch {
				case err == nil:
					o.PaddockVersion = v
				case o.Replace == "":
					hint := ""
					if errors.Is(err, scaffold.ErrUnknownBuild) {
						hint = " (`make build` links both in)"
					}
					return fmt.Errorf("go.mod requires Paddock at this binary's own version, which is unknown: %v%s. Give the version with --paddock-version VERSION (a release tag or a pseudo-version such as v0.0.0-20260101120000-0123456789ab), or build against a local checkout with --replace PATH", err, hint)
				}
			}
			files, err := scaffold.Render(o)
			if err != nil {
				return err
			}
			if err := scaffold.Write(abs, files); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			required := o.PaddockVersion
			if required == "" {
				required = "replaced"
			}
			if o.Replace != "" {
				required += ", built from " + o.Replace
			}
			fmt.Fprintf(out, "paddock init: wrote the platform repository %s in %s (Paddock %s):\n", o.Name, abs, required)
			for _, f := range files {
				fmt.Fprintf(out, "  %s\n", f.Path)
			}
			fmt.Fprintln(out, "next:")
			if dir != "." {
				fmt.Fprintf(out, "  cd %s\n", shellQuote(dir))
			}
			stack := o.Stack
			if stack == "" {
				stack = scaffold.DefaultStack
			}
			for _, c := range []string{"go mod tidy", "go build ./...", "paddock local up", "paddock up --stack " + stack, "paddock drift --stack " + stack} {
				fmt.Fprintf(out, "  %s\n", c)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.Name, "name", "", "the platform's name and the Pulumi project's, a DNS-1123 label (default: DIR's name)")
	cmd.Flags().StringVar(&o.Stack, "stack", scaffold.DefaultStack, "the stack to write a config file for (stacks/Pulumi.<stack>.yaml)")
	cmd.Flags().StringVar(&o.Module, "module", "", "the new repository's Go module path (default: example.com/<name>/platform)")
	cmd.Flags().StringVar(&o.PaddockVersion, "paddock-version", "", "the Paddock version go.mod requires (default: this binary's own, from the commit it was built from)")
	cmd.Flags().StringVar(&replace, "replace", "", "a local Paddock checkout for go.mod's replace directive to build against")
	return cmd
}

// shellQuote quotes a path for a shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./~") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
