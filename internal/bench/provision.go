package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/paddock-platform/paddock/internal/render"
	"github.com/paddock-platform/paddock/internal/specload"
	"github.com/paddock-platform/paddock/schemas/specgen"
)

// Tools and operations the provisioning benchmark measures.
const (
	// ToolPaddock is the binary's default: since results format 4 the state
	// saved once at the end, with the run journal that makes it crash-safe.
	ToolPaddock = "paddock"
	// ToolPaddockEveryStep is paddock saving the state after every resource
	// (--checkpoints every-step), the opt-out; it was the default of the
	// binaries measured in formats before 4, whose "paddock" samples the
	// upgrade renames to it.
	ToolPaddockEveryStep = "paddock-every-step"
	// ToolPaddockFinal is --checkpoints final of the binaries before format
	// 4: the state saved once at the end, without a journal. Only older
	// results hold it.
	ToolPaddockFinal = "paddock-final"
	ToolKubectl      = "kubectl"
	ToolFloor        = "ssa-floor"

	OpCreate = "create"
	// OpApplyOnly is kubectl's or the floor's create until its last apply
	// returned, before the wait for the warm pools that OpCreate includes.
	OpApplyOnly = "apply only"
	OpNoop      = "no-op up"
	// OpNoopFull is a no-op `up --full`: the Pulumi refresh and update the
	// fast no-op skips, measured for contrast.
	OpNoopFull = "no-op up --full"
	OpDrift    = "drift"
	OpDestroy  = "destroy"
)

// Sample is one measured operation.
type Sample struct {
	Tool    string `json:"tool"`
	Op      string `json:"op"`
	Tenants int    `json:"tenants"`
	// Objects is how many Kubernetes objects the spec renders to; Resources
	// how many Pulumi resources paddock's stack holds (objects plus
	// components and the provider).
	Objects   int     `json:"objects"`
	Resources int     `json:"resources,omitempty"`
	Seconds   float64 `json:"seconds"`
	// PeakRSS is the peak resident memory per program of the tool's process
	// tree; TreePeakRSS the peak of their sum (none for the in-process floor).
	PeakRSS     map[string]int64 `json:"peakRssBytes,omitempty"`
	TreePeakRSS int64            `json:"treePeakRssBytes,omitempty"`
	// CPU is the CPU seconds each program used during the run (Run.CPU).
	CPU map[string]float64 `json:"cpuSeconds,omitempty"`
	// Phases is where a paddock run's time went (see Phases); none when the
	// run started no engine (a fast path) or logged no events.
	Phases map[string]float64 `json:"phases,omitempty"`
	// Summary is the line paddock printed to sum the run up (SummaryLine),
	// which is all there is to say where a run without an engine went.
	Summary string `json:"summary,omitempty"`
	// APIRequests are the requests the API server served during the run,
	// by verb (its apiserver_request_total before and after): the tool's
	// own and those of the controllers that reacted to it, the cluster's
	// background (kwok's leases, the controllers' resyncs) included.
	APIRequests map[string]int64 `json:"apiRequests,omitempty"`
	// CheckpointBytes is the size of paddock's state (the stack's Pulumi
	// checkpoint in the file backend) when the run ended.
	CheckpointBytes int64 `json:"checkpointBytes,omitempty"`
	// LoadAvg is the machine's 1, 5 and 15 minute load averages when the
	// run ended: the benchmark shares the machine with whatever else runs.
	LoadAvg []float64 `json:"loadAvg,omitempty"`
}

// ProvisionOptions configure Provision.
type ProvisionOptions struct {
	Paddock    string // the paddock binary
	Kubectl    string // the pinned kubectl
	Kubeconfig string // the running local cluster
	Env        []string
	Tenants    []int
	// EveryStepMax is the largest tenant count paddock is also measured at
	// with every-step checkpoints, whose cost grows with the square of the
	// platform's size (0 = all).
	EveryStepMax int
	// Full says the binary has `up --full`; FullMax is the largest tenant
	// count its no-op is measured at (0 = all): it is the whole Pulumi
	// refresh and update, minutes at 100 tenants.
	Full    bool
	FullMax int
	WorkDir string
	// StateDir is the file backend's directory paddock keeps its state in
	// ($PADDOCK_HOME/state), whose checkpoint size each paddock run
	// records; empty records none.
	StateDir string
	// Profile has each paddock run write a CPU profile of its own process
	// beside its event log (PADDOCK_CPU_PROFILE), for go tool pprof.
	Profile bool
	// PaddockOnly skips kubectl and the floors: paddock's own runs alone,
	// to re-measure a change to paddock against baselines measured before.
	PaddockOnly bool
	Out         io.Writer
}

var (
	summaryRe = regexp.MustCompile(`(?m)^paddock (?:up|destroy): (.*) in [0-9.]+m?s$`)
	countRe   = regexp.MustCompile(`(\d+) (created|updated|unchanged|deleted|replaced|same)`)
)

// resourcesOf sums the counts of paddock's summary line: the last line of
// that shape, printed after everything else the run reports.
func resourcesOf(out string) int {
	all := summaryRe.FindAllStringSubmatch(out, -1)
	if all == nil {
		return 0
	}
	m := all[len(all)-1]
	n := 0
	for _, c := range countRe.FindAllStringSubmatch(m[1], -1) {
		v, _ := strconv.Atoi(c[1])
		n += v
	}
	return n
}

// Provision measures, for each tenant count: paddock up (create), a second
// up (no-op), drift and destroy; kubectl apply --server-side of the same
// rendered objects; and the parallel server-side-apply Floor. Every create
// ends when the warm pools are Ready (see ready.go), and kubectl's and the
// floor's time to their last apply is kept as OpApplyOnly. Between tools
// the cluster is cleaned of the platform's objects and waited on, so every
// create starts from the same empty cluster.
func Provision(ctx context.Context, o ProvisionOptions) ([]Sample, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 100, 200
	cfg.WarningHandler = rest.NoWarnings{}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	requests := NewRequestCounter(kube.Discovery().RESTClient())
	var out []Sample
	for _, n := range o.Tenants {
		dir := filepath.Join(o.WorkDir, fmt.Sprintf("tenants-%d", n))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, "platform.hcl"), []byte(specgen.Generate(specgen.Options{Platform: "bench", Tenants: n})), 0o644); err != nil {
			return nil, err
		}
		p, err := specload.Load(dir, specload.Options{}, io.Discard)
		if err != nil {
			return nil, err
		}
		objs, err := render.All(p)
		if err != nil {
			return nil, err
		}
		// The local cluster's one kwok node holds about 100 tenants' pools.
		pods, err := poolPods(objs)
		if err != nil {
			return nil, err
		}
		if added, err := EnsureFakeNodes(ctx, kube, pods); err != nil {
			return out, err
		} else if added > 0 {
			fmt.Fprintf(o.Out, "bench: %d kwok node(s) added for %d pods (%d a node)\n", added, pods, PodsPerFakeNode)
		}
		sample := func(tool, op string, r *Run, resources int) Sample {
			s := Sample{Tool: tool, Op: op, Tenants: n, Objects: len(objs), Resources: resources, Seconds: r.Wall.Seconds(), PeakRSS: r.PeakRSS, TreePeakRSS: r.TreePeak, CPU: r.CPU}
			if r.PeakRSS == nil && r.CPU == nil {
				// Part of a run measured whole (apply only): its time alone.
				fmt.Fprintf(o.Out, "bench: %-9s %-8s %4d tenants %5d objects: %7.2fs\n", tool, op, n, len(objs), s.Seconds)
				return s
			}
			s.APIRequests, s.LoadAvg = r.APIRequests, LoadAverage()
			fmt.Fprintf(o.Out, "bench: %-9s %-8s %4d tenants %5d objects: %7.2fs  peak %s  cpu %s  requests %d  load %v\n", tool, op, n, len(objs), s.Seconds, r.PeakSummary(), r.CPUSummary(), TotalRequests(s.APIRequests), s.LoadAvg)
			return s
		}
		// measure is Measure with the API server's requests counted.
		measure := func(cmd *exec.Cmd) (*Run, error) {
			before := requests.Read(ctx)
			r, err := Measure(ctx, cmd)
			if r != nil {
				r.APIRequests = requestsDelta(before, requests.Read(ctx))
			}
			return r, err
		}

		for _, mode := range paddockModes(o, n) {
			resources := 0
			for _, op := range mode.ops {
				args := paddockArgs(op, dir)
				cmd := exec.CommandContext(ctx, o.Paddock, args...)
				events := filepath.Join(dir, mode.tool+"-"+strings.NewReplacer(" ", "-", "--", "").Replace(op)+".events.jsonl")
				_ = os.Remove(events)
				cmd.Env = paddockEnv(os.Environ(), o.Env, mode.tool, events)
				if o.Profile {
					cmd.Env = append(cmd.Env, "PADDOCK_CPU_PROFILE="+strings.TrimSuffix(events, ".events.jsonl")+".cpu.pprof")
				}
				began := time.Now()
				r, err := measure(cmd)
				if r != nil {
					r.renameProgram(filepath.Base(o.Paddock), "paddock")
				}
				if err != nil {
					return out, err
				}
				if op == OpCreate {
					resources = resourcesOf(r.Output)
				}
				smp := sample(mode.tool, op, r, resources)
				smp.Phases = Phases(events, began, r.Wall)
				smp.Summary = SummaryLine(r.Stdout, args[0])
				smp.CheckpointBytes = checkpointBytes(o.StateDir)
				fmt.Fprintf(o.Out, "bench:   %s (checkpoint %s)\n", smp.Summary, MiB(smp.CheckpointBytes))
				out = append(out, smp)
			}
			if err := clean(ctx, dyn, kube, objs); err != nil {
				return out, err
			}
		}

		if o.PaddockOnly {
			continue
		}
		// kubectl: the same objects, in the same two stages.
		first, rest := Stages(objs)
		firstFile, restFile := filepath.Join(dir, "stage1.yaml"), filepath.Join(dir, "stage2.yaml")
		for f, list := range map[string][]*unstructured.Unstructured{firstFile: first, restFile: rest} {
			fh, err := os.Create(f)
			if err != nil {
				return out, err
			}
			err = render.WriteYAML(fh, list)
			fh.Close()
			if err != nil {
				return out, err
			}
		}
		// Then it waits for the pools, as paddock's create does.
		waits, err := KubectlWaits(objs)
		if err != nil {
			return out, err
		}
		k := fmt.Sprintf("%q --kubeconfig %q", o.Kubectl, o.Kubeconfig)
		script := fmt.Sprintf("set -e; %s apply --server-side --force-conflicts -f %q >/dev/null; "+
			"%s wait --for condition=established --timeout=120s crd --all >/dev/null; "+
			"%s apply --server-side --force-conflicts -f %q >/dev/null; echo %s$(date +%%s.%%N)", k, firstFile, k, k, restFile, appliedMarker)
		for _, w := range waits {
			script += "; " + k
			for _, a := range w {
				script += " " + shellQuote(a)
			}
			script += " >/dev/null"
		}
		began := time.Now()
		r, err := measure(exec.CommandContext(ctx, "sh", "-c", script))
		if err != nil {
			return out, err
		}
		applied, err := appliedAt(r.Output)
		if err != nil {
			return out, err
		}
		out = append(out, sample(ToolKubectl, OpCreate, r, 0), sample(ToolKubectl, OpApplyOnly, &Run{Wall: applied.Sub(began)}, 0))
		if err := clean(ctx, dyn, kube, objs); err != nil {
			return out, err
		}

		// The floor, in this process (its own CPU is not told apart), then
		// the same wait for the pools.
		before := clusterCPU()
		reqBefore := requests.Read(ctx)
		began = time.Now()
		d, err := Floor(ctx, cfg, objs)
		if err != nil {
			return out, err
		}
		if err := WaitPoolsReady(ctx, dyn, objs, 100*time.Millisecond); err != nil {
			return out, fmt.Errorf("ssa floor: %w", err)
		}
		fr := &Run{Wall: time.Since(began), CPU: map[string]float64{}}
		fr.APIRequests = requestsDelta(reqBefore, requests.Read(ctx))
		for name, c := range clusterCPU() {
			if dc := c - before[name]; dc > 0 {
				fr.CPU[name] = dc
			}
		}
		out = append(out, sample(ToolFloor, OpCreate, fr, 0), sample(ToolFloor, OpApplyOnly, &Run{Wall: d}, 0))

		// The destroy floor deletes what the floor created, on the same
		// cluster paddock's destroy ran on.
		before = clusterCPU()
		reqBefore = requests.Read(ctx)
		d, err = FloorDestroy(ctx, cfg, objs)
		if err != nil {
			return out, err
		}
		fr = &Run{Wall: d, CPU: map[string]float64{}, APIRequests: requestsDelta(reqBefore, requests.Read(ctx))}
		for name, c := range clusterCPU() {
			if dc := c - before[name]; dc > 0 {
				fr.CPU[name] = dc
			}
		}
		out = append(out, sample(ToolFloor, OpDestroy, fr, 0))
		if err := clean(ctx, dyn, kube, objs); err != nil {
			return out, err
		}
	}
	return out, nil
}

// paddockMode is one way paddock is run (its tool name) and the operations
// measured that way, in order.
type paddockMode struct {
	tool string
	ops  []string
}

// paddockModes are the paddock runs at n tenants: the default's create,
// no-op up, drift, the no-op's Pulumi path (--full, where the binary has it,
// up to FullMax) for contrast, and destroy; then every-step checkpoints'
// create and destroy, up to EveryStepMax.
func paddockModes(o ProvisionOptions, n int) []paddockMode {
	def := paddockMode{ToolPaddock, []string{OpCreate, OpNoop, OpDrift}}
	if o.Full && (o.FullMax == 0 || n <= o.FullMax) {
		def.ops = append(def.ops, OpNoopFull)
	}
	def.ops = append(def.ops, OpDestroy)
	modes := []paddockMode{def}
	if o.EveryStepMax == 0 || n <= o.EveryStepMax {
		modes = append(modes, paddockMode{ToolPaddockEveryStep, []string{OpCreate, OpDestroy}})
	}
	return modes
}

// paddockArgs is the command line of op on the spec in dir.
func paddockArgs(op, dir string) []string {
	return map[string][]string{
		OpCreate: {"up", dir}, OpNoop: {"up", dir}, OpNoopFull: {"up", "--full", dir}, OpDrift: {"drift", dir}, OpDestroy: {"destroy", dir},
	}[op]
}

// paddockEnv is the environment of a run of tool: the caller's without any
// checkpoints choice (the default is the binary's own), the benchmark's,
// the engine's event log, and every-step checkpoints for that tool.
func paddockEnv(base, extra []string, tool, events string) []string {
	env := append(append(envWithout(base, checkpointsEnv), extra...), "PADDOCK_EVENT_LOG="+events)
	if tool == ToolPaddockEveryStep {
		env = append(env, checkpointsEnv+"=every-step")
	}
	return env
}

// checkpointsEnv chooses paddock's checkpoints (engine.CheckpointsEnv); the
// default is measured with it unset, whatever the caller's environment says.
const checkpointsEnv = "PADDOCK_CHECKPOINTS"

// envWithout is env without the variable name.
func envWithout(env []string, name string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, name+"=") {
			out = append(out, e)
		}
	}
	return out
}

// SummaryLine is the line of a paddock command's standard output that sums
// the run up: the last "paddock VERB: ..." line other than the header that
// names the platform (up and destroy print the engine's counts there, a
// fast path what it checked), or else the last line printed (drift's
// verdict). Outputs printed after it are skipped.
func SummaryLine(stdout, verb string) string {
	prefix := "paddock " + verb + ": "
	var last, summary string
	for _, line := range strings.Split(stdout, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		last = line
		if rest, ok := strings.CutPrefix(line, prefix); ok && !strings.HasPrefix(rest, "platform ") {
			summary = line
		}
	}
	if summary != "" {
		return summary
	}
	return last
}

// appliedMarker prefixes the time the kubectl script's last apply returned.
const appliedMarker = "paddock-bench-applied-at="

// appliedAt reads that time from the script's output.
func appliedAt(output string) (time.Time, error) {
	for _, line := range strings.Split(output, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), appliedMarker); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("kubectl run: bad apply time %q", v)
			}
			sec := int64(f)
			return time.Unix(sec, int64((f-float64(sec))*1e9)), nil
		}
	}
	return time.Time{}, fmt.Errorf("kubectl run: no %s line in its output", appliedMarker)
}

// shellQuote quotes one argument for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// clean deletes the rendered objects a kubectl or floor run created (the
// namespaced ones go with their namespaces) and waits until the namespaces
// and CRDs are gone, so the next run starts from an empty cluster.
func clean(ctx context.Context, dyn dynamic.Interface, kube kubernetes.Interface, objs []*unstructured.Unstructured) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	lists, err := kube.Discovery().ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return err
	}
	gvr := map[schema.GroupKind]schema.GroupVersionResource{}
	for _, l := range lists {
		gv, _ := schema.ParseGroupVersion(l.GroupVersion)
		for _, r := range l.APIResources {
			if !strings.Contains(r.Name, "/") {
				gvr[schema.GroupKind{Group: gv.Group, Kind: r.Kind}] = gv.WithResource(r.Name)
			}
		}
	}
	policy := metav1.DeletePropagationBackground
	var waitFor []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetNamespace() != "" {
			continue
		}
		res, ok := gvr[o.GroupVersionKind().GroupKind()]
		if !ok {
			continue
		}
		err := dyn.Resource(res).Delete(ctx, o.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("cleaning %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		if o.GetKind() == "Namespace" || o.GetKind() == "CustomResourceDefinition" {
			waitFor = append(waitFor, o)
		}
	}
	for _, o := range waitFor {
		res := gvr[o.GroupVersionKind().GroupKind()]
		for {
			_, err := dyn.Resource(res).Get(ctx, o.GetName(), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s %s still there after cleaning: %w", o.GetKind(), o.GetName(), ctx.Err())
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}
