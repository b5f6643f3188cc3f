package main

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sort"

	"github.com/spf13/cobra"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/pins"
)

// commit is the source revision this binary was built from, as `make build`
// links it in (model.LinkedRevision, the same value the gateway's image tag
// is made of). Without it, a `go build` in a git checkout still carries the
// revision Go stamps into the binary.
var commit = model.LinkedRevision()

// readBuildInfo is debug.ReadBuildInfo; tests replace it.
var readBuildInfo = debug.ReadBuildInfo

// buildCommit is the revision this binary was built from, "" when unknown.
func buildCommit() string {
	if commit != "" {
		return commit
	}
	return model.RevisionOf(readBuildInfo())
}

var errNoCommit = errors.New("this binary does not know the commit it was built from: build it with `make build`")

func newVersionCmd() *cobra.Command {
	var onlyCommit bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the commit this binary was built from and the pinned upstream versions it provisions and runs",
		Long: "The first line is the commit of Paddock itself (\"unknown\" for a binary built without it);\n" +
			"--commit prints only that, and fails when it is unknown (benchmarks record it).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c := buildCommit()
			if onlyCommit {
				if c == "" {
					return errNoCommit
				}
				fmt.Fprintln(cmd.OutOrStdout(), c)
				return nil
			}
			if c == "" {
				c = "unknown"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%-36s %s\n", "paddock", c)
			all := pins.All()
			keys := make([]string, 0, len(all))
			for k := range all {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				fmt.Fprintf(cmd.OutOrStdout(), "%-36s %s\n", k, all[k])
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&onlyCommit, "commit", false, "print only the commit this binary was built from; fail when it is unknown")
	return cmd
}
