package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Results are everything one `make bench` run measured.
type Results struct {
	// Format is the results' format version: 2 counts a direct child's CPU
	// without its descendants' (1 counted them in, see Upgrade); 3 records
	// the measured binary (Paddock) and has every create wait for the warm
	// pools to be Ready.
	Format int `json:"format"`
	// Date, Machine and Versions say where and with what it ran; Versions
	// are the pinned upstreams, Paddock the binary measured.
	Date     string            `json:"date"`
	Machine  string            `json:"machine"`
	Paddock  *Build            `json:"paddock,omitempty"`
	Versions map[string]string `json:"versions"`
	// Provision are the provisioning samples; Validate the validate runs;
	// Claims the sandbox start measurements.
	Provision []Sample       `json:"provision"`
	Validate  []ValidateRun  `json:"validate"`
	Claims    []ClaimsResult `json:"claims,omitempty"`
	// ClaimsNodes is the node kind the claims ran on: real (containers
	// start under gVisor) or fake (kwok: the controller's part only).
	ClaimsNodes string          `json:"claimsNodes,omitempty"`
	Fits        map[string]Fit  `json:"fits"`
	Targets     []TargetVerdict `json:"targets"`
}

// Build identifies the paddock binary a run measured: the commit it reports
// itself (`paddock version --commit`, linked in by `make build`) and the
// checksum of the file, read when the run starts.
type Build struct {
	Commit string `json:"commit"`
	Binary string `json:"binary"`
	SHA256 string `json:"sha256"`
}

// ErrNoBuild is a result that does not say which binary it measured.
var ErrNoBuild = errors.New("the results do not name the paddock binary they measured (its commit from `paddock version --commit`): measure again with `make bench`, a hand-written version is not accepted")

// Identified is nil when the results name the binary they measured, and
// ErrNoBuild otherwise; nothing of them is rendered without it.
func (r *Results) Identified() error { return r.Paddock.check() }

// check refuses a build that does not identify a binary.
func (b *Build) check() error {
	if b == nil || b.Commit == "" || b.Commit == "unknown" || b.SHA256 == "" {
		return ErrNoBuild
	}
	return nil
}

// ValidateRun is `paddock validate` on a generated spec.
type ValidateRun struct {
	Lines   int     `json:"lines"`
	Tenants int     `json:"tenants"`
	Seconds float64 `json:"seconds"` // median of the runs
	PeakRSS int64   `json:"peakRssBytes"`
}

// Fit is a least-squares line seconds = Intercept + PerTenant * tenants.
type Fit struct {
	Intercept float64 `json:"interceptSeconds"`
	PerTenant float64 `json:"secondsPerTenant"`
	R2        float64 `json:"r2"`
}

// TargetVerdict is one of the targets and whether Paddock met it.
type TargetVerdict struct {
	Target string `json:"target"`
	Value  string `json:"value"`
	Met    bool   `json:"met"`
}

// Find returns the sample of tool/op at n tenants.
func (r *Results) Find(tool, op string, n int) (Sample, bool) {
	for _, s := range r.Provision {
		if s.Tool == tool && s.Op == op && s.Tenants == n {
			return s, true
		}
	}
	return Sample{}, false
}

func (r *Results) tenantCounts() []int {
	seen := map[int]bool{}
	var out []int
	for _, s := range r.Provision {
		if !seen[s.Tenants] {
			seen[s.Tenants] = true
			out = append(out, s.Tenants)
		}
	}
	sort.Ints(out)
	return out
}

// series are the tool/op lines of the table and plot.
var series = []struct{ Tool, Op string }{
	{ToolPaddockFinal, OpCreate}, {ToolPaddock, OpCreate}, {ToolKubectl, OpCreate}, {ToolFloor, OpCreate},
	{ToolKubectl, OpApplyOnly}, {ToolFloor, OpApplyOnly},
	{ToolPaddockFinal, OpNoop}, {ToolPaddockFinal, OpDrift}, {ToolPaddockFinal, OpDestroy}, {ToolPaddock, OpDestroy},
}

func seriesName(tool, op string) string {
	switch tool {
	case ToolPaddock:
		return "paddock " + op
	case ToolPaddockFinal:
		return "paddock " + op + " (final checkpoint)"
	}
	return tool + " " + op
}

// Analyse fits a line per series and judges the targets of the issue.
func (r *Results) Analyse() {
	r.Fits = map[string]Fit{}
	for _, s := range series {
		var xs, ys []float64
		for _, smp := range r.Provision {
			if smp.Tool == s.Tool && smp.Op == s.Op {
				xs = append(xs, float64(smp.Tenants))
				ys = append(ys, smp.Seconds)
			}
		}
		if len(xs) >= 2 {
			r.Fits[seriesName(s.Tool, s.Op)] = fitLine(xs, ys)
		}
	}
	r.Targets = nil
	for _, n := range r.tenantCounts() {
		floor, okFloor := r.Find(ToolFloor, OpCreate, n)
		for _, tool := range []string{ToolPaddock, ToolPaddockFinal} {
			up, ok := r.Find(tool, OpCreate, n)
			if ok && okFloor && floor.Seconds > 0 {
				ratio := up.Seconds / floor.Seconds
				r.Targets = append(r.Targets, TargetVerdict{
					Target: fmt.Sprintf("first up within 1.5x the parallel floor (%d tenants, %s)", n, seriesName(tool, OpCreate)),
					Value:  fmt.Sprintf("%.1fx (%.1fs vs %.1fs)", ratio, up.Seconds, floor.Seconds), Met: ratio <= 1.5,
				})
			}
		}
		for _, op := range []string{OpNoop, OpDrift} {
			s, ok := r.Find(ToolPaddockFinal, op, n)
			if !ok || s.Resources == 0 {
				continue
			}
			per100 := s.Seconds / float64(s.Resources) * 100
			r.Targets = append(r.Targets, TargetVerdict{
				Target: fmt.Sprintf("%s under 1s per 100 resources (%d tenants)", op, n),
				Value:  fmt.Sprintf("%.2fs per 100 (%.1fs for %d)", per100, s.Seconds, s.Resources), Met: per100 < 1,
			})
		}
	}
	for _, tool := range []string{ToolPaddock, ToolPaddockFinal} {
		if f, ok := r.Fits[seriesName(tool, OpCreate)]; ok {
			r.Targets = append(r.Targets, TargetVerdict{
				Target: "create cost linear in tenants (R² of a straight line ≥ 0.98), " + seriesName(tool, OpCreate),
				Value:  fmt.Sprintf("R² %.3f, %.2fs per tenant", f.R2, f.PerTenant), Met: f.R2 >= 0.98,
			})
		}
	}
}

// fitLine is ordinary least squares with its coefficient of determination.
func fitLine(xs, ys []float64) Fit {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return Fit{}
	}
	b := (n*sxy - sx*sy) / den
	a := (sy - b*sx) / n
	mean := sy / n
	var ssTot, ssRes float64
	for i := range xs {
		ssTot += (ys[i] - mean) * (ys[i] - mean)
		d := ys[i] - (a + b*xs[i])
		ssRes += d * d
	}
	r2 := 1.0
	if ssTot > 0 {
		r2 = 1 - ssRes/ssTot
	}
	return Fit{Intercept: a, PerTenant: b, R2: r2}
}

// WriteJSON writes the results as indented JSON.
func (r *Results) WriteJSON(file string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(b, '\n'), 0o644)
}

// WriteMarkdown writes the tables of the results; it refuses results that
// do not name the binary they measured.
func (r *Results) WriteMarkdown(w io.Writer) error {
	if err := r.Paddock.check(); err != nil {
		return err
	}
	bw := &errWriter{w: w}
	r.writeMarkdown(bw)
	return bw.err
}

// errWriter keeps the first write error, so the tables need no check per line.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}

func (r *Results) writeMarkdown(w io.Writer) {
	fmt.Fprintf(w, "# Paddock benchmarks\n\n%s, %s. Paddock %s (`paddock version --commit` of the binary measured, sha256 %s). Pinned upstreams: %s.\n\n",
		r.Date, r.Machine, r.Paddock.Commit, short(r.Paddock.SHA256), versionList(r.Versions))
	fmt.Fprintf(w, "All runs on the live local stack (real kube-apiserver, etcd, controller-manager, scheduler, kwok nodes, real Agent Sandbox controller). ")
	fmt.Fprintf(w, "No container runs and no CNI enforces anything here: times are the control plane's and the tools', not a real cluster's.\n\n")
	fmt.Fprintf(w, "## Provisioning (seconds, wall)\n\n")
	fmt.Fprintf(w, "Like for like: every create column ends when every warm pool has its replicas Ready (`status.readyReplicas` = `spec.replicas`). ")
	fmt.Fprintf(w, "paddock waits through the `pulumi.com/waitFor` annotation its warm pools carry; %s; %s. ", kubectlReadiness, floorReadiness)
	fmt.Fprintf(w, "The *apply only* columns are kubectl's and the floor's time until their last apply returned, before that wait: objects stored, pools not yet filled.\n\n")
	ns := r.tenantCounts()
	fmt.Fprintf(w, "| tenants | objects | paddock resources |")
	for _, s := range series {
		fmt.Fprintf(w, " %s |", seriesName(s.Tool, s.Op))
	}
	fmt.Fprintf(w, " up (final) / floor | up (final) / kubectl |\n|---|---|---|")
	for range series {
		fmt.Fprintf(w, "---|")
	}
	fmt.Fprintf(w, "---|---|\n")
	for _, n := range ns {
		// The ratios compare paddock's final-checkpoint create, measured at
		// every tenant count.
		up, _ := r.Find(ToolPaddockFinal, OpCreate, n)
		fmt.Fprintf(w, "| %d | %d | %d |", n, up.Objects, up.Resources)
		for _, s := range series {
			if smp, ok := r.Find(s.Tool, s.Op, n); ok {
				fmt.Fprintf(w, " %.2f |", smp.Seconds)
			} else {
				fmt.Fprintf(w, " – |")
			}
		}
		floor, _ := r.Find(ToolFloor, OpCreate, n)
		kubectl, _ := r.Find(ToolKubectl, OpCreate, n)
		fmt.Fprintf(w, " %s | %s |\n", ratio(up.Seconds, floor.Seconds), ratio(up.Seconds, kubectl.Seconds))
	}
	fmt.Fprintf(w, "\n### Linear fits (seconds = a + b × tenants)\n\n| series | a (s) | b (s/tenant) | R² |\n|---|---|---|---|\n")
	for _, s := range series {
		if f, ok := r.Fits[seriesName(s.Tool, s.Op)]; ok {
			fmt.Fprintf(w, "| %s | %.2f | %.3f | %.3f |\n", seriesName(s.Tool, s.Op), f.Intercept, f.PerTenant, f.R2)
		}
	}
	fmt.Fprintf(w, "\n### Peak resident memory (MiB) per program\n\n| tenants | op | paddock | pulumi | provider | kubectl | whole tree |\n|---|---|---|---|---|---|---|\n")
	for _, n := range ns {
		for _, s := range series {
			smp, ok := r.Find(s.Tool, s.Op, n)
			if !ok || smp.TreePeakRSS == 0 {
				continue
			}
			fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %s |\n", n, seriesName(s.Tool, s.Op),
				mib(smp.PeakRSS["paddock"]), mib(smp.PeakRSS["pulumi"]), mib(smp.PeakRSS["pulumi-resource-kubernetes"]), mib(smp.PeakRSS["kubectl"]), mib(smp.TreePeakRSS))
		}
	}
	fmt.Fprintf(w, "\n### Where paddock's time goes (seconds, from its engine event log)\n\n")
	fmt.Fprintf(w, "start: process start to the engine's first event (spec, policy, Pulumi CLI, workspace); refresh: reading every resource back; update: registering, diffing and applying; finish: last event to exit.\n\n")
	fmt.Fprintf(w, "| tenants | run | wall | start | refresh | update | finish |\n|---|---|---|---|---|---|---|\n")
	for _, n := range ns {
		for _, smp := range r.Provision {
			if smp.Tenants != n || smp.Phases == nil {
				continue
			}
			fmt.Fprintf(w, "| %d | %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", n, seriesName(smp.Tool, smp.Op), smp.Seconds, smp.Phases["start"], smp.Phases["refresh"], smp.Phases["update"], smp.Phases["finish"])
		}
	}
	fmt.Fprintf(w, "\n### CPU seconds per program during each run\n\n")
	fmt.Fprintf(w, "On a 2-CPU machine, wall time below the CPU total means work in parallel; the cluster's programs (API server, etcd, controllers) serve every tool alike.\n\n")
	fmt.Fprintf(w, "| tenants | run | wall | paddock | pulumi | provider | kubectl | kube-apiserver | etcd | controllers |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, n := range ns {
		for _, s := range series {
			smp, ok := r.Find(s.Tool, s.Op, n)
			if !ok || smp.CPU == nil {
				continue
			}
			ctl := smp.CPU["kube-controller-manager"] + smp.CPU["kube-scheduler"] + smp.CPU["kwok-controller"] + smp.CPU["agent-sandbox-controller"]
			fmt.Fprintf(w, "| %d | %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", n, seriesName(s.Tool, s.Op), smp.Seconds,
				smp.CPU["paddock"], smp.CPU["pulumi"], smp.CPU["pulumi-resource-kubernetes"], smp.CPU["kubectl"], smp.CPU["kube-apiserver"], smp.CPU["etcd"], ctl)
		}
	}
	if len(r.Validate) > 0 {
		fmt.Fprintf(w, "\n## validate (median of 5 runs of the binary, process start included)\n\n| lines | tenants | seconds | peak MiB |\n|---|---|---|---|\n")
		for _, v := range r.Validate {
			fmt.Fprintf(w, "| %d | %d | %.3f | %s |\n", v.Lines, v.Tenants, v.Seconds, mib(v.PeakRSS))
		}
	}
	if len(r.Claims) > 0 {
		fmt.Fprintf(w, "\n## Sandbox start through claims\n\n")
		switch r.ClaimsNodes {
		case "real":
			fmt.Fprintf(w, "On the real node: claim → Ready includes the sandbox's container starting under gVisor (runsc, systrap).\n\n")
		case "fake":
			fmt.Fprintf(w, "On kwok nodes: no container starts, so these are the controller's part alone.\n\n")
		}
		WriteClaimsTable(w, r.Claims)
	}
	fmt.Fprintf(w, "\n## Targets\n\n| target | measured | met |\n|---|---|---|\n")
	for _, t := range r.Targets {
		met := "no"
		if t.Met {
			met = "yes"
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", t.Target, t.Value, met)
	}
}

func versionList(v map[string]string) string {
	var keys []string
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+" "+v[k])
	}
	return strings.Join(parts, ", ")
}

// short abbreviates a checksum for the page.
func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

func ratio(a, b float64) string {
	if b <= 0 || a <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.1fx", a/b)
}

func mib(b int64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", float64(b)/(1<<20))
}

// WritePlot draws seconds against tenants, one line per tool and operation;
// like WriteMarkdown, it refuses results that do not name their binary.
func (r *Results) WritePlot(file string) error {
	if err := r.Paddock.check(); err != nil {
		return err
	}
	p := plot.New()
	p.Title.Text = "Paddock provisioning on the local stack"
	p.X.Label.Text = "tenants"
	p.Y.Label.Text = "seconds (wall)"
	p.Add(plotter.NewGrid())
	colors := []color.RGBA{{0x1f, 0x77, 0xb4, 255}, {0xff, 0x7f, 0x0e, 255}, {0x2c, 0xa0, 0x2c, 255}, {0xd6, 0x27, 0x28, 255}, {0x94, 0x67, 0xbd, 255}, {0x8c, 0x56, 0x4b, 255}, {0xe3, 0x77, 0xc2, 255}, {0x7f, 0x7f, 0x7f, 255}, {0xbc, 0xbd, 0x22, 255}, {0x17, 0xbe, 0xcf, 255}}
	for i, s := range series {
		var pts plotter.XYs
		for _, n := range r.tenantCounts() {
			if smp, ok := r.Find(s.Tool, s.Op, n); ok {
				pts = append(pts, plotter.XY{X: float64(n), Y: smp.Seconds})
			}
		}
		if len(pts) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		c := colors[i%len(colors)]
		line.Color, points.Color = c, c
		if s.Op != OpCreate || (s.Tool != ToolPaddock && s.Tool != ToolPaddockFinal) {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(line, points)
		p.Legend.Add(seriesName(s.Tool, s.Op), line, points)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	p.Y.Min = 0
	if math.IsInf(p.Y.Max, 0) {
		p.Y.Max = 1
	}
	return p.Save(8*vg.Inch, 5*vg.Inch, file)
}

// ResultsFormat is the current Results.Format.
const ResultsFormat = 3

// ReadResults reads results.json, upgrading an older format.
func ReadResults(file string) (*Results, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var r Results
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	r.Upgrade()
	return &r, nil
}

// Upgrade brings results of an older format to the current one. Format 1
// (unset) took paddock's CPU from the kernel's figure for the process,
// which includes the Pulumi CLI and provider it waited for. Format 2 has
// kubectl and the floor stop at their last apply while paddock waits for
// the pools: nothing converts that, so those results keep no Paddock build
// and the report refuses them.
func (r *Results) Upgrade() {
	if r.Format < 3 {
		r.Paddock = nil
	}
	if r.Format < 2 {
		for i := range r.Provision {
			c := r.Provision[i].CPU
			if c == nil {
				continue
			}
			if own := c["paddock"] - c["pulumi"] - c["pulumi-resource-kubernetes"]; own > 0 {
				c["paddock"] = own
			}
		}
	}
	r.Format = ResultsFormat
}
