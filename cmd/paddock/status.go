package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/paddock-platform/paddock/localcluster"
	"github.com/paddock-platform/paddock/model"
)

func newStatusCmd() *cobra.Command {
	var (
		f   specFlags
		raw bool
	)
	cmd := &cobra.Command{
		Use:   "status [SPEC]",
		Short: "Show what the platform's last successful update made, and how to look at it",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := f.load(cmd.Context(), args, cmd.OutOrStdout(), cmd.ErrOrStderr(), false, false)
			if err != nil {
				return err
			}
			p := l.p
			out := cmd.OutOrStdout()
			outs, err := l.eng.Outputs(cmd.Context(), p)
			if err != nil {
				return err
			}
			if len(outs) == 0 {
				fmt.Fprintf(out, "stack of platform %q has no outputs: run `paddock up`\n", p.Name)
				return nil
			}
			if raw {
				printOutputs(out, outs)
				return nil
			}
			specArg := "."
			if len(args) == 1 {
				specArg = args[0]
			}
			printSummary(out, p, specArg, runningSandbox(cmd.Context(), p))
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&raw, "outputs", false, "print the stack's raw outputs instead of the summary")
	return cmd
}

// printSummary tells a person what the platform consists of and the commands
// that look at it, so the end of `make demo` is a starting point, not a wall of
// progress lines.
func printSummary(out io.Writer, p *model.Platform, spec string, sandbox *sandboxPod) {
	fmt.Fprintf(out, "platform %q on target %s: Agent Sandbox %s, %d tenant(s)\n", p.Name, p.Target.Kind, p.AgentSandbox.Version, len(p.Tenants))
	for _, t := range p.Tenants {
		fmt.Fprintf(out, "  tenant %-12s namespace %s (Pod Security %s, default-deny egress, DNS only)\n", t.Name, t.Namespace, podSecurityLevel(t))
		for _, tpl := range t.Templates {
			fmt.Fprintf(out, "    template  %-12s image %s, runtime class %s\n", tpl.Name, tpl.Image, tpl.RuntimeClass)
		}
		for _, wp := range t.WarmPools {
			fmt.Fprintf(out, "    warm pool %-12s %d x %s\n", wp.Name, wp.Replicas, wp.Template)
		}
	}
	fmt.Fprintln(out, "\nlook at it:")
	kubeconfig := p.Target.Kubeconfig
	if p.Target.Kind == model.TargetLocal {
		kubeconfig = localcluster.New(localcluster.Options{}).Where().Kubeconfig
	}
	if kubeconfig != "" {
		fmt.Fprintf(out, "  export KUBECONFIG=%s\n", kubeconfig)
	}
	ns := "-A"
	if len(p.Tenants) > 0 {
		ns = "-n " + p.Tenants[0].Namespace
	}
	fmt.Fprintf(out, "  kubectl get sandboxtemplates,sandboxwarmpools,sandboxes,pods %s\n", ns)
	if sandbox != nil {
		fmt.Fprintf(out, "  kubectl exec -it -n %s %s -c %s -- sh    # a running sandbox; inside, try: dmesg | head -3; id; touch /x\n", sandbox.Namespace, sandbox.Name, sandbox.Container)
	}
	fmt.Fprintf(out, "  paddock verify %s     # each control live: pass, fail, or not verifiable here\n", spec)
	fmt.Fprintf(out, "  paddock drift %s      # what changed on the cluster since the last up\n", spec)
	fmt.Fprintf(out, "  paddock status %s --outputs\n", spec)
	if p.Target.Kind == model.TargetLocal {
		fmt.Fprintln(out, "  paddock local status    # the local cluster's processes and health")
	}
	fmt.Fprintln(out, "clean up:")
	fmt.Fprintf(out, "  paddock destroy %s\n", spec)
	if p.Target.Kind == model.TargetLocal {
		fmt.Fprintln(out, "  paddock local down")
	}
}

func podSecurityLevel(t model.Tenant) string {
	if strings.TrimSpace(t.PodSecurity) == "" {
		return "restricted"
	}
	return t.PodSecurity
}

// sandboxPod is a running sandbox's pod and its agent container.
type sandboxPod struct{ Namespace, Name, Container string }

// runningSandbox finds a running sandbox pod of the first tenant, for the
// summary's exec hint; nil when there is none or the cluster cannot be read
// (the summary then leaves the hint out).
func runningSandbox(ctx context.Context, p *model.Platform) *sandboxPod {
	if len(p.Tenants) == 0 {
		return nil
	}
	q := *p
	if q.Target.Kind == model.TargetLocal {
		q.Target.Kubeconfig = localcluster.New(localcluster.Options{}).Where().Kubeconfig
	}
	if q.Target.Kubeconfig == "" {
		return nil
	}
	cfg, err := restConfig(&q, 0)
	if err != nil {
		return nil
	}
	cfg.Timeout = 5 * time.Second
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil
	}
	ns := p.Tenants[0].Namespace
	// The Agent Sandbox controller labels each sandbox's pod with this key.
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "agents.x-k8s.io/sandbox-name-hash"})
	if err != nil {
		return nil
	}
	for _, pod := range pods.Items {
		if pod.Status.Phase == corev1.PodRunning && pod.DeletionTimestamp == nil && len(pod.Spec.Containers) > 0 {
			return &sandboxPod{Namespace: ns, Name: pod.Name, Container: pod.Spec.Containers[0].Name}
		}
	}
	return nil
}
