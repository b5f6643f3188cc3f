package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const metricsBefore = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="namespaces",scope="resource",subresource="",verb="GET",version="v1"} 10
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="namespaces",scope="resource",subresource="",verb="APPLY",version="v1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="cluster",subresource="",verb="LIST",version="v1"} 2
apiserver_request_duration_seconds_count{verb="GET"} 99
apiserver_request_total_other{verb="GET"} 7
`

const metricsAfter = `apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="namespaces",scope="resource",subresource="",verb="GET",version="v1"} 25
apiserver_request_total{code="404",component="apiserver",dry_run="",group="",resource="namespaces",scope="resource",subresource="",verb="GET",version="v1"} 3
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="namespaces",scope="resource",subresource="",verb="APPLY",version="v1"} 1004 1796524400000
apiserver_request_total{code="200",component="apiserver",dry_run="",group="apps",resource="deployments",scope="cluster",subresource="",verb="LIST",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="DELETE",version="v1"} 5
`

func TestRequestsCountedByVerb(t *testing.T) {
	before, after := requestTotals(metricsBefore), requestTotals(metricsAfter)
	if before["GET"] != 10 || before["APPLY"] != 4 || before["LIST"] != 2 || len(before) != 3 {
		t.Errorf("before: %v (other metrics must not count)", before)
	}
	got := requestsDelta(before, after)
	want := map[string]int64{"GET": 18, "APPLY": 1000, "DELETE": 5}
	if len(got) != len(want) {
		t.Errorf("delta %v, want %v (a verb that did not move is left out)", got, want)
	}
	for verb, n := range want {
		if got[verb] != n {
			t.Errorf("%s: %d, want %d", verb, got[verb], n)
		}
	}
	if TotalRequests(got) != 1023 {
		t.Errorf("total %d, want 1023", TotalRequests(got))
	}
	if requestsDelta(nil, after) != nil {
		t.Error("a missing reading gave a count")
	}
	if s := verbList(got); s != "APPLY 1000, GET 18, DELETE 5" {
		t.Errorf("verbList: %q", s)
	}
}

func TestCheckpointBytesCountsOnlyTheStacks(t *testing.T) {
	dir := t.TempDir()
	stacks := filepath.Join(dir, ".pulumi", "stacks", "paddock")
	if err := os.MkdirAll(stacks, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, size := range map[string]int{"bench.json": 1000, "bench.json.bak": 900, "bench.json.attrs": 50, "other.json.gz": 24} {
		if err := os.WriteFile(filepath.Join(stacks, name), []byte(strings.Repeat("x", size)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := checkpointBytes(dir); got != 1024 {
		t.Errorf("checkpointBytes = %d, want 1024 (the stacks, not their backups)", got)
	}
	if got := checkpointBytes(""); got != 0 {
		t.Errorf("no state directory: %d", got)
	}
}

func TestFakeNodesForThePools(t *testing.T) {
	for pods, want := range map[int64]int{0: 0, 1: 1, 100: 1, 101: 2, 1000: 10} {
		if got := fakeNodesFor(pods); got != want {
			t.Errorf("fakeNodesFor(%d) = %d, want %d", pods, got, want)
		}
	}
	tmpl := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "paddock-gvisor-0", ResourceVersion: "12",
			Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": "paddock-gvisor-0", "sandbox.gke.io/runtime": "gvisor"},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "kwok.x-k8s.io/status": "custom"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{
			{Key: "sandbox.gke.io/runtime", Value: "gvisor", Effect: corev1.TaintEffectNoSchedule},
			{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute},
		}},
		Status: corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}},
	}
	n := cloneFakeNode(tmpl, "paddock-gvisor-0-bench-1")
	if n.Labels["kubernetes.io/hostname"] != n.Name || n.Labels["sandbox.gke.io/runtime"] != "gvisor" || n.ResourceVersion != "" {
		t.Errorf("clone's metadata: %+v", n.ObjectMeta)
	}
	if n.Annotations["kwok.x-k8s.io/node"] != "fake" || len(n.Annotations) != 1 {
		t.Errorf("clone's annotations: %v (kwok must manage it, nothing else copied)", n.Annotations)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "sandbox.gke.io/runtime" {
		t.Errorf("clone's taints: %v (the runtime's kept, the lifecycle's dropped)", n.Spec.Taints)
	}
	if q := n.Status.Capacity[corev1.ResourcePods]; q.Value() != 110 {
		t.Errorf("clone's pods capacity %v", q)
	}
	if tmpl.Labels["kubernetes.io/hostname"] != "paddock-gvisor-0" {
		t.Error("the template was changed")
	}
}

// A run at some sizes keeps the other sizes of the results it replaces,
// each named with the binary that measured it; a size it measures replaces
// the old one.
func TestCarrySizesKeepsOtherSizesWithTheirBinary(t *testing.T) {
	old := format4()
	old.ProvisionBy = []SizeRun{{Tenants: 100, Paddock: &Build{Commit: "aaaaaaaaaaaa", SHA256: "x"}, Date: "d100", Machine: "m100"}}
	r := &Results{Paddock: &Build{Commit: "bbbbbbbbbbbb", SHA256: "y"}, Date: "now", Machine: "here"}
	carried := r.CarrySizes(old, []int{10, 1000})
	if len(carried) != 2 || carried[0] != 1 || carried[1] != 100 {
		t.Fatalf("carried %v, want [1 100]", carried)
	}
	for _, s := range r.Provision {
		if s.Tenants == 10 || s.Tenants == 1000 {
			t.Errorf("carried a size the run measures: %+v", s)
		}
	}
	if got := r.SizeRunOf(100); got.Paddock.Commit != "aaaaaaaaaaaa" || got.Machine != "m100" {
		t.Errorf("100 tenants named %+v, want its own binary and machine", got)
	}
	if got := r.SizeRunOf(1); got.Paddock.Commit != "fedcba987654" || got.Machine != "test" {
		t.Errorf("1 tenant named %+v, want the old run's binary and machine", got)
	}
	if len(r.Notes) != 2 || !strings.Contains(r.Notes[1], "100 tenants") || !strings.Contains(r.Notes[1], "aaaaaaaaaaaa") {
		t.Errorf("notes %q", r.Notes)
	}
	if (&Results{}).CarrySizes(&Results{Provision: old.Provision}, nil) != nil {
		t.Error("carried figures of results that name no binary")
	}
}

// A binary measured under another name (paddock-<commit>) is reported as
// paddock, where the tables read it.
func TestMeasuredBinaryReportedAsPaddock(t *testing.T) {
	r := &Run{PeakRSS: map[string]int64{"paddock-01ac55ef83c2": 900, "pulumi": 3000}, CPU: map[string]float64{"paddock-01ac55ef83c2": 87.8, "pulumi": 166}}
	r.renameProgram("paddock-01ac55ef83c2", "paddock")
	if r.PeakRSS["paddock"] != 900 || r.CPU["paddock"] != 87.8 || len(r.PeakRSS) != 2 || len(r.CPU) != 2 {
		t.Errorf("renamed: %v %v", r.PeakRSS, r.CPU)
	}
	r.renameProgram("paddock", "paddock")
	if r.PeakRSS["paddock"] != 900 {
		t.Errorf("renaming to itself lost it: %v", r.PeakRSS)
	}
}
