package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/paddock-platform/paddock/render"
)

func newRenderCmd() *cobra.Command {
	var (
		f   specFlags
		out string
	)
	cmd := &cobra.Command{
		Use:   "render [SPEC]",
		Short: "Write the platform's objects as plain YAML for GitOps (the same objects `up` applies)",
		Long: "Without --out the objects go to stdout as one YAML stream. With --out DIR, one file per\n" +
			"concept plus a kustomization.yaml are written into DIR. No cluster is contacted.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := loadSpec(specArg(args), &f, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if out == "" {
				objs, err := render.All(p)
				if err != nil {
					return err
				}
				return render.WriteYAML(cmd.OutOrStdout(), objs)
			}
			files, err := render.ToDir(p, out)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "rendered %d files into %s\n", len(files), out)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&out, "out", "", "directory to write one file per concept and a kustomization.yaml into")
	return cmd
}
