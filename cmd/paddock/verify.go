package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/paddock-platform/paddock/localcluster"
	"github.com/paddock-platform/paddock/model"
	"github.com/paddock-platform/paddock/verify"
)

func newVerifyCmd() *cobra.Command {
	var (
		f          specFlags
		format     string
		noProbes   bool
		probeImage string
	)
	cmd := &cobra.Command{
		Use:   "verify [SPEC]",
		Short: "Check the deployed platform's controls live on the cluster",
		Long: "Each check passes, fails, or is reported not verifiable here with the reason.\n" +
			"Admission probes are dry-runs or reviews. The runtime checks start two short-lived\n" +
			"probe pods per tenant (labelled paddock.dev/probe, deleted afterwards) that send\n" +
			"traffic only to each other and to the cluster resolver, and exec into one ready\n" +
			"sandbox per warm pool; --no-probes skips them.\n" +
			"Exit status: 0 when nothing failed, 1 when a check failed, 2 when verify could not run.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			l, err := f.load(ctx, args, cmd.OutOrStdout(), cmd.ErrOrStderr(), false, true)
			if err != nil {
				var ee *exitError
				if errors.As(err, &ee) {
					return err // the spec does not load or policy blocks it
				}
				return &exitError{code: 2, err: err}
			}
			p := l.p
			cfg, err := restConfig(p, 0)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			opts := verify.Options{NoProbes: noProbes, ProbeImage: probeImage}
			if p.Target.Kind == model.TargetLocal {
				opts.ControllerHealth = localControllerHealth
				// Nothing is pulled on the local stack: its node's own image,
				// and the name its resolver answers.
				if opts.ProbeImage == "" {
					opts.ProbeImage = localcluster.SandboxImage
				}
				opts.DNSProbeName = localcluster.DNSProbeName
			}
			v, err := verify.New(p, cfg, opts)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			rep := v.Run(ctx)
			switch format {
			case "json":
				err = rep.WriteJSON(cmd.OutOrStdout())
			case "text":
				err = rep.WriteText(cmd.OutOrStdout())
			default:
				return &exitError{code: 2, err: fmt.Errorf("--format %q: use text or json", format)}
			}
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			if n := rep.Failed(); n > 0 {
				return &exitError{code: 1, err: fmt.Errorf("%d check(s) failed", n)}
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&format, "format", "text", "output: text or json")
	cmd.Flags().BoolVar(&noProbes, "no-probes", false, "skip the runtime checks (V10 network probe pods, V12 exec into a sandbox)")
	cmd.Flags().StringVar(&probeImage, "probe-image", "", "image of the network probe pods (needs sh, nc, nslookup, sleep); default "+verify.DefaultProbeImage+", or the local node's busybox image on target local")
	return cmd
}

// localControllerHealth reads the out-of-cluster controller's state from the
// local cluster's supervisor.
func localControllerHealth(ctx context.Context) (bool, string) {
	st, err := localcluster.New(localcluster.Options{}).Status(ctx)
	if err != nil {
		return false, err.Error()
	}
	for _, c := range st.Components {
		if c.Name == "agent-sandbox-controller" {
			if c.State == localcluster.Running {
				return true, fmt.Sprintf("out-of-cluster controller running (pid %d)", c.PID)
			}
			d := string(c.State)
			if c.Detail != "" {
				d += ": " + c.Detail
			}
			return false, "out-of-cluster controller " + d
		}
	}
	return false, "no agent-sandbox-controller in the local cluster"
}
