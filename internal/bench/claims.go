package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

var (
	claimsGVR    = agentsandbox.SandboxClaims
	warmPoolsGVR = agentsandbox.SandboxWarmPools
	sandboxesGVR = agentsandbox.Sandboxes
)

// Agent Sandbox's record of how a claim's sandbox started.
const (
	launchTypeLabel = "agents.x-k8s.io/launch-type"
	launchWarm      = "warm"
	// benchRunLabel marks the claims of one run, so they are watched and
	// cleaned up together and never mistaken for a user's.
	benchRunLabel = "paddock.dev/bench-run"
)

// Claim modes.
const (
	// ModeWarm: one claim at a time, each once the pool is full again: every
	// claim can be served by a pre-warmed sandbox.
	ModeWarm = "warm"
	// ModeCold: one claim at a time on a pool that keeps no sandbox warm
	// (replicas 0): every claim starts its sandbox from the template, the path
	// of a claim that finds no warm sandbox.
	ModeCold = "cold"
	// ModeBurst: Burst claims at once, more than the pool holds. A claim of
	// a burst that is not Ready within the timeout is counted (Unready),
	// not a failure: a burst may ask for more sandboxes than the nodes hold.
	ModeBurst = "burst"
)

// notReady is a claim that did not become Ready within the timeout, with
// where it stood then.
type notReady struct {
	claim   string
	timeout time.Duration
	why     string // its conditions and its pod's, each after "; "
}

func (e *notReady) Error() string {
	return fmt.Sprintf("claim %s not Ready within %s%s", e.claim, e.timeout, e.why)
}

// ClaimsOptions configure Claims.
type ClaimsOptions struct {
	Namespace string
	WarmPool  string
	// ColdPool is a pool of the same tenant with replicas 0, for the cold
	// mode ("" skips it). Hardened templates refuse env injection, the other
	// way Agent Sandbox forces a cold start.
	ColdPool string
	// Count is how many sequential claims the warm and cold modes make.
	Count int
	// Burst is how many claims the burst mode makes at once (0 = twice the
	// pool's replicas); it repeats such bursts until Count claims are measured.
	Burst int
	// Modes are the modes to measure, each at most once, always in the
	// order warm, cold, burst (empty: all three).
	Modes []string
	// TTL is the claims' ttlSecondsAfterFinished, MaxTTL the tenant's
	// max_ttl, which bounds their spec.lifecycle.shutdownTime: the tenant's
	// admission guardrails require both.
	TTL, MaxTTL time.Duration
	// Timeout bounds the wait for one claim to become Ready.
	Timeout time.Duration
	Out     io.Writer
}

// ClaimsResult is one mode's measurements.
type ClaimsResult struct {
	Mode     string  `json:"mode"`
	Pool     string  `json:"pool"`
	Replicas int64   `json:"poolReplicas"`
	Claims   int     `json:"claims"`
	P50      float64 `json:"p50Seconds"`
	P95      float64 `json:"p95Seconds"`
	Max      float64 `json:"maxSeconds"`
	// WarmHits is how many claims got a sandbox from the pool (its
	// launch-type label says warm); HitRate is WarmHits / Claims.
	WarmHits int     `json:"warmHits"`
	HitRate  float64 `json:"hitRate"`
	// Seconds are the claim → Ready times in creation order, of the claims
	// that became Ready.
	Seconds []float64 `json:"seconds"`
	// Burst is how many claims each burst made at once (the burst mode).
	Burst int `json:"burst,omitempty"`
	// WarmP50, WarmP95 and WarmMax are of the warm hits alone (the burst
	// mode): what a claim the pool served waited while the others arrived.
	WarmP50 float64 `json:"warmP50Seconds,omitempty"`
	WarmP95 float64 `json:"warmP95Seconds,omitempty"`
	WarmMax float64 `json:"warmMaxSeconds,omitempty"`
	// Unready counts the burst's claims that were not Ready within
	// TimeoutSeconds (they are not in Seconds), UnreadyWhy says where the
	// first of them stood.
	Unready        int     `json:"unready,omitempty"`
	UnreadyWhy     string  `json:"unreadyWhy,omitempty"`
	TimeoutSeconds float64 `json:"timeoutSeconds,omitempty"`
	// LoadStart and LoadEnd are the machine's load averages (1, 5, 15 min)
	// before the mode's first claim and after its last.
	LoadStart []float64 `json:"loadAvgStart,omitempty"`
	LoadEnd   []float64 `json:"loadAvgEnd,omitempty"`
	// Phases is the median of each phase of the claims' time (ClaimPhases),
	// over the PhaseClaims claims whose pod was seen through every phase.
	Phases      map[string]float64 `json:"phasesP50Seconds,omitempty"`
	PhaseClaims int                `json:"phaseClaims,omitempty"`
}

// Claims measures claim → Ready on a provisioned warm pool: warm hits one at
// a time, cold starts one at a time, and a burst larger than the pool. Every
// claim it makes is labelled with the run, and deleted before it returns.
func Claims(ctx context.Context, dyn dynamic.Interface, o ClaimsOptions) ([]ClaimsResult, error) {
	if o.Count <= 0 {
		o.Count = 10
	}
	if o.TTL == 0 {
		o.TTL = 5 * time.Minute
	}
	if o.MaxTTL == 0 {
		o.MaxTTL = time.Hour
	}
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	pool, err := dyn.Resource(warmPoolsGVR).Namespace(o.Namespace).Get(ctx, o.WarmPool, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("warm pool %s/%s: %w", o.Namespace, o.WarmPool, err)
	}
	replicas, _, _ := unstructured.NestedInt64(pool.Object, "spec", "replicas")
	if replicas < 1 {
		return nil, fmt.Errorf("warm pool %s/%s keeps no sandbox warm (replicas %d): nothing to measure a hit on", o.Namespace, o.WarmPool, replicas)
	}
	if o.Burst <= 0 {
		o.Burst = int(2 * replicas)
	}
	run := fmt.Sprintf("%d", time.Now().UnixNano()%1_000_000_000)
	c := &claimer{dyn: dyn, o: o, run: run, ready: map[string]chan struct{}{}}
	stopWatch, err := c.watch(ctx)
	if err != nil {
		return nil, err
	}
	defer stopWatch()
	stopPods, err := c.watchPods(ctx)
	if err != nil {
		return nil, err
	}
	defer stopPods()
	defer c.cleanup()

	var out []ClaimsResult
	modes, err := ClaimModes(o.Modes)
	if err != nil {
		return nil, err
	}
	if o.ColdPool == "" && slices.Contains(modes, ModeCold) {
		fmt.Fprintf(o.Out, "bench claims: no pool with replicas 0 to measure cold starts on: skipping the cold mode\n")
		modes = slices.DeleteFunc(modes, func(m string) bool { return m == ModeCold })
	}
	for _, mode := range modes {
		if err := c.waitPoolFull(ctx, replicas); err != nil {
			return out, err
		}
		var times, warmTimes []float64
		var hits, unready int
		var unreadyWhy string
		load := LoadAverage()
		c.resetPhases()
		switch mode {
		case ModeWarm, ModeCold:
			for i := 0; i < o.Count; i++ {
				if mode == ModeWarm {
					if err := c.waitPoolFull(ctx, replicas); err != nil {
						return out, err
					}
				}
				pool := o.WarmPool
				if mode == ModeCold {
					pool = o.ColdPool
				}
				d, warm, err := c.one(ctx, fmt.Sprintf("%s-%d", mode, i), pool)
				if err != nil {
					return out, err
				}
				times = append(times, d.Seconds())
				if warm {
					hits++
					warmTimes = append(warmTimes, d.Seconds())
				}
				if err := c.delete(ctx); err != nil {
					return out, err
				}
			}
		case ModeBurst:
			// Rounds of Burst claims at once, each on a full pool, until at
			// least Count claims are measured: one burst of a few claims
			// gives no percentile worth reading.
			for round := 0; len(times)+unready < o.Count || round == 0; round++ {
				if round > 0 {
					if err := c.waitPoolFull(ctx, replicas); err != nil {
						return out, err
					}
				}
				b, err := c.burst(ctx, round)
				if err != nil {
					return out, err
				}
				times, warmTimes, hits = append(times, b.times...), append(warmTimes, b.warm...), hits+len(b.warm)
				if unready += b.unready; unreadyWhy == "" {
					unreadyWhy = b.why
				}
				if err := c.delete(ctx); err != nil {
					return out, err
				}
			}
		}
		pool, poolReplicas := o.WarmPool, replicas
		if mode == ModeCold {
			pool, poolReplicas = o.ColdPool, 0
		}
		r := summarize(mode, pool, poolReplicas, times, hits)
		r.Phases, r.PhaseClaims = c.phasesP50()
		r.LoadStart, r.LoadEnd = load, LoadAverage()
		if mode == ModeBurst {
			r.Burst, r.Unready, r.UnreadyWhy, r.TimeoutSeconds = o.Burst, unready, unreadyWhy, o.Timeout.Seconds()
			r.WarmP50, r.WarmP95, r.WarmMax = percentiles(warmTimes)
			if made := r.Claims + unready; made > 0 {
				r.HitRate = float64(hits) / float64(made)
			}
		}
		fmt.Fprintf(o.Out, "bench claims: %-5s %3d claims  P50 %.3fs  P95 %.3fs  max %.3fs  warm hits %d/%d; P50 by phase: %s; load %s → %s\n", mode, r.Claims, r.P50, r.P95, r.Max, r.WarmHits, r.Claims, phaseCell(r), loadText(r.LoadStart), loadText(r.LoadEnd))
		if mode == ModeBurst {
			fmt.Fprintf(o.Out, "bench claims: burst of %d at once: warm hits P50 %.3fs  P95 %.3fs  max %.3fs; %d not Ready within %s (%s)\n", r.Burst, r.WarmP50, r.WarmP95, r.WarmMax, r.Unready, o.Timeout, r.UnreadyWhy)
		}
		out = append(out, r)
	}
	return out, nil
}

// ClaimModes are the modes asked for in the order they run (warm, cold,
// burst), all three for none; an unknown mode is an error.
func ClaimModes(asked []string) ([]string, error) {
	all := []string{ModeWarm, ModeCold, ModeBurst}
	if len(asked) == 0 {
		return all, nil
	}
	for _, m := range asked {
		if !slices.Contains(all, m) {
			return nil, fmt.Errorf("claims mode %q: the modes are %s", m, strings.Join(all, ", "))
		}
	}
	return slices.DeleteFunc(all, func(m string) bool { return !slices.Contains(asked, m) }), nil
}

func summarize(mode, pool string, replicas int64, times []float64, hits int) ClaimsResult {
	r := ClaimsResult{Mode: mode, Pool: pool, Replicas: replicas, Claims: len(times), WarmHits: hits, Seconds: times}
	r.P50, r.P95, r.Max = percentiles(times)
	if len(times) > 0 {
		r.HitRate = float64(hits) / float64(len(times))
	}
	return r
}

// percentiles are the P50, P95 and max of xs (zeros for none).
func percentiles(xs []float64) (p50, p95, maxV float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	sorted := append([]float64(nil), xs...)
	sort.Float64s(sorted)
	return Percentile(sorted, 50), Percentile(sorted, 95), sorted[len(sorted)-1]
}

// Percentile is the nearest-rank percentile of sorted values.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

// burstRound is what one burst measured.
type burstRound struct {
	times []float64 // claim → Ready of the claims that became Ready, in creation order
	warm  []float64 // the same, of the warm hits alone
	// unready counts the claims not Ready within the timeout; why is where
	// the first of them stood.
	unready int
	why     string
}

// burst makes Burst claims at once on the warm pool and waits for all of
// them. A claim not Ready within the timeout is counted, not an error: the
// burst may ask for more sandboxes than the nodes hold.
func (c *claimer) burst(ctx context.Context, round int) (burstRound, error) {
	type result struct {
		d    time.Duration
		warm bool
		err  error
	}
	results := make([]result, c.o.Burst)
	var wg sync.WaitGroup
	for i := range c.o.Burst {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			d, warm, err := c.one(ctx, fmt.Sprintf("burst-%d-%d", round, i), c.o.WarmPool)
			results[i] = result{d, warm, err}
		}(i)
	}
	wg.Wait()
	var b burstRound
	for _, r := range results {
		var nr *notReady
		switch {
		case errors.As(r.err, &nr):
			if b.unready++; b.why == "" {
				b.why = strings.TrimPrefix(nr.why, "; ")
			}
		case r.err != nil:
			return b, r.err
		default:
			b.times = append(b.times, r.d.Seconds())
			if r.warm {
				b.warm = append(b.warm, r.d.Seconds())
			}
		}
	}
	return b, nil
}

// claimer makes claims and learns of their readiness from one watch.
type claimer struct {
	dyn dynamic.Interface
	o   ClaimsOptions
	run string

	mu    sync.Mutex
	ready map[string]chan struct{} // closed when the claim is Ready

	podsSeen *podWatch
	phases   []map[string]float64 // of this mode's claims, guarded by mu
}

func (c *claimer) resetPhases() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.phases = nil
}

func (c *claimer) phasesP50() (map[string]float64, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return medianPhases(c.phases), len(c.phases)
}

func (c *claimer) watch(ctx context.Context) (func(), error) {
	wctx, cancel := context.WithCancel(ctx)
	w, err := c.dyn.Resource(claimsGVR).Namespace(c.o.Namespace).Watch(wctx, metav1.ListOptions{LabelSelector: benchRunLabel + "=" + c.run})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watching claims: %w", err)
	}
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok || !claimReady(u) {
				continue
			}
			c.mu.Lock()
			if ch, ok := c.ready[u.GetName()]; ok {
				close(ch)
				delete(c.ready, u.GetName())
			}
			c.mu.Unlock()
		}
	}()
	return func() { w.Stop(); cancel() }, nil
}

func claimReady(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// claim is the claim named name on pool, made at now, with the lifecycle
// the tenant's guardrail requires: its TTL (at most max_ttl), shutdown
// Delete and a shutdownTime within max_ttl of now. The API server measures max_ttl from
// the claim's creation by its own clock, so the shutdownTime keeps a margin
// (a minute, or half of a shorter max_ttl) for this machine's running ahead.
func (c *claimer) claim(name, pool string, now time.Time) *unstructured.Unstructured {
	margin := min(c.o.MaxTTL/2, time.Minute)
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": claimsGVR.GroupVersion().String(),
		"kind":       "SandboxClaim",
		"metadata":   map[string]any{"name": name, "namespace": c.o.Namespace, "labels": map[string]any{benchRunLabel: c.run}},
		"spec": map[string]any{
			"warmPoolRef": map[string]any{"name": pool},
			"lifecycle": map[string]any{
				"shutdownPolicy":          "Delete",
				"ttlSecondsAfterFinished": int64(min(c.o.TTL, c.o.MaxTTL).Seconds()),
				"shutdownTime":            now.Add(c.o.MaxTTL - margin).UTC().Format(time.RFC3339),
			},
		},
	}}
}

// one makes a claim and waits for it to be Ready: how long it took and
// whether its sandbox came from the pool.
func (c *claimer) one(ctx context.Context, suffix, pool string) (time.Duration, bool, error) {
	name := fmt.Sprintf("bench-%s-%s", c.run, suffix)
	u := c.claim(name, pool, time.Now())
	ch := make(chan struct{})
	c.mu.Lock()
	c.ready[name] = ch
	c.mu.Unlock()
	start := time.Now()
	if _, err := c.dyn.Resource(claimsGVR).Namespace(c.o.Namespace).Create(ctx, u, metav1.CreateOptions{}); err != nil {
		c.mu.Lock()
		delete(c.ready, name)
		c.mu.Unlock()
		return 0, false, fmt.Errorf("creating claim %s: %w", name, err)
	}
	// The watch tells readiness at once; a poll every second covers a watch
	// the server closed.
	poll := time.NewTicker(time.Second)
	defer poll.Stop()
	timeout := time.After(c.o.Timeout)
wait:
	for {
		select {
		case <-ch:
			break wait
		case <-poll.C:
			if u, err := c.dyn.Resource(claimsGVR).Namespace(c.o.Namespace).Get(ctx, name, metav1.GetOptions{}); err == nil && claimReady(u) {
				break wait
			}
			continue
		case <-timeout:
			why := ""
			if u, err := c.dyn.Resource(claimsGVR).Namespace(c.o.Namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
				conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
				for _, cd := range conds {
					if m, ok := cd.(map[string]any); ok {
						why += fmt.Sprintf("; %v=%v (%v: %v)", m["type"], m["status"], m["reason"], m["message"])
					}
				}
			}
			return 0, false, &notReady{claim: c.o.Namespace + "/" + name, timeout: c.o.Timeout, why: why + c.podWhy(ctx, name)}
		case <-ctx.Done():
			return 0, false, ctx.Err()
		}
	}
	readyAt := time.Now()
	took := readyAt.Sub(start)
	claim, err := c.dyn.Resource(claimsGVR).Namespace(c.o.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return took, false, err
	}
	sb, _, _ := unstructured.NestedString(claim.Object, "status", "sandbox", "name")
	if sb == "" {
		return took, false, nil
	}
	s, err := c.dyn.Resource(sandboxesGVR).Namespace(c.o.Namespace).Get(ctx, sb, metav1.GetOptions{})
	if err != nil {
		return took, false, fmt.Errorf("sandbox %s of claim %s: %w", sb, name, err)
	}
	if c.podsSeen != nil {
		if m, ok := c.podsSeen.moments(agentsandbox.PodName(sb, s.GetAnnotations())); ok {
			if ph, ok := claimPhases(start, readyAt, m); ok {
				c.mu.Lock()
				c.phases = append(c.phases, ph)
				c.mu.Unlock()
			}
		}
	}
	return took, s.GetLabels()[launchTypeLabel] == launchWarm, nil
}

// podWhy says where the pod of claim name stands when the claim is not
// Ready: its phase and any condition not met (an unschedulable pod names the
// resource the node ran out of), or "" when there is no pod to ask about.
func (c *claimer) podWhy(ctx context.Context, name string) string {
	claim, err := c.dyn.Resource(claimsGVR).Namespace(c.o.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	sb, _, _ := unstructured.NestedString(claim.Object, "status", "sandbox", "name")
	if sb == "" {
		return "; no sandbox assigned yet"
	}
	s, err := c.dyn.Resource(sandboxesGVR).Namespace(c.o.Namespace).Get(ctx, sb, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	pod, err := c.dyn.Resource(podsGVR).Namespace(c.o.Namespace).Get(ctx, agentsandbox.PodName(sb, s.GetAnnotations()), metav1.GetOptions{})
	if err != nil {
		return "; sandbox " + sb + " has no pod"
	}
	phase, _, _ := unstructured.NestedString(pod.Object, "status", "phase")
	why := fmt.Sprintf("; pod %s %s", pod.GetName(), phase)
	conds, _, _ := unstructured.NestedSlice(pod.Object, "status", "conditions")
	for _, cd := range conds {
		if m, ok := cd.(map[string]any); ok && m["status"] != "True" {
			why += fmt.Sprintf(", %v: %v %v", m["type"], m["reason"], m["message"])
		}
	}
	return why
}

// waitPoolFull waits until the pool reports all its replicas ready.
func (c *claimer) waitPoolFull(ctx context.Context, replicas int64) error {
	deadline := time.Now().Add(c.o.Timeout)
	for {
		pool, err := c.dyn.Resource(warmPoolsGVR).Namespace(c.o.Namespace).Get(ctx, c.o.WarmPool, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ready, _, _ := unstructured.NestedInt64(pool.Object, "status", "readyReplicas")
		if ready >= replicas {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("warm pool %s/%s has %d of %d sandboxes ready after %s: is the Agent Sandbox controller running?", c.o.Namespace, c.o.WarmPool, ready, replicas, c.o.Timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// delete removes the run's claims and waits until they are gone.
func (c *claimer) delete(ctx context.Context) error {
	ri := c.dyn.Resource(claimsGVR).Namespace(c.o.Namespace)
	sel := metav1.ListOptions{LabelSelector: benchRunLabel + "=" + c.run}
	if err := ri.DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the bench claims: %w", err)
	}
	deadline := time.Now().Add(c.o.Timeout)
	for time.Now().Before(deadline) {
		l, err := ri.List(ctx, sel)
		if err != nil {
			return err
		}
		if len(l.Items) == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("bench claims of run %s still there after %s", c.run, c.o.Timeout)
}

// cleanup deletes whatever claims of the run are left, whatever happened.
func (c *claimer) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = c.dyn.Resource(claimsGVR).Namespace(c.o.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: benchRunLabel + "=" + c.run})
}

// WriteClaimsTable writes claim results as a markdown table.
func WriteClaimsTable(w io.Writer, rs []ClaimsResult) {
	fmt.Fprintf(w, "| mode | pool replicas | claims | P50 (s) | P95 (s) | max (s) | warm hits | where a claim's time goes (P50 s) |\n|---|---|---|---|---|---|---|---|\n")
	var loads []string
	for _, r := range rs {
		made, claims := r.Claims+r.Unready, fmt.Sprint(r.Claims)
		if r.Unready > 0 {
			claims = fmt.Sprintf("%d Ready of %d", r.Claims, made)
		}
		fmt.Fprintf(w, "| %s | %d | %s | %.3f | %.3f | %.3f | %d/%d (%.0f%%) | %s |\n", r.Mode, r.Replicas, claims, r.P50, r.P95, r.Max, r.WarmHits, made, 100*r.HitRate, phaseCell(r))
		if len(r.LoadStart) == 3 || len(r.LoadEnd) == 3 {
			loads = append(loads, fmt.Sprintf("%s %s → %s", r.Mode, loadText(r.LoadStart), loadText(r.LoadEnd)))
		}
	}
	for _, r := range rs {
		if r.Mode != ModeBurst || r.Burst == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s: %d claims at once on a pool of %d", burstName(r), r.Burst, r.Replicas)
		if r.WarmHits > 0 {
			fmt.Fprintf(w, "; the %d the pool served (warm hits) were Ready in P50 %.3f s, P95 %.3f s, max %.3f s", r.WarmHits, r.WarmP50, r.WarmP95, r.WarmMax)
		}
		if r.Unready > 0 {
			fmt.Fprintf(w, "; %d not Ready within %s (the first: %s)", r.Unready, time.Duration(r.TimeoutSeconds*float64(time.Second)), r.UnreadyWhy)
		}
		fmt.Fprintf(w, ".\n")
	}
	if len(loads) > 0 {
		fmt.Fprintf(w, "\nLoad average (1, 5, 15 min) before each mode's first claim → after its last: %s.\n", strings.Join(loads, "; "))
	}
}

// burstName is how the report names a burst row: "Burst", with the rounds
// when there were several.
func burstName(r ClaimsResult) string {
	if made := r.Claims + r.Unready; r.Burst > 0 && made > r.Burst {
		return fmt.Sprintf("Burst (%d rounds)", (made+r.Burst-1)/r.Burst)
	}
	return "Burst"
}

// phaseCell is a claims row's phase medians, in ClaimPhases order.
func phaseCell(r ClaimsResult) string {
	if len(r.Phases) == 0 {
		return "–"
	}
	var parts []string
	for _, ph := range ClaimPhases {
		parts = append(parts, fmt.Sprintf("%s %.3f", ph, r.Phases[ph]))
	}
	return strings.Join(parts, ", ") + fmt.Sprintf(" (%d claims)", r.PhaseClaims)
}
