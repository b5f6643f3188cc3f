package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/localcluster"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/verify"
)

func newVerifyCmd() *cobra.Command {
	var (
		f              specFlags
		format         string
		noProbes       bool
		strict         bool
		probeImage     string
		fqdnProbeHosts []string
		only           []string
	)
	cmd := &cobra.Command{
		Use:   "verify [SPEC]",
		Short: "Check the deployed platform's controls live on the cluster",
		Long: "Each check passes, fails, or is reported not verifiable here with the reason.\n" +
			"Admission probes are dry-runs or reviews. The network probe (V10) creates a namespace\n" +
			"of its own with no NetworkPolicy (paddock-verify-control-<random>, labelled\n" +
			"paddock.dev/verify-probe=control) holding a control target and client, and a target\n" +
			"and a client in each tenant namespace (labelled paddock.dev/probe); all are deleted\n" +
			"afterwards. It sends traffic only to those pods, the cluster resolver and the hosts below: each\n" +
			"tenant's egress to the control target and ingress from the control client, pod to pod\n" +
			"within the tenant and from every tenant to every other must be refused, while the\n" +
			"control client reaches the control target (else the refusals prove nothing and the\n" +
			"check is not verifiable); a probe that did not run is never counted as a refusal.\n" +
			"A tenant with an FQDN allow-list is also shown with traffic to --fqdn-probe-host names\n" +
			"only: a listed name reached on 443, an unlisted host and its lookup refused, each while\n" +
			"the control client reaches it.\n" +
			"V12 execs into every ready sandbox of each warm pool. --no-probes skips both.\n" +
			"V13 makes a dry-run claim (paddock-verify-audit-<random>) as each tenant's orchestrator,\n" +
			"impersonated, and finds the API server's record of it in the audit log: on target local\n" +
			"only, where verify can read the log; elsewhere it is not verifiable here.\n" +
			"V14 fails on whatever drift's sweep finds outside the stack that weakens the platform\n" +
			"(every rule but S02, which is V09's): see `paddock drift --help`.\n" +
			"V15 fails on every object of the stack that drift's comparison finds changed, whole.\n" +
			"V16, for each tenant with an egress gateway, execs into a ready sandbox and asks the\n" +
			"gateway (its Service's address as the HTTP proxy, with curl or nc) for an unlisted\n" +
			"host (paddock-verify-unlisted.invalid) and an IP literal (192.0.2.1, which the gateway\n" +
			"never dials): both must carry the gateway's refusal header; and for each destination,\n" +
			"which must be answered\n" +
			"through it (one GET / with the key injected). It connects to each destination directly\n" +
			"(nc or curl), which must fail, and reads every process environment in the sandbox, which must\n" +
			"hold none of the gateway's keys (read from their Secrets by verify, never printed).\n" +
			"--check V16 runs that check alone; --no-probes skips it.\n" +
			"Exit status: 0 when nothing failed, 1 when a check failed (with --strict, also when a\n" +
			"check is not verifiable here), 2 when verify could not run.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			// The engine speaks only for V15, on stderr: stdout is the report (JSON too).
			l, err := f.load(ctx, args, cmd.ErrOrStderr(), cmd.ErrOrStderr(), false, true)
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
			opts := verify.Options{NoProbes: noProbes, ProbeImage: probeImage, Strict: strict, FQDNProbeHosts: fqdnProbeHosts, Only: only}
			opts.StackDrift = func(ctx context.Context) (*drift.Report, error) { return l.eng.Drift(ctx, l.p) }
			if p.Target.Kind == model.TargetLocal {
				opts.ControllerHealth = localControllerHealth
				// Nothing is pulled on the local stack: its node's own image,
				// and the name its resolver answers.
				if opts.ProbeImage == "" {
					opts.ProbeImage = localcluster.SandboxImage
				}
				opts.DNSProbeName = localcluster.DNSProbeName
				// The local API server's audit log, which V13 reads.
				opts.AuditLogPath = localcluster.New(localcluster.Options{}).Where().AuditLog
				if len(opts.FQDNProbeHosts) == 0 {
					opts.FQDNProbeHosts = localcluster.WorldHostNames()
				}
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
			return verifyExit(rep)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&format, "format", "text", "output: text or json")
	cmd.Flags().BoolVar(&noProbes, "no-probes", false, "skip the runtime checks (V10 network probe pods, V12 and V16 exec into a sandbox)")
	cmd.Flags().StringSliceVar(&only, "check", nil, "run only these checks (repeat or comma-separate IDs, e.g. --check V08,V16); default: every check")
	cmd.Flags().BoolVar(&strict, "strict", false, "count a check that is not verifiable here as failed (exit 1), for CI")
	cmd.Flags().StringSliceVar(&fqdnProbeHosts, "fqdn-probe-host", nil, "a host name V10 may connect to on port 443 and look up from probe pods, to show each tenant's FQDN allow-list (give one the list names and one it does not; repeat or comma-separate); default on target local: the local stack's world hosts")
	cmd.Flags().StringVar(&probeImage, "probe-image", "", "image of the network probe pods (needs sh, nc, nslookup, sleep); default "+verify.DefaultProbeImage+", or the local node's busybox image on target local")
	return cmd
}

// verifyExit is the command's outcome for a report: exit 1 when a check
// failed, or under --strict when one is not verifiable here.
func verifyExit(rep *verify.Report) error {
	if rep.Failing() == 0 {
		return nil
	}
	if n := rep.Count(verify.NotVerifiable); rep.Strict && n > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d check(s) failed, %d not verifiable here (--strict counts them as failed)", rep.Failed(), n)}
	}
	return &exitError{code: 1, err: fmt.Errorf("%d check(s) failed", rep.Failed())}
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
