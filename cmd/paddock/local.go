package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/paddock-platform/paddock/internal/localcluster"
	"github.com/paddock-platform/paddock/internal/paths"
	"github.com/paddock-platform/paddock/internal/termtext"
)

// localFlags are shared by every `paddock local` subcommand.
type localFlags struct {
	name    string
	dir     string
	timeout time.Duration
	output  string
	nodes   string
	// observability is set only when --observability was given.
	observability *bool
}

func (f *localFlags) cluster(out io.Writer) localcluster.Cluster {
	return localcluster.New(localcluster.Options{Name: f.name, Dir: f.dir, Out: out, Timeout: f.timeout, Nodes: f.nodes, Observability: f.observability})
}

// newLocalCmd is `paddock local`: the embedded local cluster.
func newLocalCmd() *cobra.Command {
	f := &localFlags{}
	cmd := &cobra.Command{
		Use:   "local",
		Short: "Run the embedded local cluster (control plane, a real or kwok node, Agent Sandbox controller)",
		Long: `The local cluster is Paddock's default target: a real Kubernetes control plane
(etcd, kube-apiserver, kube-controller-manager, kube-scheduler) that paddock starts
from the pinned builds of ` + "`make tools`" + `, on loopback only (etcd admits only
the cluster's certificates), one node labelled and tainted like a GKE
Sandbox (gVisor) node, and the real Agent Sandbox controller, which starts once
` + "`paddock up`" + ` has installed its CRDs. Nothing is downloaded.

The node is real where the machine allows it (Linux, root, cgroups, overlayfs,
the pinned tools and ` + "`make node-packages`" + `): kubelet, containerd, gVisor's runsc
(RuntimeClass handler "gvisor") and runc, with the pinned Cilium agent as its
dataplane: CNI, Service proxy, and enforcer of NetworkPolicy and
CiliumNetworkPolicy, toFQDNs rules included. Elsewhere it is a kwok node, on
which pods are scheduled but no container runs (it needs ` + "`make tool-kwok`" + `);
` + "`local up`" + ` says why.`,
		SilenceUsage: true,
	}
	cmd.PersistentFlags().StringVar(&f.name, "name", localcluster.DefaultName, "local cluster name")
	cmd.PersistentFlags().StringVar(&f.dir, "dir", "", "the cluster's directory (default $PADDOCK_HOME/local: "+paths.LocalDir()+")")

	var obs bool
	up := &cobra.Command{
		SilenceUsage: true,
		Use:          "up",
		Short:        "Start the local cluster (harmless when it is already up)",
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("observability") {
				f.observability = &obs
			}
			info, err := f.cluster(cmd.ErrOrStderr()).Up(cmd.Context())
			if err != nil {
				return err
			}
			if f.output == "json" {
				return writeLocalJSON(cmd.OutOrStdout(), info)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "\nUse it with:\n  export KUBECONFIG=%s\n  kubectl --context %s get nodes\n", info.Kubeconfig, info.Context)
			if url, ok := localcluster.PrometheusURL(info.Dir); ok {
				fmt.Fprintf(cmd.OutOrStdout(), "  curl %s/api/v1/alerts    # Paddock's alerts, evaluated by the local Prometheus\n", url)
			}
			return nil
		},
	}
	up.Flags().DurationVar(&f.timeout, "timeout", 2*time.Minute, "how long to wait for the API server and the node")
	up.Flags().StringVarP(&f.output, "output", "o", "text", "output format: text or json")
	up.Flags().BoolVar(&obs, "observability", false, "run kube-state-metrics and Prometheus on loopback beside the controller, scraping it, kube-state-metrics and the Cilium agent and evaluating the cluster's PrometheusRules (Paddock's alerts); installs minimal monitoring.coreos.com CRDs so a spec's observability block applies here. Applies to a running cluster too; --observability=false stops them (needs `make tools-test`)")
	up.Flags().StringVar(&f.nodes, "nodes", "", "node kind of a new cluster: real (kubelet + containerd + gVisor; an error where the machine cannot run it) or fake (kwok, nothing runs); default real where the machine allows it, else fake saying why")

	down := &cobra.Command{
		SilenceUsage: true,
		Use:          "down",
		Short:        "Stop the local cluster and remove its state",
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.cluster(cmd.ErrOrStderr()).Down(cmd.Context())
		},
	}

	status := &cobra.Command{
		SilenceUsage: true,
		Use:          "status",
		Short:        "Show every component of the local cluster (exit status 1 when something is crashed or unhealthy)",
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := f.cluster(io.Discard).Status(cmd.Context())
			if err != nil {
				return err
			}
			switch f.output {
			case "json":
				if err := writeLocalJSON(cmd.OutOrStdout(), struct {
					*localcluster.Status
					Healthy  bool     `json:"healthy"`
					Problems []string `json:"problems,omitempty"`
				}{s, s.Healthy(), localProblems(s)}); err != nil {
					return err
				}
			case "text", "":
				printLocalStatus(cmd.OutOrStdout(), s)
			default:
				return fmt.Errorf("unknown --output %q: use text or json", f.output)
			}
			if !s.Healthy() {
				if f.output == "json" {
					return errors.New("local cluster " + s.Name + ": " + strings.Join(s.Problems(), "; "))
				}
				return fmt.Errorf("local cluster %s is not healthy (see above)", s.Name)
			}
			return nil
		},
	}
	status.Flags().StringVarP(&f.output, "output", "o", "text", "output format: text or json")

	supervise := &cobra.Command{
		SilenceUsage: true,
		Use:          "supervise",
		Short:        "Run the Agent Sandbox controller for a local cluster (started by `paddock local up`)",
		Hidden:       true,
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir := f.dir
			if dir == "" {
				dir = paths.LocalDir()
			}
			return localcluster.Supervise(cmd.Context(), dir)
		},
	}

	cmd.AddCommand(up, down, status, supervise)
	return cmd
}

func localProblems(s *localcluster.Status) []string {
	if s.Healthy() {
		return nil
	}
	return s.Problems()
}

func writeLocalJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// localField prints one labelled line of the local status, its text wrapped
// under itself within the terminal's width.
func localField(w io.Writer, label, text string) {
	fmt.Fprint(w, termtext.Wrap(text, fmt.Sprintf("  %-10s  ", label), strings.Repeat(" ", 14)))
}

// printLocalStatus renders the status as a table a person can read at a glance.
func printLocalStatus(w io.Writer, s *localcluster.Status) {
	if !s.Exists {
		fmt.Fprintf(w, "No local cluster %q in %s. Start one with `paddock local up`.\n", s.Name, s.Dir)
		return
	}
	api := "ready"
	if !s.APIServer.Ready {
		api = "NOT READY: " + s.APIServer.Detail
	}
	fmt.Fprint(w, termtext.Wrap(fmt.Sprintf("Local cluster %q (%s)", s.Name, s.Dir), "", "  "))
	if s.Retired != "" {
		localField(w, "NOTE", s.Retired)
	}
	if !s.Complete {
		localField(w, "NOTE", "its creation did not finish; `paddock local up` starts over")
	}
	localField(w, "API server", s.APIServer.URL+"  "+api)
	localField(w, "kubeconfig", fmt.Sprintf("%s (context %s)", s.Kubeconfig, s.Context))
	for _, n := range s.Nodes {
		ready := "Ready"
		if !n.Ready {
			ready = "NotReady"
		}
		kind := "kwok: no container runs"
		if n.Real {
			kind = "real: kubelet, containerd, gVisor"
		}
		localField(w, "node", fmt.Sprintf("%s  %s  (%s)", n.Name, ready, kind))
		if n.Real {
			localField(w, "images", strings.Join(n.Images, ", "))
		}
	}
	fmt.Fprintln(w)
	rows := [][]string{{"COMPONENT", "STATE", "PID", "DETAIL"}}
	for _, c := range s.Components {
		pid := "-"
		if c.PID != 0 {
			pid = fmt.Sprint(c.PID)
		}
		state := string(c.State)
		if c.State == localcluster.Crashed || c.State == localcluster.Unhealthy {
			state = strings.ToUpper(state)
		}
		rows = append(rows, []string{c.Name, state, pid, c.Detail})
	}
	fmt.Fprint(w, termtext.Table(rows))
	if !s.Healthy() {
		fmt.Fprintln(w, "\nLogs:")
		for _, c := range s.Components {
			switch c.State {
			case localcluster.Running, localcluster.Waiting, localcluster.Starting:
			default:
				fmt.Fprintf(w, "  %-26s %s\n", c.Name, c.Log)
			}
		}
		if s.Retired == "" {
			fmt.Fprintln(w, "`paddock local up` restarts what crashed.")
		}
	} else {
		fmt.Fprintf(w, "\nLogs: %s\n", s.LogsDir)
		fmt.Fprintf(w, "API audit log: %s\n", s.AuditLog)
	}
}
