package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/paddock-platform/paddock/internal/localcluster"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/paths"
	"github.com/paddock-platform/paddock/internal/pools"
	"github.com/paddock-platform/paddock/internal/termtext"
)

func newStatusCmd() *cobra.Command {
	var (
		f      specFlags
		raw    bool
		format string
	)
	cmd := &cobra.Command{
		Use:   "status [SPEC]",
		Short: "Show what the platform's last successful update made, and how to look at it",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "text" && format != "json" {
				return fmt.Errorf("--format %q: use text or json", format)
			}
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
			if format == "json" {
				doc := statusDoc(p, outs, readPoolHealth(cmd.Context(), p), time.Now())
				if a := readAlerts(cmd.Context(), p); a.URL != "" {
					doc.Alerts = &a
				}
				return writeStatusJSON(out, doc)
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
			printPoolHealth(out, readPoolHealth(cmd.Context(), p), time.Now())
			printAlerts(out, readAlerts(cmd.Context(), p))
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&raw, "outputs", false, "print the stack's raw outputs instead of the summary")
	cmd.Flags().StringVar(&format, "format", "text", "output: text, or json (the stack's outputs and each warm pool's sandboxes)")
	return cmd
}

// commandLines lays a shell command out after indent within the terminal's
// width, continuing a long one on further lines with a backslash, so it
// still pastes as one command. A single word longer than a line is left
// whole: a command cut inside a word would not run.
func commandLines(indent, command string) string {
	var b strings.Builder
	line := indent
	for i, word := range strings.Fields(command) {
		if i > 0 && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word)+2 > termtext.Width {
			b.WriteString(line + " \\\n")
			line = indent + "    " + word
			continue
		}
		if i > 0 {
			line += " "
		}
		line += word
	}
	b.WriteString(line + "\n")
	return b.String()
}

// printSummary tells a person what the platform consists of and the commands
// that look at it, so the end of `make demo` is a starting point, not a wall of
// progress lines.
func printSummary(out io.Writer, p *model.Platform, spec string, sandbox *sandboxPod) {
	fmt.Fprint(out, termtext.Wrap(fmt.Sprintf("platform %q on target %s: Agent Sandbox %s, %d tenant(s)", p.Name, p.Target.Kind, p.AgentSandbox.Version, len(p.Tenants)), "", "  "))
	for _, t := range p.Tenants {
		fmt.Fprint(out, termtext.Wrap(fmt.Sprintf("tenant %-12s namespace %s (Pod Security %s, default-deny egress, DNS only)", t.Name, t.Namespace, podSecurityLevel(t)), "  ", "      "))
		for _, tpl := range t.Templates {
			fmt.Fprint(out, termtext.Wrap(fmt.Sprintf("template  %-12s image %s, runtime class %s", tpl.Name, tpl.Image, tpl.RuntimeClass), "    ", "        "))
		}
		for _, wp := range t.WarmPools {
			fmt.Fprint(out, termtext.Wrap(fmt.Sprintf("warm pool %-12s %d x %s", wp.Name, wp.Replicas, wp.Template), "    ", "        "))
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
	fmt.Fprint(out, commandLines("  ", "kubectl get sandboxtemplates,sandboxwarmpools,sandboxes,pods "+ns))
	if sandbox != nil {
		fmt.Fprintf(out, "  # a running sandbox; inside, try: dmesg | head -3; id; touch /x\n")
		fmt.Fprint(out, commandLines("  ", fmt.Sprintf("kubectl exec -it -n %s %s -c %s -- sh", sandbox.Namespace, sandbox.Name, sandbox.Container)))
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

// poolHealth is what status reads of the platform's warm pools on the
// cluster: each declared pool, or why they could not be read.
type poolHealth struct {
	Pools []pools.Pool
	// Missing are the declared pools the cluster does not have.
	Missing []string
	Err     error
}

// readPoolHealth reads the platform's warm pools live (pools.Read), in one
// namespace when only one has pools.
func readPoolHealth(ctx context.Context, p *model.Platform) poolHealth {
	declared := map[string]bool{}
	var keys []string
	namespaces := map[string]bool{}
	for _, t := range p.Tenants {
		for _, wp := range t.WarmPools {
			k := t.Namespace + "/" + wp.Name
			declared[k] = true
			keys = append(keys, k)
			namespaces[t.Namespace] = true
		}
	}
	if len(keys) == 0 {
		return poolHealth{}
	}
	q := *p
	if q.Target.Kind == model.TargetLocal {
		q.Target.Kubeconfig = localcluster.New(localcluster.Options{}).Where().Kubeconfig
	}
	if q.Target.Kubeconfig == "" {
		return poolHealth{Err: fmt.Errorf("the target has no kubeconfig")}
	}
	cfg, err := restConfig(&q, 50)
	if err != nil {
		return poolHealth{Err: err}
	}
	cfg.Timeout = 10 * time.Second
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return poolHealth{Err: err}
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return poolHealth{Err: err}
	}
	ns := ""
	if len(namespaces) == 1 {
		ns = strings.SplitN(keys[0], "/", 2)[0]
	}
	live, err := pools.Read(ctx, pools.Clients{Dyn: dyn, Kube: kube}, ns)
	if err != nil {
		return poolHealth{Err: err}
	}
	h := poolHealth{}
	found := map[string]bool{}
	for _, lp := range live {
		if declared[lp.Key()] {
			h.Pools = append(h.Pools, lp)
			found[lp.Key()] = true
		}
	}
	for _, k := range keys {
		if !found[k] {
			h.Missing = append(h.Missing, k)
		}
	}
	return h
}

// printPoolHealth is the summary's section on the warm pools as they are
// now: per pool desired, ready, stale, claimed and its oldest sandbox's age.
func printPoolHealth(out io.Writer, h poolHealth, now time.Time) {
	if h.Err == nil && len(h.Pools) == 0 && len(h.Missing) == 0 {
		return
	}
	fmt.Fprint(out, "\n"+termtext.Wrap("warm pools now (ready counts unclaimed sandboxes of the current template, stale those of an older one):", "", ""))
	if h.Err != nil {
		fmt.Fprintf(out, "  not read: %v\n", h.Err)
		return
	}
	rows := [][]string{{"  POOL", "STRATEGY", "DESIRED", "READY", "STALE", "CLAIMED", "OLDEST"}}
	for _, lp := range h.Pools {
		oldest := "-"
		if !lp.Oldest.IsZero() {
			oldest = lp.OldestAge(now).Round(time.Second).String()
		}
		rows = append(rows, []string{"  " + lp.Key(), lp.UpdateStrategy, fmt.Sprint(lp.Desired), fmt.Sprint(lp.Ready), fmt.Sprint(lp.Stale), fmt.Sprint(lp.Claimed), oldest})
	}
	fmt.Fprint(out, termtext.Table(rows))
	for _, lp := range h.Pools {
		switch {
		case lp.Problem != "":
			fmt.Fprint(out, termtext.Wrap(lp.Key()+": "+lp.Problem, "  ", "    "))
		case lp.Stale > 0:
			fmt.Fprint(out, termtext.Wrap(lp.Key()+" holds sandboxes of an older template: "+strings.Join(lp.StaleNames(), ", "), "  ", "    "))
		}
	}
	for _, k := range h.Missing {
		fmt.Fprintf(out, "  %s: not on the cluster\n", k)
	}
}

// statusJSON is `status --format json`.
type statusJSON struct {
	Platform string         `json:"platform"`
	Target   string         `json:"target"`
	Outputs  map[string]any `json:"outputs"`
	// WarmPools are the platform's pools as they are now; warmPoolsError
	// says why they could not be read.
	WarmPools      []poolJSON `json:"warmPools"`
	MissingPools   []string   `json:"missingWarmPools,omitempty"`
	WarmPoolsError string     `json:"warmPoolsError,omitempty"`
	// Alerts are the platform's alerts in the local Prometheus (`paddock
	// local up --observability`); absent when none runs.
	Alerts *alertsJSON `json:"alerts,omitempty"`
}

// alertsJSON is what the local Prometheus holds of this platform's alerts.
type alertsJSON struct {
	URL     string               `json:"prometheus"`
	Firing  []localcluster.Alert `json:"firing"`
	Pending []localcluster.Alert `json:"pending"`
	Error   string               `json:"error,omitempty"`
}

// readAlerts asks the local cluster's Prometheus, when it runs, for the
// alerts labelled with this platform (every Paddock rule carries
// platform=<name>). Other targets: nothing (their Prometheus is the
// operator's, which status does not know).
func readAlerts(ctx context.Context, p *model.Platform) alertsJSON {
	if p.Target.Kind != model.TargetLocal {
		return alertsJSON{}
	}
	url, ok := localcluster.PrometheusURL(paths.LocalDir())
	if !ok {
		return alertsJSON{}
	}
	a := alertsJSON{URL: url, Firing: []localcluster.Alert{}, Pending: []localcluster.Alert{}}
	all, err := localcluster.Alerts(ctx, url)
	if err != nil {
		a.Error = err.Error()
		return a
	}
	for _, al := range all {
		if al.Labels["platform"] != p.Name {
			continue
		}
		if al.State == "firing" {
			a.Firing = append(a.Firing, al)
		} else {
			a.Pending = append(a.Pending, al)
		}
	}
	byName := func(s []localcluster.Alert) {
		sort.Slice(s, func(i, j int) bool {
			if s[i].Labels["alertname"] != s[j].Labels["alertname"] {
				return s[i].Labels["alertname"] < s[j].Labels["alertname"]
			}
			return s[i].Labels["namespace"] < s[j].Labels["namespace"]
		})
	}
	byName(a.Firing)
	byName(a.Pending)
	return a
}

// printAlerts is the summary's section on the platform's alerts, when the
// local Prometheus runs.
func printAlerts(out io.Writer, a alertsJSON) {
	if a.URL == "" {
		return
	}
	fmt.Fprintf(out, "\nalerts (local Prometheus %s):\n", a.URL)
	if a.Error != "" {
		fmt.Fprintf(out, "  not read: %s\n", a.Error)
		return
	}
	if len(a.Firing) == 0 {
		fmt.Fprintln(out, "  none firing")
	}
	rows := [][]string{{"  ALERT", "SEVERITY", "WHERE", "SINCE", "SUMMARY"}}
	for _, al := range a.Firing {
		where := al.Labels["namespace"]
		if where == "" {
			where = "-"
		}
		rows = append(rows, []string{"  " + al.Labels["alertname"], al.Labels["severity"], where, al.ActiveAt.Local().Format("15:04:05"), al.Annotations["summary"]})
	}
	if len(rows) > 1 {
		fmt.Fprint(out, termtext.Table(rows))
	}
	if len(a.Pending) > 0 {
		var names []string
		for _, al := range a.Pending {
			names = append(names, al.Labels["alertname"])
		}
		fmt.Fprint(out, termtext.Wrap(fmt.Sprintf("pending (condition true, waiting out its for:): %s", strings.Join(names, ", ")), "  ", "    "))
	}
}

type poolJSON struct {
	pools.Pool
	OldestAgeSeconds int64 `json:"oldestAgeSeconds"`
}

// statusDoc is the JSON document of the platform's outputs and its warm
// pools as h read them at now.
func statusDoc(p *model.Platform, outs map[string]any, h poolHealth, now time.Time) statusJSON {
	doc := statusJSON{Platform: p.Name, Target: string(p.Target.Kind), Outputs: outs, WarmPools: []poolJSON{}, MissingPools: h.Missing}
	if h.Err != nil {
		doc.WarmPoolsError = h.Err.Error()
	}
	for _, lp := range h.Pools {
		if lp.Sandboxes == nil {
			lp.Sandboxes = []pools.Sandbox{}
		}
		doc.WarmPools = append(doc.WarmPools, poolJSON{Pool: lp, OldestAgeSeconds: int64(lp.OldestAge(now).Seconds())})
	}
	return doc
}

func writeStatusJSON(out io.Writer, doc statusJSON) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
