package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/paddock-platform/paddock/schemas/specgen"
)

// The fleet benchmark: `paddock drift --all` over one project of N stacks,
// each its own platform of one tenant, all on the benchmark's cluster.

// FleetRun is `paddock drift --all` over a project of Stacks stacks.
type FleetRun struct {
	Stacks int `json:"stacks"`
	// Sweep says the stacks' sweeps ran (the command's default); false is
	// --no-sweep, the comparison of each stack with the cluster alone.
	Sweep bool `json:"sweep"`
	// Seconds is the median of Runs, each the whole command, wall.
	Seconds float64   `json:"seconds"`
	Runs    []float64 `json:"runs"`
	// Parallel is how many stacks the command checked at once.
	Parallel int `json:"parallel"`
	// Resources is how many resources the stacks compared, all together.
	Resources int `json:"resources"`
	// Clean and Drifted count the stacks of the last run by their status
	// (a stack that could not be checked fails the benchmark).
	Clean   int `json:"clean"`
	Drifted int `json:"drifted"`
	// TreePeakRSS is the highest memory of the command's process tree over
	// the runs.
	TreePeakRSS int64 `json:"treePeakRssBytes,omitempty"`
	// LoadStart and LoadEnd are the machine's load averages (1, 5, 15
	// min) before the first run and after the last: the machine is shared.
	LoadStart []float64 `json:"loadAvgStart,omitempty"`
	LoadEnd   []float64 `json:"loadAvgEnd,omitempty"`
}

// PerStack is the median's share of one stack.
func (f FleetRun) PerStack() float64 {
	if f.Stacks == 0 {
		return 0
	}
	return f.Seconds / float64(f.Stacks)
}

// FleetPlatform is the platform every stack of the fleet provisions. The
// Agent Sandbox release and the runtime class are the cluster's, and every
// stack declares them: under one platform name they declare them alike,
// while each stack's tenant (FleetStackName) is its own.
const FleetPlatform = "fleet"

// FleetProjectName is the Pulumi project of the fleet.
const FleetProjectName = "paddock-fleet-bench"

// FleetStackName is the name of stack i (from 0) of the fleet.
func FleetStackName(i int) string { return fmt.Sprintf("fleet-%02d", i+1) }

// WriteFleetProject makes dir a Pulumi project of n stacks, each with its
// config file (stacks/Pulumi.<stack>.yaml) naming its own spec
// (specs/<stack>): the platform FleetPlatform with one tenant, tenant i for
// stack i, so no two stacks hold the same tenant namespace. Stacks already
// written are left as they are, so the project grows from one count to the
// next; it returns the stacks it added.
func WriteFleetProject(dir string, n int) ([]string, error) {
	if err := os.MkdirAll(filepath.Join(dir, "stacks"), 0o755); err != nil {
		return nil, err
	}
	project := filepath.Join(dir, "Pulumi.yaml")
	if _, err := os.Stat(project); os.IsNotExist(err) {
		text := "# Written by paddock-bench: the fleet of `paddock drift --all`.\n" +
			"name: " + FleetProjectName + "\nruntime: go\nstackConfigDir: stacks\n"
		if err := os.WriteFile(project, []byte(text), 0o644); err != nil {
			return nil, err
		}
	}
	var added []string
	for i := 0; i < n; i++ {
		stack := FleetStackName(i)
		file := filepath.Join(dir, "stacks", "Pulumi."+stack+".yaml")
		if _, err := os.Stat(file); err == nil {
			continue
		}
		spec := filepath.Join(dir, "specs", stack)
		if err := os.MkdirAll(spec, 0o755); err != nil {
			return added, err
		}
		hcl := specgen.Generate(specgen.Options{Platform: FleetPlatform, Tenants: 1, FirstTenant: i})
		if err := os.WriteFile(filepath.Join(spec, "platform.hcl"), []byte(hcl), 0o644); err != nil {
			return added, err
		}
		if err := os.WriteFile(file, []byte("config:\n  paddock:spec: specs/"+stack+"\n"), 0o644); err != nil {
			return added, err
		}
		added = append(added, stack)
	}
	return added, nil
}

// FleetOutcome is what one `drift --all --format json` reported.
type FleetOutcome struct {
	Stacks, Clean, Drifted, Errors int
	// Resources is how many resources the stacks compared, all together.
	Resources int
	Parallel  int
	// Exit is the exit status the report announces.
	Exit int
	// Failed names each stack that could not be checked, with why.
	Failed []string
}

// ParseFleet reads the JSON report of `paddock drift --all --format json`.
func ParseFleet(stdout []byte) (FleetOutcome, error) {
	var rep struct {
		Stacks []struct {
			Stack  string `json:"stack"`
			Status string `json:"status"`
			Error  string `json:"error"`
			Report *struct {
				Checked int `json:"checkedResources"`
			} `json:"report"`
		} `json:"stacks"`
		Parallel int  `json:"parallel"`
		Exit     *int `json:"exitCode"`
	}
	if err := json.Unmarshal(stdout, &rep); err != nil {
		return FleetOutcome{}, fmt.Errorf("drift --all JSON: %w", err)
	}
	if rep.Exit == nil {
		return FleetOutcome{}, errors.New("drift --all JSON: no exitCode: not the report of `paddock drift --all`")
	}
	o := FleetOutcome{Stacks: len(rep.Stacks), Parallel: rep.Parallel, Exit: *rep.Exit}
	for _, s := range rep.Stacks {
		switch s.Status {
		case "clean":
			o.Clean++
		case "drifted":
			o.Drifted++
		default:
			o.Errors++
			o.Failed = append(o.Failed, s.Stack+": "+oneLine(s.Error))
		}
		if s.Report != nil {
			o.Resources += s.Report.Checked
		}
	}
	return o, nil
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// FleetOptions configure Fleet.
type FleetOptions struct {
	Paddock string   // the paddock binary
	Env     []string // the benchmark's (PADDOCK_HOME), over the caller's
	// Stacks are the fleet sizes, each measured once every stack up to it
	// is provisioned.
	Stacks []int
	// Runs is how many times `drift --all` runs per size and mode (the
	// median is kept; 0 = 3).
	Runs int
	// Dir is the project's directory.
	Dir string
	Out io.Writer
}

// Fleet provisions the stacks of a project one after the other, growing it
// to each size of o.Stacks, and times `paddock drift --all` over it at each
// size: with the sweeps (the default) and with --no-sweep. Without the
// sweeps every stack must be clean: anything else means the stacks do not
// hold what they declared, and the figures would time another path. The
// stacks are left provisioned: the cluster is the benchmark's, and goes
// with it.
func Fleet(ctx context.Context, o FleetOptions) ([]FleetRun, error) {
	if o.Runs == 0 {
		o.Runs = 3
	}
	counts := append([]int(nil), o.Stacks...)
	sort.Ints(counts)
	env := append(os.Environ(), o.Env...)
	var out []FleetRun
	for _, n := range counts {
		added, err := WriteFleetProject(o.Dir, n)
		if err != nil {
			return out, err
		}
		for _, stack := range added {
			cmd := exec.CommandContext(ctx, o.Paddock, "up", "--stack", stack, "--project-dir", o.Dir)
			cmd.Dir, cmd.Env = o.Dir, env
			r, err := Measure(ctx, cmd)
			if err != nil {
				return out, fmt.Errorf("fleet: up of stack %s: %w", stack, err)
			}
			fmt.Fprintf(o.Out, "bench: fleet up --stack %s: %.2fs: %s\n", stack, r.Wall.Seconds(), SummaryLine(r.Stdout, "up"))
		}
		for _, sweep := range []bool{true, false} {
			args := []string{"drift", "--all", "--format", "json", "--project-dir", o.Dir}
			if !sweep {
				args = append(args, "--no-sweep")
			}
			run := FleetRun{Stacks: n, Sweep: sweep, LoadStart: LoadAverage()}
			command := func() *exec.Cmd {
				cmd := exec.CommandContext(ctx, o.Paddock, args...)
				cmd.Dir, cmd.Env = o.Dir, env
				return cmd
			}
			rep, err := repeat(ctx, o.Runs, command, func(cmd *exec.Cmd, r *Run, _ error) error {
				// drift exits 2 when a stack drifted: judged from its report.
				outcome, perr := ParseFleet([]byte(r.Stdout))
				switch code := cmd.ProcessState.ExitCode(); {
				case perr != nil:
					return fmt.Errorf("fleet: paddock %s: exit %d: %v\n%s", strings.Join(args, " "), code, perr, tailLines(r.Output, 25))
				case outcome.Errors > 0 || code == 1:
					return fmt.Errorf("fleet: paddock %s: %d of %d stacks could not be checked: %s", strings.Join(args, " "), outcome.Errors, outcome.Stacks, strings.Join(outcome.Failed, "; "))
				case outcome.Stacks != n:
					return fmt.Errorf("fleet: paddock %s checked %d stacks, the project has %d", strings.Join(args, " "), outcome.Stacks, n)
				case !sweep && outcome.Drifted > 0:
					return fmt.Errorf("fleet: paddock %s: %d of %d stacks drifted without any edit: the stacks do not hold what they declared\n%s", strings.Join(args, " "), outcome.Drifted, n, tailLines(r.Stdout, 40))
				}
				run.Parallel, run.Resources, run.Clean, run.Drifted = outcome.Parallel, outcome.Resources, outcome.Clean, outcome.Drifted
				return nil
			})
			if err != nil {
				return out, err
			}
			run.Runs, run.TreePeakRSS, run.LoadEnd = rep.runs, rep.treePeak, LoadAverage()
			run.Seconds = median(run.Runs)
			fmt.Fprintf(o.Out, "bench: fleet drift --all%s %3d stacks: %.2fs median (%.2fs a stack), %d clean, %d drifted, %d resources, tree peak %s, load %s → %s\n",
				map[bool]string{true: "", false: " --no-sweep"}[sweep], n, run.Seconds, run.PerStack(), run.Clean, run.Drifted, run.Resources, MiB(run.TreePeakRSS), loadText(run.LoadStart), loadText(run.LoadEnd))
			out = append(out, run)
		}
	}
	return out, nil
}

// FindFleet is the run of n stacks in the mode asked.
func (r *Results) FindFleet(n int, sweep bool) (FleetRun, bool) {
	for _, f := range r.Fleet {
		if f.Stacks == n && f.Sweep == sweep {
			return f, true
		}
	}
	return FleetRun{}, false
}

// FleetGrowth says how the time of `drift --all` grows with the stacks:
// the line through the medians of the mode (seconds = a + b × stacks) and
// the seconds a stack at the smallest and the largest size.
func FleetGrowth(runs []FleetRun, sweep bool) string {
	var xs, ys []float64
	var pts []FleetRun
	for _, f := range runs {
		if f.Sweep == sweep {
			xs, ys = append(xs, float64(f.Stacks)), append(ys, f.Seconds)
			pts = append(pts, f)
		}
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].Stacks < pts[j].Stacks })
	switch {
	case len(pts) == 0:
		return "not measured"
	case len(pts) == 1 || pts[0].Stacks == pts[len(pts)-1].Stacks:
		return fmt.Sprintf("one size measured (%s): nothing to say of how it grows", stacksText(pts[0].Stacks))
	}
	first, last := pts[0], pts[len(pts)-1]
	fit := fitLine(xs, ys)
	shape := "about linear"
	if len(pts) > 2 && fit.R2 < 0.95 {
		shape = fmt.Sprintf("not a straight line (R² %.2f)", fit.R2)
	} else if len(pts) > 2 {
		shape += fmt.Sprintf(" (R² %.3f)", fit.R2)
	}
	trend := "falls"
	switch ratio := last.PerStack() / first.PerStack(); {
	case first.PerStack() <= 0:
		trend = "cannot be compared"
	case ratio > 1.1:
		trend = "rises"
	case ratio >= 0.9:
		trend = "stays about the same"
	}
	return fmt.Sprintf("%.2f s + %.2f s × stacks, %s: from %s to %s, the time per stack %s (%.2f s → %.2f s)",
		fit.Intercept, fit.PerTenant, shape, stacksText(first.Stacks), stacksText(last.Stacks), trend, first.PerStack(), last.PerStack())
}

// stacksText is "1 stack", "10 stacks".
func stacksText(n int) string {
	if n == 1 {
		return "1 stack"
	}
	return fmt.Sprintf("%d stacks", n)
}

// fleetStacks are the sizes the fleet was measured at.
func (r *Results) fleetStacks() []int {
	seen := map[int]bool{}
	var out []int
	for _, f := range r.Fleet {
		if !seen[f.Stacks] {
			seen[f.Stacks] = true
			out = append(out, f.Stacks)
		}
	}
	sort.Ints(out)
	return out
}

// writeFleet is the report's section on `drift --all`.
func (r *Results) writeFleet(w io.Writer) {
	fmt.Fprintf(w, "\n## Fleet drift (`paddock drift --all`)\n\n%s", r.measuredLine(SectionFleet))
	parallel := 0
	for _, f := range r.Fleet {
		parallel = max(parallel, f.Parallel)
	}
	fmt.Fprintf(w, "One Pulumi project of N stacks on the benchmark's cluster, each with its config file naming its own spec: the platform %q with one tenant, its own namespace. ", FleetPlatform)
	fmt.Fprintf(w, "The stacks are provisioned one after the other; then `paddock drift --all` checks them, up to %d at once, run %d times at each size (the median is shown), seconds, wall, the command's start included. ", parallel, fleetRunsOf(r.Fleet))
	fmt.Fprintf(w, "*--no-sweep* compares each stack with the cluster and nothing more; every stack must be clean there, or the benchmark stops. ")
	fmt.Fprintf(w, "The stacks share the cluster's Agent Sandbox release and runtime class, which each of them declares, so they share the platform's name (its label) too, or each `up` would relabel what the others declared: ")
	fmt.Fprintf(w, "with the sweep, a stack's S05 (objects labelled as the platform's that its stack does not hold) counts what the project's other stacks hold as held, so an untouched fleet reads clean (the *reported clean / drifted* column is what the last run said).\n\n")
	fmt.Fprintf(w, "The machine is shared with other work: the last column is its load average (1, 5, 15 min) before the size's first run and after its last.\n\n")
	fmt.Fprintf(w, "| stacks | resources compared | drift --all | a stack | reported clean / drifted | --no-sweep | a stack | peak MiB (whole tree) | load average |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, n := range r.fleetStacks() {
		sw, okSw := r.FindFleet(n, true)
		ns, okNs := r.FindFleet(n, false)
		resources := sw.Resources
		if !okSw {
			resources = ns.Resources
		}
		cell := func(f FleetRun, ok bool) (string, string) {
			if !ok {
				return "–", "–"
			}
			return fmt.Sprintf("%.2f", f.Seconds), fmt.Sprintf("%.2f", f.PerStack())
		}
		a, aPer := cell(sw, okSw)
		b, bPer := cell(ns, okNs)
		verdict := "–"
		if okSw {
			verdict = fmt.Sprintf("%d / %d", sw.Clean, sw.Drifted)
		}
		fmt.Fprintf(w, "| %d | %d | %s | %s | %s | %s | %s | %s | %s |\n", n, resources, a, aPer, verdict, b, bPer, mib(max(sw.TreePeakRSS, ns.TreePeakRSS)), fleetLoad(sw, okSw, ns, okNs))
	}
	fmt.Fprintf(w, "\nHow the time grows with the stacks:\n\n- `drift --all`: %s.\n- `drift --all --no-sweep`: %s.\n", FleetGrowth(r.Fleet, true), FleetGrowth(r.Fleet, false))
}

// fleetLoad is a size's load averages, before its first run (with the
// sweep, which runs first) and after its last (--no-sweep), or a dash
// where the runs did not record them.
func fleetLoad(sw FleetRun, okSw bool, ns FleetRun, okNs bool) string {
	var start, end []float64
	if okSw {
		start, end = sw.LoadStart, sw.LoadEnd
	}
	if okNs {
		if start == nil {
			start = ns.LoadStart
		}
		end = ns.LoadEnd
	}
	if start == nil && end == nil {
		return "–"
	}
	return loadText(start) + " → " + loadText(end)
}

// fleetRunsOf is how many runs each figure is the median of.
func fleetRunsOf(runs []FleetRun) int {
	n := 0
	for _, f := range runs {
		n = max(n, len(f.Runs))
	}
	return n
}

// CarryFleet keeps the fleet figures of old in res when this run did not
// measure the fleet, with who measured them, and says so in the notes; it
// reports whether it did.
func CarryFleet(res, old *Results) bool {
	if old == nil || len(old.Fleet) == 0 || old.Paddock == nil || len(res.Fleet) > 0 {
		return false
	}
	m := old.MeasuredOf(SectionFleet)
	res.Fleet = old.Fleet
	if res.MeasuredBy == nil {
		res.MeasuredBy = map[string]Measured{}
	}
	res.MeasuredBy[SectionFleet] = m
	res.Notes = append(res.Notes, fmt.Sprintf("Fleet drift: not measured by this run (no -fleet); the figures below are carried over from binary %.12s (%s).", m.Paddock.Commit, m.Date))
	return true
}
