// The results as people read them: the README's tables and the plot.

package bench

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

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
	ns := r.tenantCounts()
	series := r.series()
	tool := r.mainTool()
	fmt.Fprintf(w, "## Targets\n\n| target | measured | met |\n|---|---|---|\n")
	for _, t := range r.Targets {
		fmt.Fprintf(w, "| %s | %s | %s |\n", t.Target, t.Value, t.Verdict())
	}
	if rows := r.BeforeAfter(); len(rows) > 0 {
		fmt.Fprintf(w, "\n## Before and after\n\n")
		fmt.Fprintf(w, "Before: the results this run replaced (Paddock %s, %s)", r.Baseline.Paddock.Commit, r.Baseline.Date)
		if len(r.Baseline.Quoted) > 0 {
			fmt.Fprintf(w, ", and figures quoted where it did not measure (the source is named on each row)")
		}
		fmt.Fprintf(w, ". After: this run, Paddock %s. Seconds, wall.\n\n", r.Paddock.Commit)
		fmt.Fprintf(w, "| measured | tenants | before | before: mode and source | after | speed-up |\n|---|---|---|---|---|---|\n")
		for _, row := range rows {
			after, speedup := "–", "–"
			if row.After > 0 {
				after, speedup = fmt.Sprintf("%.2f", row.After), fmt.Sprintf("%.1fx", row.Before/row.After)
			}
			fmt.Fprintf(w, "| %s | %d | %.2f | %s | %s | %s |\n", row.Label, row.Tenants, row.Before, row.Source, after, speedup)
		}
	}
	fmt.Fprintf(w, "\n## Provisioning (seconds, wall)\n\n%s", r.measuredLine(SectionProvision))
	if tool == ToolPaddock {
		fmt.Fprintf(w, "\"paddock\" is the binary's default; \"(every-step)\" is `--checkpoints every-step`, its opt-out, which saves the state after every resource. ")
	} else {
		fmt.Fprintf(w, "Results from before format 4: \"(every-step)\" was then the binary's default, \"(final checkpoint)\" its `--checkpoints final`, which was not crash-safe. ")
	}
	fmt.Fprintf(w, "Like for like: every create column ends when every warm pool has its replicas Ready (`status.readyReplicas` = `spec.replicas`). ")
	fmt.Fprintf(w, "paddock waits through the `pulumi.com/waitFor` annotation its warm pools carry; %s; %s. ", kubectlReadiness, floorReadiness)
	fmt.Fprintf(w, "The *apply only* columns are kubectl's and the floor's time until their last apply returned, before that wait: objects stored, pools not yet filled. ")
	fmt.Fprintf(w, "The *ssa-floor destroy* deletes the same objects directly: every namespace and cluster-scoped object at once, %d in flight, no client throttling, until every namespace and CRD is gone. ", FloorWorkers)
	fmt.Fprintf(w, "*no-op up --full* is the no-op through Pulumi's refresh and update, for contrast. ")
	fmt.Fprintf(w, "The local cluster's kwok node is shaped like a GKE node (110 pods, 32 CPUs): for a platform of more than %d warm-pool pods the benchmark adds kwok nodes of the same shape, one per %d pods, before any tool runs at that size.\n\n", PodsPerFakeNode, PodsPerFakeNode)
	fmt.Fprintf(w, "| tenants | objects | paddock resources |")
	for _, s := range series {
		fmt.Fprintf(w, " %s |", seriesName(s.Tool, s.Op))
	}
	fmt.Fprintf(w, " create / floor | destroy / floor | create / kubectl |\n|---|---|---|")
	for range series {
		fmt.Fprintf(w, "---|")
	}
	fmt.Fprintf(w, "---|---|---|\n")
	for _, n := range ns {
		up, _ := r.Find(tool, OpCreate, n)
		objects := up.Objects
		for _, s := range r.Provision {
			if s.Tenants == n && objects == 0 {
				objects = s.Objects
			}
		}
		fmt.Fprintf(w, "| %d | %d | %s |", n, objects, count(up.Resources))
		for _, s := range series {
			if smp, ok := r.Find(s.Tool, s.Op, n); ok {
				fmt.Fprintf(w, " %.2f |", smp.Seconds)
			} else {
				fmt.Fprintf(w, " – |")
			}
		}
		down, _ := r.Find(tool, OpDestroy, n)
		floor, _ := r.Find(ToolFloor, OpCreate, n)
		floorDown, _ := r.Find(ToolFloor, OpDestroy, n)
		kubectl, _ := r.Find(ToolKubectl, OpCreate, n)
		fmt.Fprintf(w, " %s | %s | %s |\n", ratio(up.Seconds, floor.Seconds), ratio(down.Seconds, floorDown.Seconds), ratio(up.Seconds, kubectl.Seconds))
	}
	if tool == ToolPaddockFinal {
		fmt.Fprintf(w, "\nThe ratios are paddock's with `--checkpoints final` (results before format 4, which did not measure the binary's default as \"paddock\").\n")
	} else {
		fmt.Fprintf(w, "\nThe ratios are those of paddock's default.\n")
	}
	for _, note := range r.Notes {
		fmt.Fprintf(w, "\n- %s", note)
	}
	if len(r.Notes) > 0 {
		fmt.Fprintln(w)
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
	r.writeRequests(w, ns, series)
	r.writeSizeRuns(w, ns)
	r.writeCost(w, ns)
	fmt.Fprintf(w, "\n### Where paddock's time goes (seconds)\n\n")
	writePhases(w, r.Provision)
	if r.Baseline != nil {
		fmt.Fprintf(w, "\n#### Before: Paddock %s (%s)\n\n", r.Baseline.Paddock.Commit, r.Baseline.Date)
		writePhases(w, r.Baseline.Provision)
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
			ctl := smp.CPU["kube-controller-manager"] + smp.CPU["kube-scheduler"] + smp.CPU["kwok"] + smp.CPU["agent-sandbox-controller"]
			fmt.Fprintf(w, "| %d | %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", n, seriesName(s.Tool, s.Op), smp.Seconds,
				smp.CPU["paddock"], smp.CPU["pulumi"], smp.CPU["pulumi-resource-kubernetes"], smp.CPU["kubectl"], smp.CPU["kube-apiserver"], smp.CPU["etcd"], ctl)
		}
	}
	if len(r.Validate) > 0 {
		fmt.Fprintf(w, "\n## validate (median of 5 runs of the binary, process start included)\n\n%s| lines | tenants | seconds | peak MiB |\n|---|---|---|---|\n", r.measuredLine(SectionValidate))
		for _, v := range r.Validate {
			fmt.Fprintf(w, "| %d | %d | %.3f | %s |\n", v.Lines, v.Tenants, v.Seconds, mib(v.PeakRSS))
		}
	}
	if len(r.Backends) > 0 {
		r.writeBackends(w)
	}
	if len(r.Fleet) > 0 {
		r.writeFleet(w)
	}
	if len(r.Claims) > 0 {
		fmt.Fprintf(w, "\n## Sandbox start through claims\n\n%s", r.measuredLine(SectionClaims))
		switch r.ClaimsNodes {
		case "real":
			fmt.Fprintf(w, "On the real node: claim → Ready includes the sandbox's container starting under gVisor (runsc, systrap).\n\n")
		case "fake":
			fmt.Fprintf(w, "On kwok nodes: no container starts, so these are the controller's part alone.\n\n")
		}
		WriteClaimsTable(w, r.Claims)
		r.ClaimsFit.write(w)
	}
	if r.Gateway != nil {
		r.writeGateway(w)
	}
}

// writePhases is the table of where each paddock run's time went: the
// phases of its engine event log, or, for a run that started no engine (a
// fast path), only what it printed.
func writePhases(w io.Writer, samples []Sample) {
	fmt.Fprintf(w, "From the engine's event log: start is process start to the engine's first event (spec, policy, Pulumi CLI, workspace); refresh reading every resource back; update registering, diffing and applying; finish the last event to exit. ")
	fmt.Fprintf(w, "A run with no phases started no engine (a fast path, or a direct destroy): its wall time and the line it printed are all there is.\n\n")
	fmt.Fprintf(w, "| tenants | run | wall | start | refresh | update | finish | paddock printed |\n|---|---|---|---|---|---|---|---|\n")
	var tenants []int
	seen := map[int]bool{}
	for _, s := range samples {
		if !seen[s.Tenants] {
			seen[s.Tenants] = true
			tenants = append(tenants, s.Tenants)
		}
	}
	sort.Ints(tenants)
	for _, n := range tenants {
		for _, smp := range samples {
			if smp.Tenants != n || !strings.HasPrefix(smp.Tool, ToolPaddock) {
				continue
			}
			printed := mdCell(smp.Summary)
			if smp.Phases == nil {
				if printed == "" {
					printed = "–"
				}
				fmt.Fprintf(w, "| %d | %s | %.2f | – | – | – | – | no engine run: %s |\n", n, seriesName(smp.Tool, smp.Op), smp.Seconds, printed)
				continue
			}
			if printed == "" {
				printed = "–"
			}
			fmt.Fprintf(w, "| %d | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %s |\n", n, seriesName(smp.Tool, smp.Op), smp.Seconds, smp.Phases["start"], smp.Phases["refresh"], smp.Phases["update"], smp.Phases["finish"], printed)
		}
	}
}

// mdCell makes text safe in a table cell.
func mdCell(s string) string {
	if s == "" {
		return ""
	}
	return "`" + strings.NewReplacer("|", "\\|", "`", "'").Replace(s) + "`"
}

// tenantsText is "1 tenant", "10 tenants".
func tenantsText(n int) string {
	if n == 1 {
		return "1 tenant"
	}
	return fmt.Sprintf("%d tenants", n)
}

// count is n, or a dash for none.
func count(n int) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprint(n)
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
	for i, s := range r.series() {
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
		if s.Op != OpCreate || !strings.HasPrefix(s.Tool, ToolPaddock) {
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

// writeRequests is the table of each run's API requests and paddock's
// checkpoint, for the runs that recorded them.
func (r *Results) writeRequests(w io.Writer, ns []int, series []struct{ Tool, Op string }) {
	var rows []string
	for _, n := range ns {
		for _, s := range series {
			smp, ok := r.Find(s.Tool, s.Op, n)
			if !ok || (smp.APIRequests == nil && smp.CheckpointBytes == 0) {
				continue
			}
			reads := smp.APIRequests["GET"] + smp.APIRequests["LIST"] + smp.APIRequests["WATCH"]
			total := TotalRequests(smp.APIRequests)
			checkpoint := "–"
			if smp.CheckpointBytes > 0 {
				checkpoint = fmt.Sprintf("%.2f", float64(smp.CheckpointBytes)/(1<<20))
			}
			rows = append(rows, fmt.Sprintf("| %d | %s | %.2f | %s | %s | %s | %s | %s |", n, seriesName(s.Tool, s.Op), smp.Seconds, checkpoint,
				count(int(total)), count(int(reads)), count(int(total-reads)), verbList(smp.APIRequests)))
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### API requests and paddock's state\n\n")
	fmt.Fprintf(w, "*API requests* are what the API server served during the run (its `%s` before and after, by verb): the tool's own, the controllers' reacting to it, and the cluster's background (kwok's node leases, resyncs), so a run of seconds counts a few of those too; the floor's include the benchmark's own polling of the pools. ", requestsMetric)
	fmt.Fprintf(w, "*Reads* are GET, LIST and WATCH. *checkpoint* is the size of the stack's Pulumi checkpoint in the file backend when the run ended.\n\n")
	fmt.Fprintf(w, "| tenants | run | wall | checkpoint MiB | API requests | reads | writes | by verb |\n|---|---|---|---|---|---|---|---|\n")
	for _, row := range rows {
		fmt.Fprintln(w, row)
	}
}

// verbList renders requests by verb, most first.
func verbList(byVerb map[string]int64) string {
	if len(byVerb) == 0 {
		return "–"
	}
	verbs := make([]string, 0, len(byVerb))
	for v := range byVerb {
		verbs = append(verbs, v)
	}
	sort.Slice(verbs, func(i, j int) bool {
		if byVerb[verbs[i]] != byVerb[verbs[j]] {
			return byVerb[verbs[i]] > byVerb[verbs[j]]
		}
		return verbs[i] < verbs[j]
	})
	parts := make([]string, len(verbs))
	for i, v := range verbs {
		parts[i] = fmt.Sprintf("%s %d", v, byVerb[v])
	}
	return strings.Join(parts, ", ")
}

// writeSizeRuns names, when the sizes were not all measured by one run,
// the binary, date, machine and load of each size.
func (r *Results) writeSizeRuns(w io.Writer, ns []int) {
	if len(r.ProvisionBy) == 0 {
		return
	}
	fmt.Fprintf(w, "\n### Who measured each size\n\n")
	fmt.Fprintf(w, "The machine is shared: its load averages (1, 5, 15 minutes) when the size's first run began and its last ended say how much else ran beside the benchmark.\n\n")
	fmt.Fprintf(w, "| tenants | binary | date | machine | load at start | load at end |\n|---|---|---|---|---|---|\n")
	for _, n := range ns {
		by := r.SizeRunOf(n)
		commit := "–"
		if by.Paddock != nil {
			commit = fmt.Sprintf("%.12s", by.Paddock.Commit)
		}
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s |\n", n, commit, by.Date, by.Machine, loadText(by.LoadStart), loadText(by.LoadEnd))
	}
}

// loadText renders load averages, or a dash for none.
func loadText(l []float64) string {
	if len(l) != 3 {
		return "–"
	}
	return fmt.Sprintf("%.2f, %.2f, %.2f", l[0], l[1], l[2])
}
