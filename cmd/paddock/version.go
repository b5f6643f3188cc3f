package main

import (
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"github.com/paddock-platform/paddock/pins"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the pinned upstream versions this build provisions and runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
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
}
