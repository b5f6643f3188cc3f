// Package verify checks a deployed platform against its model on the live cluster
// (client-go only). It writes nothing of the platform: admission probes are
// dry-runs or reviews, and the runtime checks (runtime.go, network.go) start
// their own labelled probe pods and a control namespace of their own, delete
// them, and read sandboxes with exec. Each check passes, fails, or says
// plainly that it cannot be verified on this cluster and why: an unenforced
// control is never reported as passing.
package verify

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/termtext"
)

// Status is a check's outcome.
type Status string

const (
	Pass          Status = "pass"
	Fail          Status = "fail"
	NotVerifiable Status = "not-verifiable-here"
)

// Result is one check against one subject (a tenant, a pool, the cluster).
type Result struct {
	ID      string `json:"id"`
	Title   string `json:"title"`
	Subject string `json:"subject"`
	Status  Status `json:"status"`
	Reason  string `json:"reason"`
}

// Report is every result of one run.
type Report struct {
	Platform string        `json:"platform"`
	Target   string        `json:"target"`
	Results  []Result      `json:"results"`
	Duration time.Duration `json:"durationNanos"`
	// Strict: a check that is not verifiable here counts as failed.
	Strict bool `json:"strict,omitempty"`
}

// Failed counts failing checks.
func (r *Report) Failed() int {
	n := 0
	for _, c := range r.Results {
		if c.Status == Fail {
			n++
		}
	}
	return n
}

// Failing counts the results that make the run fail: failures, and under
// Strict the checks not verifiable here too.
func (r *Report) Failing() int {
	n := r.Failed()
	if r.Strict {
		n += r.Count(NotVerifiable)
	}
	return n
}

// Count returns how many results have status s.
func (r *Report) Count(s Status) int {
	n := 0
	for _, c := range r.Results {
		if c.Status == s {
			n++
		}
	}
	return n
}

// WriteText renders the report for people: each check's title once, then a
// line per subject with its status, and the reason on indented lines below,
// every line at most termtext.Width columns.
func (r *Report) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	last := ""
	for _, c := range r.Results {
		if c.ID != last {
			if last != "" {
				bw.WriteString("\n")
			}
			bw.WriteString(termtext.Wrap(c.ID+" "+c.Title, "", "    "))
			last = c.ID
		}
		mark := map[Status]string{Pass: "PASS", Fail: "FAIL", NotVerifiable: "N/A"}[c.Status]
		bw.WriteString(termtext.Wrap(fmt.Sprintf("%-4s  %s", mark, c.Subject), "  ", "        "))
		if c.Reason != "" {
			bw.WriteString(termtext.Wrap(c.Reason, "        ", "        "))
		}
	}
	strict := ""
	if r.Strict {
		strict = ", strict: not verifiable counts as failed"
	}
	fmt.Fprintf(bw, "\n%d passed, %d failed, %d not verifiable here (platform %s, %.1fs%s)\n",
		r.Count(Pass), r.Count(Fail), r.Count(NotVerifiable), r.Platform, r.Duration.Seconds(), strict)
	return bw.Flush()
}

// WriteJSON renders the report for machines.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Options tune a run.
type Options struct {
	// ControllerHealth reports the Agent Sandbox controller's health where it does
	// not run in the cluster (the local target's out-of-cluster controller).
	// nil means: look at the in-cluster Deployment.
	ControllerHealth func(ctx context.Context) (healthy bool, detail string)
	// NoProbes skips the runtime checks (V10, V12), which start probe pods
	// and exec into sandboxes; they then report not verifiable.
	NoProbes bool
	// ProbeImage is the image of the network probe's pods: it needs sh, nc
	// (with -ll and -e), nslookup, cat and sleep (busybox), and the cluster
	// must be able to run it.
	ProbeImage string
	// DNSProbeName is the name the probe asks the cluster resolver for.
	DNSProbeName string
	// FQDNProbeHosts are host names verify may connect to (TCP 443) and
	// look up from probe pods, to show each tenant's FQDN allow-list: it
	// needs one the list names and one it does not. Empty: the allow-lists
	// are not verifiable.
	FQDNProbeHosts []string
	// Exec runs commands in pods; nil means through the API server, as
	// kubectl exec does.
	Exec Execer
	// AuditLogPath is the API server's audit log (JSON lines), where verify
	// can read it: the local stack's. V13 makes a dry-run claim as each
	// tenant's orchestrator and looks for its event there; empty: V13 is
	// not verifiable here.
	AuditLogPath string
	// StackDrift compares the platform's stack with the cluster, whole, as
	// `paddock drift` does (the engine's Drift, without its sweep); V15
	// fails on each object it reports. nil: V15 is not verifiable here.
	StackDrift func(ctx context.Context) (*drift.Report, error)
	// Only, when set, runs just the checks with these IDs (V01..): one
	// control looked at again without waiting for the others.
	Only []string
	// Strict makes a check that is not verifiable here count as failed
	// (Report.Failing), for CI: a cluster that cannot show a control does
	// not pass it.
	Strict bool
}

// Defaults of Options.
const (
	DefaultProbeImage   = "busybox:1.37"
	DefaultDNSProbeName = "kubernetes.default.svc.cluster.local"
)

// Verifier holds the clients of one run.
type Verifier struct {
	p    *model.Platform
	kube kubernetes.Interface
	dyn  dynamic.Interface
	opts Options
	exec Execer
	// impersonate returns a client that acts as user (V13).
	impersonate func(user string) (dynamic.Interface, error)
	// auditWait bounds V13's wait for its event; zero: defaultAuditWait.
	auditWait time.Duration
	// admissionSettle is how long an admission probe answered the wrong
	// way is asked again (untilAdmissionSettles); zero: once.
	admissionSettle time.Duration
}

// New returns a verifier for platform p on the cluster cfg points at.
func New(p *model.Platform, cfg *rest.Config, opts Options) (*Verifier, error) {
	for _, id := range opts.Only {
		if !slices.ContainsFunc(checks, func(c check) bool { return c.id == id }) {
			return nil, fmt.Errorf("no check %q: the checks are %s", id, strings.Join(CheckIDs(), ", "))
		}
	}
	// Hundreds of SubjectAccessReviews: client-go's default 5 QPS would make a
	// run take a minute for nothing.
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 200, 400
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if opts.ProbeImage == "" {
		opts.ProbeImage = DefaultProbeImage
	}
	if opts.DNSProbeName == "" {
		opts.DNSProbeName = DefaultDNSProbeName
	}
	ex := opts.Exec
	if ex == nil {
		ex = restExecer{cfg: cfg}
	}
	impersonate := func(user string) (dynamic.Interface, error) {
		c := rest.CopyConfig(cfg)
		c.Impersonate = rest.ImpersonationConfig{UserName: user}
		return dynamic.NewForConfig(c)
	}
	return &Verifier{p: p, kube: kube, dyn: dyn, opts: opts, exec: ex, impersonate: impersonate, admissionSettle: DefaultAdmissionSettle}, nil
}

// CheckIDs are the IDs of every check, in the order they run.
func CheckIDs() []string {
	ids := make([]string, len(checks))
	for i, c := range checks {
		ids[i] = c.id
	}
	return ids
}

// check is one conformance check; it appends its results.
type check struct {
	id, title string
	run       func(ctx context.Context, v *Verifier) []Result
}

// Run executes every check in order.
func (v *Verifier) Run(ctx context.Context) *Report {
	start := time.Now()
	rep := &Report{Platform: v.p.Name, Target: string(v.p.Target.Kind), Strict: v.opts.Strict}
	for _, c := range checks {
		if len(v.opts.Only) > 0 && !slices.Contains(v.opts.Only, c.id) {
			continue
		}
		for _, r := range c.run(ctx, v) {
			r.ID, r.Title = c.id, c.title
			rep.Results = append(rep.Results, r)
		}
	}
	sort.SliceStable(rep.Results, func(i, j int) bool { return rep.Results[i].ID < rep.Results[j].ID })
	rep.Duration = time.Since(start)
	return rep
}

func pass(subject, reason string, a ...any) Result {
	return Result{Subject: subject, Status: Pass, Reason: fmt.Sprintf(reason, a...)}
}

func fail(subject, reason string, a ...any) Result {
	return Result{Subject: subject, Status: Fail, Reason: fmt.Sprintf(reason, a...)}
}

func notVerifiable(subject, reason string, a ...any) Result {
	return Result{Subject: subject, Status: NotVerifiable, Reason: fmt.Sprintf(reason, a...)}
}

func joinMax(items []string, n int) string {
	if len(items) > n {
		return strings.Join(items[:n], ", ") + fmt.Sprintf(" (+%d more)", len(items)-n)
	}
	return strings.Join(items, ", ")
}
