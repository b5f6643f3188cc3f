package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddock-platform/paddock/internal/engine"
)

// newStateCmd groups the commands that repair a stack's state file.
func newStateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "state",
		Short: "List and restore the checkpoints a file backend keeps of a stack",
		Long: "The file backend keeps the previous checkpoint of each stack and one backup per\n" +
			"update. When the state file is corrupt, every operation stops before applying\n" +
			"anything and points here: `paddock state restore` puts the newest readable\n" +
			"checkpoint back (keeping the corrupt file), and the next `paddock up` refreshes\n" +
			"it against the cluster and adopts what the spec declares; objects made since the\n" +
			"checkpoint that the spec no longer declares show up in `paddock drift` (S05).",
	}
	cmd.AddCommand(newStateBackupsCmd(), newStateRestoreCmd())
	return cmd
}

// stackEngine resolves the stack name (from --stack or the spec) and an engine for it.
func stackEngine(cmd *cobra.Command, args []string, f *specFlags) (*engine.Engine, string, error) {
	stack := f.stack
	if stack == "" {
		p, err := loadSpec(specArg(args), f, cmd.ErrOrStderr())
		if err != nil {
			return nil, "", err
		}
		stack = p.Name
	}
	dir, _, err := f.stackMode()
	if err != nil {
		return nil, "", err
	}
	return engine.New(engine.Options{Backend: f.backend, Stack: stack, Out: cmd.OutOrStdout(), ProjectDir: dir}), stack, nil
}

func newStateBackupsCmd() *cobra.Command {
	var f specFlags
	cmd := &cobra.Command{
		Use:   "backups [SPEC]",
		Short: "List the stack's checkpoint backups, newest first",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			eng, stack, err := stackEngine(cmd, args, &f)
			if err != nil {
				return err
			}
			backups, err := eng.Backups(stack)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if len(backups) == 0 {
				fmt.Fprintf(out, "paddock state: stack %q has no checkpoint backups\n", stack)
				return nil
			}
			for _, b := range backups {
				what := fmt.Sprintf("%d resources", b.Resources)
				if b.Resources < 0 {
					what = "unreadable"
				}
				fmt.Fprintf(out, "%s  %-14s  %s\n", b.Time.Local().Format(time.RFC3339), what, b.File)
			}
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

func newStateRestoreCmd() *cobra.Command {
	var (
		f     specFlags
		force bool
	)
	cmd := &cobra.Command{
		Use:   "restore [SPEC]",
		Short: "Put the newest readable checkpoint back as the stack's state",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			eng, stack, err := stackEngine(cmd, args, &f)
			if err != nil {
				return err
			}
			b, kept, err := eng.RestoreState(stack, force)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "paddock state: stack %q restored from %s (%s, %d resources)\n", stack, b.File, b.Time.Local().Format(time.RFC3339), b.Resources)
			if kept != "" {
				fmt.Fprintf(out, "  the replaced state is kept as %s\n", kept)
			}
			fmt.Fprintf(out, "  run `paddock up` next: its refresh reconciles the restored state with the cluster\n")
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&force, "force", false, "restore even though the current state is readable (it forgets what was done since the backup)")
	return cmd
}
