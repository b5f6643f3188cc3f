package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/paddock-platform/paddock/internal/render"
	"github.com/paddock-platform/paddock/internal/specload"
	"github.com/paddock-platform/paddock/schemas/specgen"
)

// The backends benchmark: one platform on the benchmark's cluster, its
// state on each backend in turn (file://, postgres://), and the no-op `up`
// and `drift` timed there, with the path each run took.

// Backend names, as the report shows them.
const (
	BackendFile     = "file://"
	BackendPostgres = "postgres://"
	BackendS3       = "s3://"
)

// BackendsPlatform is the platform the section provisions on every backend.
const BackendsPlatform = "backends"

// backendEnv is how paddock (and the Pulumi CLI it runs) is given the
// backend: in the environment, so no command line shows the database's
// password.
const backendEnv = "PULUMI_BACKEND_URL"

// Backend is one backend the section measures on.
type Backend struct {
	// Name is BackendFile or BackendPostgres.
	Name string
	// URL is given to paddock as PULUMI_BACKEND_URL; it may hold a password
	// and is never printed or stored.
	URL string
	// Server says what serves the state, for the report.
	Server string
	// Env is what else paddock needs to reach the backend (an S3
	// identity in the AWS_* variables).
	Env []string
	// Secrets are strings no output of the section may show (the URL's
	// password, an S3 secret key): they are replaced wherever a line of
	// paddock's is kept.
	Secrets []string
	// Unavailable says why the backend cannot be measured on this machine;
	// it is reported as not measured, never dropped.
	Unavailable string
}

// BackendRun is the platform at Tenants tenants on one backend: the up that
// provisioned it, then the no-op up and drift, each run Runs times.
type BackendRun struct {
	Backend string `json:"backend"`
	Server  string `json:"server,omitempty"`
	// NotMeasured says why this backend was not measured (no PostgreSQL on
	// the machine); the rest is then empty.
	NotMeasured string `json:"notMeasured,omitempty"`
	Tenants     int    `json:"tenants,omitempty"`
	// Objects is how many Kubernetes objects the spec renders to.
	Objects int `json:"objects,omitempty"`
	// UpSeconds is the up that provisioned the platform at this size: a
	// create at the first size, a growth from the size before after it.
	UpSeconds float64  `json:"upSeconds,omitempty"`
	UpSummary string   `json:"upSummary,omitempty"`
	Noop      PathRuns `json:"noopUp"`
	Drift     PathRuns `json:"drift"`
}

// PathRuns are the runs of one command, each timed and with the path it took.
type PathRuns struct {
	// Seconds is the median of Runs, each the whole command, wall.
	Seconds float64   `json:"seconds"`
	Runs    []float64 `json:"runs"`
	// Paths are the paths of Runs, in order: PathFast, or "full run: " and
	// the reason paddock gave for running the Pulumi engine (RunPath).
	Paths []string `json:"paths"`
	// Summary is the line the last run printed to sum itself up.
	Summary     string `json:"summary,omitempty"`
	TreePeakRSS int64  `json:"treePeakRssBytes,omitempty"`
}

// PathFast is a run that compared the live cluster with the state directly.
const PathFast = "fast"

// pathFull prefixes the path of a run that fell back to the Pulumi engine.
const pathFull = "full run: "

// PathUnsaid is a run whose output named no path.
const PathUnsaid = "not said: no line of paddock's named the path it took"

// RunPath is the path a `paddock up` or `paddock drift` (verb) took, read
// from its output (stdout and stderr): PathFast when it compared the live
// cluster directly (up: "nothing changed: … checked live", or a repair
// "… checked live"; drift: "compared N objects live"), "full run: REASON"
// when it said why it ran the Pulumi engine (the refresh) instead, and
// PathUnsaid when it said neither. A fallback is never read as fast.
func RunPath(verb, output string) string {
	prefix := "paddock " + verb + ": "
	path := PathUnsaid
	for _, line := range strings.Split(output, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix)
		if !ok {
			continue
		}
		if reason, ok := strings.CutPrefix(rest, pathFull); ok {
			return pathFull + reason
		}
		switch verb {
		case "up":
			if strings.Contains(rest, "checked live") {
				path = PathFast
			}
		case "drift":
			if strings.HasPrefix(rest, "compared ") && strings.Contains(rest, " objects live") {
				path = PathFast
			}
		}
	}
	return path
}

// FastRuns is how many of the runs took the fast path.
func (p PathRuns) FastRuns() int {
	n := 0
	for _, path := range p.Paths {
		if path == PathFast {
			n++
		}
	}
	return n
}

// AllFast says every run took the fast path (and there was a run).
func (p PathRuns) AllFast() bool { return len(p.Paths) > 0 && p.FastRuns() == len(p.Paths) }

// PathText says which path the runs took: "fast (5 of 5)", or how many fell
// back to the engine and the reasons paddock gave.
func (p PathRuns) PathText() string {
	if len(p.Paths) == 0 {
		return "–"
	}
	fast := p.FastRuns()
	if fast == len(p.Paths) {
		return fmt.Sprintf("fast (%d of %d)", fast, len(p.Paths))
	}
	var others []string
	seen := map[string]int{}
	for _, path := range p.Paths {
		if path == PathFast {
			continue
		}
		if seen[path] == 0 {
			others = append(others, path)
		}
		seen[path]++
	}
	var parts []string
	if fast > 0 {
		parts = append(parts, fmt.Sprintf("fast in %d of %d", fast, len(p.Paths)))
	}
	for _, path := range others {
		parts = append(parts, fmt.Sprintf("%s (%d of %d)", path, seen[path], len(p.Paths)))
	}
	return strings.Join(parts, "; ")
}

// BackendsOptions configure Backends.
type BackendsOptions struct {
	Paddock string   // the paddock binary
	Env     []string // the benchmark's (PADDOCK_HOME), over the caller's
	// Backends are measured one after the other, in order.
	Backends []Backend
	// Tenants are the sizes the platform is grown to on each backend.
	Tenants []int
	// Runs is how many times each command runs per size (the median is
	// kept; 0 = 5).
	Runs int
	Dir  string
	Out  io.Writer
}

// Backends measures the no-op up and drift of one platform on each backend:
// provisioned by `up` at the smallest size, each command run o.Runs times,
// grown by `up` to the next size and measured again, then destroyed before
// the next backend, so two stacks never declare the cluster's shared
// objects at once. A drift that finds anything, or a command that fails,
// stops the benchmark: the figures would time another path. A backend
// that is Unavailable is recorded as not measured.
func Backends(ctx context.Context, o BackendsOptions) ([]BackendRun, error) {
	if o.Runs == 0 {
		o.Runs = 5
	}
	sizes := append([]int(nil), o.Tenants...)
	sort.Ints(sizes)
	var out []BackendRun
	for _, b := range o.Backends {
		if b.Unavailable != "" {
			fmt.Fprintf(o.Out, "bench: backends: %s not measured: %s\n", b.Name, b.Unavailable)
			out = append(out, BackendRun{Backend: b.Name, NotMeasured: b.Unavailable})
			continue
		}
		runs, err := backendRuns(ctx, o, b, sizes)
		out = append(out, runs...)
		if err != nil {
			return out, fmt.Errorf("backends: %s: %s", b.Name, hideSecrets(err.Error(), b.Secrets))
		}
	}
	return out, nil
}

// backendRuns measures every size on backend b, then destroys the platform.
func backendRuns(ctx context.Context, o BackendsOptions, b Backend, sizes []int) ([]BackendRun, error) {
	env := append(envWithout(envWithout(os.Environ(), backendEnv), checkpointsEnv), o.Env...)
	env = append(append(env, backendEnv+"="+b.URL), b.Env...)
	dir := filepath.Join(o.Dir, strings.TrimSuffix(b.Name, "://"))
	paddock := func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, o.Paddock, args...)
		cmd.Env = env
		return cmd
	}
	var out []BackendRun
	spec := ""
	for _, n := range sizes {
		spec = filepath.Join(dir, fmt.Sprintf("tenants-%d", n))
		if err := os.MkdirAll(spec, 0o755); err != nil {
			return out, err
		}
		if err := os.WriteFile(filepath.Join(spec, "platform.hcl"), []byte(specgen.Generate(specgen.Options{Platform: BackendsPlatform, Tenants: n})), 0o644); err != nil {
			return out, err
		}
		p, err := specload.Load(spec, specload.Options{}, io.Discard)
		if err != nil {
			return out, err
		}
		objs, err := render.All(p)
		if err != nil {
			return out, err
		}
		run := BackendRun{Backend: b.Name, Server: b.Server, Tenants: n, Objects: len(objs)}
		r, err := Measure(ctx, paddock("up", spec))
		if err != nil {
			return out, fmt.Errorf("up at %s: %w", tenantsText(n), err)
		}
		run.UpSeconds, run.UpSummary = r.Wall.Seconds(), hideSecrets(SummaryLine(r.Stdout, "up"), b.Secrets)
		fmt.Fprintf(o.Out, "bench: backends %-12s %4d tenants: up %.2fs: %s\n", b.Name, n, run.UpSeconds, run.UpSummary)
		for _, c := range []struct {
			verb string
			runs *PathRuns
		}{{"up", &run.Noop}, {"drift", &run.Drift}} {
			rep, err := repeat(ctx, o.Runs, func() *exec.Cmd { return paddock(c.verb, spec) }, func(_ *exec.Cmd, r *Run, err error) error {
				if err != nil {
					// drift exits 2 on drift: nothing was edited, so the
					// platform does not hold what it declared.
					return fmt.Errorf("no-op %s at %s: %w", c.verb, tenantsText(n), err)
				}
				c.runs.Paths = append(c.runs.Paths, hideSecrets(RunPath(c.verb, r.Output), b.Secrets))
				c.runs.Summary = hideSecrets(SummaryLine(r.Stdout, c.verb), b.Secrets)
				return nil
			})
			if err != nil {
				return out, err
			}
			c.runs.Runs, c.runs.TreePeakRSS = rep.runs, rep.treePeak
			c.runs.Seconds = median(c.runs.Runs)
			fmt.Fprintf(o.Out, "bench: backends %-12s %4d tenants: %-5s %.2fs median, path %s: %s\n", b.Name, n, c.verb, c.runs.Seconds, c.runs.PathText(), c.runs.Summary)
		}
		out = append(out, run)
	}
	if spec != "" {
		r, err := Measure(ctx, paddock("destroy", spec))
		if err != nil {
			return out, fmt.Errorf("destroy: %w", err)
		}
		fmt.Fprintf(o.Out, "bench: backends %-12s destroy %.2fs: %s\n", b.Name, r.Wall.Seconds(), hideSecrets(SummaryLine(r.Stdout, "destroy"), b.Secrets))
	}
	return out, nil
}

// hideSecrets replaces every secret in s.
func hideSecrets(s string, secrets []string) string {
	for _, secret := range secrets {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, "****")
		}
	}
	return s
}

// FindBackend is the run of backend at n tenants; a backend not measured
// is found at any size, with its reason.
func (r *Results) FindBackend(backend string, n int) (BackendRun, bool) {
	for _, b := range r.Backends {
		if b.Backend == backend && (b.Tenants == n || b.NotMeasured != "") {
			return b, true
		}
	}
	return BackendRun{}, false
}

// backendNames are the backends of the section, in the order measured.
func (r *Results) backendNames() []string {
	var out []string
	for _, b := range r.Backends {
		if !contains(out, b.Backend) {
			out = append(out, b.Backend)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// judgeBackends holds the no-op up and drift on each backend to the small
// target; a run is met only when it is within the bound and every run took
// the fast path: a fallback to the refresh is not the fast no-op the
// target asks for, however quick.
func (r *Results) judgeBackends() []TargetVerdict {
	var out []TargetVerdict
	for _, name := range r.backendNames() {
		for _, op := range []string{OpNoop, OpDrift} {
			v := TargetVerdict{Target: fmt.Sprintf("paddock %s on %s ≤ %.0f s at %s, fast path", op, name, TargetSmallSeconds, tenantsText(TargetSmallTenants)), Value: "no run at this size"}
			b, ok := r.FindBackend(name, TargetSmallTenants)
			switch {
			case ok && b.NotMeasured != "":
				v.Value = "not measured: " + b.NotMeasured
			case ok:
				runs := b.Noop
				if op == OpDrift {
					runs = b.Drift
				}
				v.Value, v.Measured = fmt.Sprintf("%.2f s, path %s", runs.Seconds, runs.PathText()), true
				v.Met = runs.AllFast() && runs.Seconds <= TargetSmallSeconds
			}
			out = append(out, v)
		}
	}
	return out
}

// writeBackends is the report's section on the backends.
func (r *Results) writeBackends(w io.Writer) {
	fmt.Fprintf(w, "\n## State backends (no-op `up` and `drift`)\n\n%s", r.measuredLine(SectionBackends))
	fmt.Fprintf(w, "One platform (%q) on the benchmark's cluster, its state on each backend in turn, given to paddock as `%s` (so no command line shows the database's password). ", BackendsPlatform, backendEnv)
	fmt.Fprintf(w, "On each, `paddock up` provisions it at the smallest size (*up*), then a no-op `paddock up` and `paddock drift` run %d times each (the median is shown), seconds, wall, the command's start included; `up` grows it to the next size and both are measured again; it is destroyed before the next backend. ", pathRunsOf(r.Backends))
	fmt.Fprintf(w, "*path* is the way the runs went, as paddock said: *fast* when it compared the live cluster with the state directly (`up`: \"nothing changed: … checked live\", `drift`: \"compared N objects live\"), else *full run* with the reason paddock gave for running Pulumi's refresh instead. ")
	fmt.Fprintf(w, "The PostgreSQL server is the tests' (`internal/pgtest`): started by the benchmark on 127.0.0.1 and stopped after, with fsync and synchronous commit off. The S3 server is the tests' too (`internal/s3test`: SeaweedFS's weed, its S3 gateway on 127.0.0.1, a fresh bucket).\n\n")
	fmt.Fprintf(w, "| backend | served by | tenants | objects | up | no-op up | path | drift | path | peak MiB (no-op / drift) |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, b := range r.Backends {
		if b.NotMeasured != "" {
			fmt.Fprintf(w, "| %s | – | – | – | not measured: %s | – | – | – | – | – |\n", b.Backend, mdText(b.NotMeasured))
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %d | %d | %.2f | %.2f | %s | %.2f | %s | %s / %s |\n", b.Backend, mdText(b.Server), b.Tenants, b.Objects, b.UpSeconds,
			b.Noop.Seconds, mdText(b.Noop.PathText()), b.Drift.Seconds, mdText(b.Drift.PathText()), mib(b.Noop.TreePeakRSS), mib(b.Drift.TreePeakRSS))
	}
	fmt.Fprintf(w, "\nWhat the last run of each printed:\n\n| backend | tenants | run | paddock printed |\n|---|---|---|---|\n")
	for _, b := range r.Backends {
		if b.NotMeasured != "" {
			continue
		}
		for _, row := range []struct{ run, printed string }{{"up", b.UpSummary}, {"no-op up", b.Noop.Summary}, {"drift", b.Drift.Summary}} {
			printed := mdCell(row.printed)
			if printed == "" {
				printed = "–"
			}
			fmt.Fprintf(w, "| %s | %d | %s | %s |\n", b.Backend, b.Tenants, row.run, printed)
		}
	}
}

// mdText makes plain text safe in a table cell.
func mdText(s string) string {
	if s == "" {
		return "–"
	}
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}

// pathRunsOf is how many runs each figure is the median of.
func pathRunsOf(runs []BackendRun) int {
	n := 0
	for _, b := range runs {
		n = max(n, len(b.Noop.Runs), len(b.Drift.Runs))
	}
	return n
}

// CarryBackends keeps the backends figures of old in res when this run did
// not measure them (no -backends), with who measured them, and says so
// in the notes; it reports whether it did.
func CarryBackends(res, old *Results) bool {
	if old == nil || len(old.Backends) == 0 || old.Paddock == nil || len(res.Backends) > 0 {
		return false
	}
	m := old.MeasuredOf(SectionBackends)
	res.Backends = old.Backends
	if res.MeasuredBy == nil {
		res.MeasuredBy = map[string]Measured{}
	}
	res.MeasuredBy[SectionBackends] = m
	res.Notes = append(res.Notes, fmt.Sprintf("State backends: not measured by this run (-backends= empty); the figures below are carried over from binary %.12s (%s).", m.Paddock.Commit, m.Date))
	return true
}
