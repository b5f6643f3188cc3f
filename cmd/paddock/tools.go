package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/paddock-platform/paddock/internal/paths"
	"github.com/paddock-platform/paddock/tools"
)

// exitBuildFromSource is `tools fetch`'s answer "nothing fetched: build it (or take
// it from the cache) the usual way". The Makefile's tools target tells it from 0
// (fetched) and from a real error, which stops `make tools`.
const exitBuildFromSource = 3

func newToolsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "Bundle this machine's tool builds for a mirror, and fetch them from one",
		Long: "A tools mirror lets teams and CI take the pinned tools from their own artifact store instead of building them.\n" +
			"`paddock tools bundle --out DIR` writes one archive per built tool, keyed by tool, version and recipe hash;\n" +
			"serve DIR over HTTP(S) or share it as a directory, and set PADDOCK_TOOLS_MIRROR for `make tools`.",
	}
	cmd.AddCommand(newToolsBundleCmd(), newToolsFetchCmd(), newToolsListCmd())
	return cmd
}

// toolSource is the checkout the command runs in, with PADDOCK_TOOLS_SRC
// honoured as build-tool.sh honours it.
func toolSource() (tools.Source, error) {
	wd, err := os.Getwd()
	if err != nil {
		return tools.Source{}, err
	}
	src, err := tools.FindSource(wd)
	if err != nil {
		return src, err
	}
	if d := os.Getenv("PADDOCK_TOOLS_SRC"); d != "" {
		if src.ToolsDir, err = filepath.Abs(d); err != nil {
			return src, err
		}
	}
	return src, nil
}

func selectTools(src tools.Source, names []string) ([]tools.Tool, error) {
	if len(names) == 0 {
		return src.Tools()
	}
	var out []tools.Tool
	for _, n := range names {
		t, err := src.Tool(n)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

func newToolsBundleCmd() *cobra.Command {
	var out string
	var names []string
	cmd := &cobra.Command{
		Use:   "bundle --out DIR",
		Short: "Write the built tools of this machine as bundles (one tar.gz and manifest per tool) into DIR",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return errors.New("--out DIR is required")
			}
			src, err := toolSource()
			if err != nil {
				return err
			}
			list, err := selectTools(src, names)
			if err != nil {
				return err
			}
			home, platform := paths.Home(), tools.Platform()
			w := cmd.OutOrStdout()
			written := 0
			for _, t := range list {
				b, err := tools.Bundle(home, t, platform, out)
				if err != nil {
					if len(names) == 0 && !tools.Built(home, t) {
						fmt.Fprintf(w, "tools: %s %s not built here (no %s); skipped\n", t.Name, t.Version, filepath.Join(home, "tools", t.Key()))
						continue
					}
					return err
				}
				written++
				state := "bundled"
				if b.Unchanged {
					state = "already bundled"
				}
				files := "1 file"
				if b.Files != 1 {
					files = fmt.Sprintf("%d files", b.Files)
				}
				fmt.Fprintf(w, "tools: %s %s %s: %s (%s, %.1f MiB, %.1f MiB compressed)\n",
					state, t.Name, t.Version, b.Archive, files, float64(b.Bytes)/(1<<20), float64(b.Compressed)/(1<<20))
			}
			if written == 0 {
				return fmt.Errorf("no tool is built in %s for this checkout's recipes; run `make tools` first", home)
			}
			fmt.Fprintf(w, "tools: %d bundles for %s in %s; serve it (or copy it to your mirror) and set PADDOCK_TOOLS_MIRROR\n", written, platform, out)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the mirror directory to write into (bundles go to DIR/OS-ARCH/)")
	cmd.Flags().StringArrayVar(&names, "tool", nil, "bundle only this tool (repeatable; default every built tool)")
	return cmd
}

func newToolsFetchCmd() *cobra.Command {
	var mirror string
	cmd := &cobra.Command{
		Use:   "fetch NAME [INDEX/COUNT]",
		Short: "Install one tool from the mirror; exit 0 when fetched, 3 when it is to be built (or taken from the cache) instead",
		Long: "Used by `make tools` when PADDOCK_TOOLS_MIRROR is set. Exit 0: the tool was fetched, verified and installed.\n" +
			"Exit 3: nothing was installed (already built here, no mirror, no bundle for the key, or a bundle that failed a check; the line says which), build it.\n" +
			"Exit 1: an error such as an unreadable mirror setting.",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			of := ""
			if len(args) == 2 {
				of = args[1]
			}
			src, err := toolSource()
			if err != nil {
				return err
			}
			t, err := src.Tool(args[0])
			if err != nil {
				return err
			}
			if mirror == "" {
				return &exitError{code: exitBuildFromSource, err: errors.New("")}
			}
			m, err := tools.ParseMirror(mirror)
			if err != nil {
				return fmt.Errorf("PADDOCK_TOOLS_MIRROR: %w", err)
			}
			res := tools.Fetch(cmd.Context(), m, t, tools.FetchOptions{Home: paths.Home()})
			switch res.Outcome {
			case tools.Fetched:
				fmt.Fprintln(cmd.OutOrStdout(), res.Line(t, of))
				return nil
			case tools.Cached:
				// build-tool.sh says "(cached)" and links it.
			case tools.Refused:
				fmt.Fprintln(cmd.ErrOrStderr(), res.Line(t, of))
			default:
				fmt.Fprintln(cmd.OutOrStdout(), res.Line(t, of))
			}
			return &exitError{code: exitBuildFromSource, err: errors.New("")}
		},
	}
	cmd.Flags().StringVar(&mirror, "mirror", os.Getenv("PADDOCK_TOOLS_MIRROR"), "the mirror: http(s):// URL, file:// URL or directory (default $PADDOCK_TOOLS_MIRROR)")
	return cmd
}

func newToolsListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "Each tool of this checkout with the key a mirror serves it under, and whether it is built here",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			src, err := toolSource()
			if err != nil {
				return err
			}
			list, err := src.Tools()
			if err != nil {
				return err
			}
			home := paths.Home()
			for _, t := range list {
				state := "not built"
				if tools.Built(home, t) {
					state = "built"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%-18s %-40s %s\n", t.Name, tools.Platform()+"/"+t.Key(), state)
			}
			return nil
		},
	}
}
