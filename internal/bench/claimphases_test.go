package bench

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A cold claim's time splits over the phases in order, and the phases add up
// to the whole claim → Ready time.
func TestClaimPhasesColdStart(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	w := &podWatch{pods: map[string]*podMoments{}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sb-1"}}
	w.observe(pod, ms(40))
	pod.Spec.NodeName = "node"
	w.observe(pod, ms(60))
	w.observe(pod, ms(70)) // nothing new: no moment moves
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	w.observe(pod, ms(1460))
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	w.observe(pod, ms(1500))
	m, ok := w.moments("sb-1")
	if !ok {
		t.Fatal("pod not recorded")
	}
	ph, ok := claimPhases(t0, ms(1530), m)
	if !ok {
		t.Fatal("no phases")
	}
	want := map[string]float64{PhaseController: 0.04, PhaseScheduler: 0.02, PhaseStart: 1.4, PhaseReady: 0.04, PhaseClaim: 0.03}
	sum := 0.0
	for k, v := range want {
		if d := ph[k] - v; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s = %.3f, want %.3f", k, ph[k], v)
		}
		sum += ph[k]
	}
	if d := sum - 1.53; d > 1e-9 || d < -1e-9 {
		t.Errorf("phases add up to %.3f, want the claim's 1.530", sum)
	}
}

// A warm hit's pod was Ready before the claim: all of the claim's time is the
// controller adopting it, none goes to the pod's earlier start.
func TestClaimPhasesWarmHit(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	m := podMoments{added: t0.Add(-time.Minute), scheduled: t0.Add(-59 * time.Second), running: t0.Add(-58 * time.Second), ready: t0.Add(-57 * time.Second)}
	ph, ok := claimPhases(t0, t0.Add(120*time.Millisecond), m)
	if !ok {
		t.Fatal("no phases")
	}
	for _, k := range []string{PhaseController, PhaseScheduler, PhaseStart, PhaseReady} {
		if ph[k] != 0 {
			t.Errorf("%s = %.3f for a pod ready before the claim", k, ph[k])
		}
	}
	if d := ph[PhaseClaim] - 0.12; d > 1e-9 || d < -1e-9 {
		t.Errorf("claim phase %.3f, want 0.120", ph[PhaseClaim])
	}
	// A pod not seen through every moment gives no phases rather than wrong ones.
	if _, ok := claimPhases(t0, t0, podMoments{added: t0}); ok {
		t.Error("phases from a pod seen only once")
	}
}

func TestMedianPhases(t *testing.T) {
	got := medianPhases([]map[string]float64{{PhaseStart: 1}, {PhaseStart: 3}, {PhaseStart: 2}})
	if got[PhaseStart] != 2 || got[PhaseClaim] != 0 {
		t.Errorf("medians %v", got)
	}
	if medianPhases(nil) != nil {
		t.Error("medians of no claims")
	}
}
