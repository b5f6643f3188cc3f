package bench

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-platform/paddock/internal/render"
	"github.com/paddock-platform/paddock/internal/specload"
	"github.com/paddock-platform/paddock/schemas/specgen"
)

func TestFitLine(t *testing.T) {
	f := fitLine([]float64{1, 10, 50, 100}, []float64{3, 12, 52, 102})
	if math.Abs(f.PerTenant-1) > 1e-9 || math.Abs(f.Intercept-2) > 1e-9 || math.Abs(f.R2-1) > 1e-9 {
		t.Errorf("a perfect line: got %+v", f)
	}
	curved := fitLine([]float64{1, 10, 50, 100}, []float64{1, 100, 2500, 10000})
	if curved.R2 > 0.98 {
		t.Errorf("a quadratic must not pass as linear: R² %.3f", curved.R2)
	}
}

func TestPercentile(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if got := Percentile(s, 50); got != 5 {
		t.Errorf("P50 = %v, want 5", got)
	}
	if got := Percentile(s, 95); got != 10 {
		t.Errorf("P95 = %v, want 10", got)
	}
	if got := Percentile(nil, 50); got != 0 {
		t.Errorf("P50 of nothing = %v", got)
	}
}

func TestResourcesOfSummaryLine(t *testing.T) {
	out := "paddock up: platform \"b\"\n  ✓ create ...\npaddock up: 15 created, 31 unchanged in 20.0s\n"
	if got := resourcesOf(out); got != 46 {
		t.Errorf("resources = %d, want 46", got)
	}
	// A line reporting in the run's own words before the summary (the post-up
	// comparison said "... in 0.6s" once) is not the summary.
	out = "paddock up: platform \"b\"\npaddock up: compared 46 objects (2 created forms) in 0.6s\npaddock up: 15 created, 31 unchanged in 20.0s\n"
	if got := resourcesOf(out); got != 46 {
		t.Errorf("resources with an earlier summary-shaped line = %d, want 46", got)
	}
	if got := resourcesOf("no summary"); got != 0 {
		t.Errorf("resources of no summary = %d", got)
	}
}

// The generated specs are valid platforms of the size asked for, and render
// the full set of objects per tenant.
func TestGeneratedSpecsLoadAndScale(t *testing.T) {
	counts := map[int]int{}
	for _, n := range []int{1, 3} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "platform.hcl"), []byte(specgen.Generate(specgen.Options{Platform: "gen", Tenants: n, ColdPool: true})), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := specload.Load(dir, specload.Options{}, os.Stderr)
		if err != nil {
			t.Fatalf("%d tenants: %v", n, err)
		}
		if len(p.Tenants) != n {
			t.Fatalf("%d tenants: loaded %d", n, len(p.Tenants))
		}
		objs, err := render.All(p)
		if err != nil {
			t.Fatal(err)
		}
		counts[n] = len(objs)
		kinds := map[string]bool{}
		for _, o := range objs {
			kinds[o.GetKind()] = true
		}
		for _, k := range []string{"Namespace", "ResourceQuota", "LimitRange", "ServiceAccount", "Role", "RoleBinding", "NetworkPolicy", "CiliumNetworkPolicy", "SandboxTemplate", "SandboxWarmPool"} {
			if !kinds[k] {
				t.Errorf("%d tenants: no %s rendered", n, k)
			}
		}
	}
	per := (counts[3] - counts[1]) / 2
	if per < 10 || counts[3]-counts[1] != 2*per {
		t.Errorf("objects per tenant not constant: 1 tenant %d, 3 tenants %d", counts[1], counts[3])
	}
	spec, lines := specgen.OfLines(5000)
	if lines < 5000 || lines > 5200 || strings.Count(spec, "\n") != lines {
		t.Errorf("specgen.OfLines(5000) gave %d lines", lines)
	}
}

func TestStagesPutDependenciesFirst(t *testing.T) {
	mk := func(kind, ns string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetKind(kind)
		u.SetName("x")
		u.SetNamespace(ns)
		return u
	}
	first, rest := Stages([]*unstructured.Unstructured{mk("Role", "a"), mk("Namespace", ""), mk("CustomResourceDefinition", ""), mk("SandboxTemplate", "a")})
	if len(first) != 2 || len(rest) != 2 || first[0].GetKind() != "Namespace" || rest[1].GetKind() != "SandboxTemplate" {
		t.Errorf("stages: first %v, rest %v", first, rest)
	}
}

func TestPhasesFromEventLog(t *testing.T) {
	dir := t.TempDir()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) string {
		return start.Add(time.Duration(s * float64(time.Second))).Format(time.RFC3339Nano)
	}
	log := strings.Join([]string{
		`{"t":"` + at(2) + `","ev":{"preludeEvent":{}}}`,
		`{"t":"` + at(3) + `","ev":{"resourcePreEvent":{"metadata":{"op":"refresh"}}}}`,
		`{"t":"` + at(5) + `","ev":{"resOutputsEvent":{"metadata":{"op":"refresh"}}}}`,
		`{"t":"` + at(6) + `","ev":{"resourcePreEvent":{"metadata":{"op":"same"}}}}`,
		`{"t":"` + at(9) + `","ev":{"summaryEvent":{}}}`,
	}, "\n")
	f := filepath.Join(dir, "ev.jsonl")
	if err := os.WriteFile(f, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	ph := Phases(f, start, 10*time.Second)
	want := map[string]float64{"start": 2, "refresh": 3, "update": 4, "finish": 1}
	for k, v := range want {
		if math.Abs(ph[k]-v) > 1e-6 {
			t.Errorf("phase %s = %v, want %v (all: %v)", k, ph[k], v, ph)
		}
	}
}

// Measure samples the memory and CPU of the whole process tree.
func TestMeasureSeesChildren(t *testing.T) {
	r, err := Measure(t.Context(), execCommand("sh", "-c", "sleep 0.3 & i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; wait"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Wall < 300*time.Millisecond {
		t.Errorf("wall %s shorter than the child's sleep", r.Wall)
	}
	if r.PeakRSS["sleep"] == 0 {
		t.Errorf("the grandchild sleep was not sampled: %v", r.PeakRSS)
	}
	if r.CPU["sh"] <= 0 {
		t.Errorf("no CPU time for the busy shell: %v", r.CPU)
	}
}

var execCommand = exec.Command

// Format 1 counted the Pulumi CLI and provider into paddock's CPU.
func TestUpgradeSeparatesPaddocksOwnCPU(t *testing.T) {
	r := &Results{Provision: []Sample{{Tool: ToolPaddock, CPU: map[string]float64{"paddock": 14, "pulumi": 8, "pulumi-resource-kubernetes": 4}}}}
	r.Upgrade()
	if got := r.Provision[0].CPU["paddock"]; math.Abs(got-2) > 1e-9 {
		t.Errorf("paddock's own CPU = %v, want 2", got)
	}
	r.Upgrade() // idempotent once upgraded
	if got := r.Provision[0].CPU["paddock"]; math.Abs(got-2) > 1e-9 || r.Format != ResultsFormat {
		t.Errorf("a second upgrade changed it: %v (format %d)", got, r.Format)
	}
}
