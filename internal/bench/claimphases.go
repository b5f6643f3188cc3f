package bench

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// The phases of a claim's time to Ready, each the span between two moments
// this process saw on its watches. The API server stamps conditions to the
// second only, far too coarse for sub-second starts, so the moments are when
// a watch event arrived here (loopback, milliseconds late at most).
const (
	// PhaseController: claim created → its sandbox's pod exists (the Agent
	// Sandbox controller). Zero for a warm hit, whose pod existed before.
	PhaseController = "controller"
	// PhaseScheduler: pod created → bound to a node.
	PhaseScheduler = "scheduler"
	// PhaseStart: bound → its container runs: kubelet, containerd and the
	// runtime (runsc's sandbox and gofer start under gVisor).
	PhaseStart = "start"
	// PhaseReady: container running → pod Ready (readiness as the kubelet
	// reports it).
	PhaseReady = "pod-ready"
	// PhaseClaim: pod Ready, or claim created for a pod that was already
	// Ready → claim Ready: the controller adopting the sandbox and writing
	// the claim's status.
	PhaseClaim = "claim"
)

// ClaimPhases is the fixed order phases are reported in.
var ClaimPhases = []string{PhaseController, PhaseScheduler, PhaseStart, PhaseReady, PhaseClaim}

// podMoments are the moments a pod was first seen in each state.
type podMoments struct {
	added, scheduled, running, ready time.Time
}

// podWatch records, per pod of the namespace, when each state was first seen.
type podWatch struct {
	mu   sync.Mutex
	pods map[string]*podMoments
}

func (p *podWatch) observe(pod *corev1.Pod, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.pods[pod.Name]
	if m == nil {
		m = &podMoments{added: at}
		p.pods[pod.Name] = m
	}
	if m.scheduled.IsZero() && pod.Spec.NodeName != "" {
		m.scheduled = at
	}
	if m.running.IsZero() {
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.State.Running != nil {
				m.running = at
				break
			}
		}
	}
	if m.ready.IsZero() {
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				m.ready = at
			}
		}
	}
}

func (p *podWatch) moments(name string) (podMoments, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m, ok := p.pods[name]
	if !ok {
		return podMoments{}, false
	}
	return *m, true
}

// watchPods starts recording the namespace's pods; the returned func stops it.
func (c *claimer) watchPods(ctx context.Context) (func(), error) {
	c.podsSeen = &podWatch{pods: map[string]*podMoments{}}
	wctx, cancel := context.WithCancel(ctx)
	w, err := c.dyn.Resource(podsGVR).Namespace(c.o.Namespace).Watch(wctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watching pods: %w", err)
	}
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			at := time.Now()
			u, ok := ev.Object.(runtime.Unstructured)
			if !ok {
				continue
			}
			var pod corev1.Pod
			if runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), &pod) != nil {
				continue
			}
			c.podsSeen.observe(&pod, at)
		}
	}()
	return func() { w.Stop(); cancel() }, nil
}

// claimPhases splits a claim's time, from created to Ready, over the phases.
// A pod seen before the claim (a warm hit) contributes nothing before the
// claim existed. ok is false when a moment is missing (the pod was not seen
// going through it, as when the watch restarted).
func claimPhases(created, ready time.Time, m podMoments) (map[string]float64, bool) {
	if m.added.IsZero() || m.scheduled.IsZero() || m.running.IsZero() || m.ready.IsZero() {
		return nil, false
	}
	// Each moment no earlier than the claim: a phase finished before the
	// claim took no part of its time.
	clamp := func(t time.Time) time.Time {
		if t.Before(created) {
			return created
		}
		return t
	}
	added, scheduled, running, podReady := clamp(m.added), clamp(m.scheduled), clamp(m.running), clamp(m.ready)
	span := func(a, b time.Time) float64 { return max(0, b.Sub(a).Seconds()) }
	return map[string]float64{
		PhaseController: span(created, added),
		PhaseScheduler:  span(added, scheduled),
		PhaseStart:      span(scheduled, running),
		PhaseReady:      span(running, podReady),
		PhaseClaim:      span(podReady, ready),
	}, true
}

// medianPhases is each phase's median over the claims that have phases.
func medianPhases(all []map[string]float64) map[string]float64 {
	if len(all) == 0 {
		return nil
	}
	out := map[string]float64{}
	for _, ph := range ClaimPhases {
		var v []float64
		for _, m := range all {
			v = append(v, m[ph])
		}
		sort.Float64s(v)
		out[ph] = Percentile(v, 50)
	}
	return out
}
