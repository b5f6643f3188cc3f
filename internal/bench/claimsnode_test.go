package bench

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func podOf(name string, phase corev1.PodPhase, req, lim corev1.ResourceList) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "agents-t0000"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}}},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

// The node's allocatable, less what its pods request, bounds the sandboxes
// it holds; a finished pod requests nothing; the sandbox measured is one of
// them.
func TestSandboxesFitTheNode(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Allocatable: rl("cpu", "2", "memory", "23Gi", "pods", "110", "ephemeral-storage", "100Gi")}}
	sb := podOf("sb", corev1.PodRunning, rl("cpu", "250m", "memory", "256Mi"), rl("cpu", "1", "memory", "1Gi"))
	pods := []corev1.Pod{
		sb,
		podOf("dns", corev1.PodRunning, rl("cpu", "100m", "memory", "70Mi"), nil),
		podOf("done", corev1.PodSucceeded, rl("cpu", "1"), nil),
	}
	fit := SandboxesFit(node, pods, &sb, nil)
	// 2000m - 350m = 1650m free: 6 more of 250m, and the one running.
	if fit.Holds != 7 || !strings.Contains(fit.Bound, "cpu 2 allocatable, 350m requested by its 2 pods, 250m a sandbox") {
		t.Errorf("holds %d, bound %q", fit.Holds, fit.Bound)
	}
	if fit.Sandbox["cpu"] != "250m" || fit.Sandbox["memory"] != "256Mi" {
		t.Errorf("a sandbox's requests: %v", fit.Sandbox)
	}
	// The runtime's overhead counts with the containers' requests: 1400m
	// free, 500m a sandbox.
	sb.Spec.Overhead = rl("cpu", "250m")
	pods[0] = sb
	if fit := SandboxesFit(node, pods, &sb, nil); fit.Holds != 3 {
		t.Errorf("with 250m of overhead: holds %d (%s)", fit.Holds, fit.Bound)
	}
	// The pod count binds when requests are small.
	tiny := podOf("sb", corev1.PodRunning, rl("cpu", "1m", "memory", "1Mi"), nil)
	node.Status.Allocatable[corev1.ResourcePods] = resource.MustParse("10")
	if fit := SandboxesFit(node, []corev1.Pod{tiny, pods[1]}, &tiny, nil); fit.Holds != 9 || !strings.Contains(fit.Bound, "10 pods allocatable, 2 bound to it") {
		t.Errorf("pods bound: holds %d (%s)", fit.Holds, fit.Bound)
	}
}

// The tenant's quota bounds the sandboxes as well: limits.* by the pod's
// limits, a bare resource and requests.* by its requests, pods by one each.
func TestSandboxesFitTheQuota(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Allocatable: rl("cpu", "64", "memory", "256Gi", "pods", "110")}}
	sb := podOf("sb", corev1.PodRunning, rl("cpu", "250m", "memory", "256Mi"), rl("cpu", "1", "memory", "1Gi"))
	q := func(hard, used corev1.ResourceList) []corev1.ResourceQuota {
		return []corev1.ResourceQuota{{ObjectMeta: metav1.ObjectMeta{Name: "quota", Namespace: "agents-t0000"}, Status: corev1.ResourceQuotaStatus{Hard: hard, Used: used}}}
	}
	for _, c := range []struct {
		hard, used corev1.ResourceList
		holds      int
		bound      string
	}{
		{rl("limits.cpu", "16", "pods", "20"), rl("limits.cpu", "1", "pods", "1"), 16, "limits.cpu 16 hard, 1 used, 1 a sandbox"},
		{rl("pods", "5"), rl("pods", "1"), 5, "pods 5 hard, 1 used"},
		{rl("requests.memory", "1Gi"), rl("requests.memory", "256Mi"), 4, "requests.memory 1Gi hard"},
		{rl("memory", "512Mi"), rl("memory", "256Mi"), 2, "memory 512Mi hard"},
		{rl("count/secrets", "1"), nil, 110, "node n: 110 pods allocatable, 1 bound to it"},
	} {
		fit := SandboxesFit(node, []corev1.Pod{sb}, &sb, q(c.hard, c.used))
		if fit.Holds != c.holds || !strings.Contains(fit.Bound, c.bound) {
			t.Errorf("quota %v used %v: holds %d, bound %q; want %d, %q", c.hard, c.used, fit.Holds, fit.Bound, c.holds, c.bound)
		}
	}
}

// The pool leaves one place free for what the pool cannot serve.
func TestPoolForNode(t *testing.T) {
	for holds, want := range map[int]int{0: 1, 1: 1, 2: 1, 7: 6} {
		if got, why := PoolForNode(holds); got != want || why == "" {
			t.Errorf("PoolForNode(%d) = %d (%s), want %d", holds, got, why, want)
		}
	}
}

func TestPssOf(t *testing.T) {
	if got := pssOf("Rss:  2048 kB\nPss:  1536 kB\nPss_Anon: 10 kB\n"); got != 1536<<10 {
		t.Errorf("pss %d", got)
	}
}

// Modes run in their own order, whatever order they are asked in; an
// unknown one is refused.
func TestClaimModes(t *testing.T) {
	if got, err := ClaimModes(nil); err != nil || strings.Join(got, ",") != "warm,cold,burst" {
		t.Errorf("none asked: %v %v", got, err)
	}
	if got, err := ClaimModes([]string{"burst", "warm"}); err != nil || strings.Join(got, ",") != "warm,burst" {
		t.Errorf("burst, warm: %v %v", got, err)
	}
	if _, err := ClaimModes([]string{"stampede"}); err == nil || !strings.Contains(err.Error(), "warm, cold, burst") {
		t.Errorf("an unknown mode: %v", err)
	}
}

// A run of the burst alone keeps the warm and cold rows it replaces, in
// mode order, and says from which binary; on another node kind it keeps
// nothing.
func TestCarryClaimModes(t *testing.T) {
	old := measured()
	old.ClaimsNodes = "real"
	old.Claims = []ClaimsResult{{Mode: ModeWarm, Claims: 100}, {Mode: ModeCold, Claims: 100}, {Mode: ModeBurst, Claims: 6}}
	res := measured()
	res.Paddock = &Build{Commit: "fedcba987654"}
	res.ClaimsNodes = "real"
	res.Claims = []ClaimsResult{{Mode: ModeBurst, Claims: 100, Burst: 100}}
	note := CarryClaimModes(res, old, []string{ModeBurst})
	var got []string
	for _, r := range res.Claims {
		got = append(got, fmt.Sprintf("%s %d", r.Mode, r.Claims))
	}
	if strings.Join(got, ", ") != "warm 100, cold 100, burst 100" {
		t.Errorf("rows: %v", got)
	}
	if !strings.Contains(note, "this run measured burst (-claims-modes); the warm and cold rows are carried over from binary 0123456789ab (2026-12-01 00:00 UTC)") {
		t.Errorf("note %q", note)
	}
	res.Claims = []ClaimsResult{{Mode: ModeBurst}}
	res.ClaimsNodes = "fake"
	if note := CarryClaimModes(res, old, []string{ModeBurst}); note != "" || len(res.Claims) != 1 {
		t.Errorf("carried from real nodes to fake ones: %q %v", note, res.Claims)
	}
	res.ClaimsNodes = "real"
	if note := CarryClaimModes(res, old, []string{ModeWarm, ModeCold, ModeBurst}); note != "" || len(res.Claims) != 1 {
		t.Errorf("carried when every mode ran: %q %v", note, res.Claims)
	}
}

// The claims section says how the pool was sized for the node, when it was.
func TestReportSaysHowThePoolWasSized(t *testing.T) {
	r := measured()
	r.ClaimsNodes = "real"
	r.Claims = []ClaimsResult{{Mode: ModeBurst, Replicas: 6, Claims: 7, Burst: 100, Unready: 93}}
	var b strings.Builder
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "sized for the node") {
		t.Error("a pool not sized for the node said to be")
	}
	r.ClaimsFit = &NodeFit{Holds: 7, Bound: "node n: cpu 2 allocatable", Sandbox: map[string]string{"cpu": "250m", "memory": "256Mi"}, Pool: 6, PoolWhy: "the node holds 7 sandboxes: a pool of 6", SandboxMemory: 40 << 20}
	b.Reset()
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"The warm pool of 6 was sized for the node: a sandbox of the template asks for cpu 250m, memory 256Mi; the node and the tenant's quota hold 7 such sandboxes at once (what stops one more: node n: cpu 2 allocatable). The node holds 7 sandboxes: a pool of 6.",
		"about 40 MiB of the machine's memory",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the claims section lacks %q:\n%s", want, b.String())
		}
	}
}
