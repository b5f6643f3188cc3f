package bench

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

// fakeController serves claims from a warm pool of capacity sandboxes, as
// the Agent Sandbox controller does on nodes that hold no more: a claim
// made while capacity claims are being served never becomes Ready; a
// served claim's deletion frees its place.
func fakeController(t *testing.T, ctx context.Context, dyn *dynamicfake.FakeDynamicClient, ns string, capacity int) {
	t.Helper()
	w, err := dyn.Resource(claimsGVR).Namespace(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		served := map[string]bool{}
		for {
			var ev watch.Event
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.ResultChan():
				if !ok {
					return
				}
				ev = e
			}
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			switch ev.Type {
			case watch.Deleted:
				delete(served, u.GetName())
			case watch.Added:
				if len(served) >= capacity {
					continue
				}
				served[u.GetName()] = true
				sb := &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": sandboxesGVR.GroupVersion().String(), "kind": "Sandbox",
					"metadata": map[string]any{"name": "sb-" + u.GetName(), "namespace": ns, "labels": map[string]any{launchTypeLabel: launchWarm}},
				}}
				if _, err := dyn.Resource(sandboxesGVR).Namespace(ns).Create(ctx, sb, metav1.CreateOptions{}); err != nil {
					t.Error(err)
					return
				}
				u = u.DeepCopy()
				u.Object["status"] = map[string]any{
					"sandbox":    map[string]any{"name": "sb-" + u.GetName()},
					"conditions": []any{map[string]any{"type": "Ready", "status": "True"}},
				}
				if _, err := dyn.Resource(claimsGVR).Namespace(ns).Update(ctx, u, metav1.UpdateOptions{}); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
}

// A burst larger than what the pool and the nodes serve: the claims served
// are measured (the warm hits alone too), and the others are counted as not
// Ready, with where they stood, rather than failing the run.
func TestClaimsBurstCountsClaimsNotServed(t *testing.T) {
	const ns = "agents-t0000"
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		claimsGVR: "SandboxClaimList", warmPoolsGVR: "SandboxWarmPoolList", sandboxesGVR: "SandboxList", podsGVR: "PodList",
	})
	// The fake's tracker knows no DeleteCollection: delete each claim.
	var mu sync.Mutex
	dyn.PrependReactor("delete-collection", "sandboxclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		l, err := dyn.Tracker().List(claimsGVR, claimsGVR.GroupVersion().WithKind("SandboxClaim"), ns)
		if err != nil {
			return true, nil, err
		}
		for _, u := range l.(*unstructured.UnstructuredList).Items {
			if err := dyn.Tracker().Delete(claimsGVR, ns, u.GetName()); err != nil {
				return true, nil, err
			}
		}
		return true, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": warmPoolsGVR.GroupVersion().String(), "kind": "SandboxWarmPool",
		"metadata": map[string]any{"name": "agent", "namespace": ns},
		"spec":     map[string]any{"replicas": int64(2)},
		"status":   map[string]any{"readyReplicas": int64(2)},
	}}
	if _, err := dyn.Resource(warmPoolsGVR).Namespace(ns).Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fakeController(t, ctx, dyn, ns, 2)
	// The timeout only ends the wait for the claims nobody serves.
	res, err := Claims(ctx, dyn, ClaimsOptions{Namespace: ns, WarmPool: "agent", Count: 3, Burst: 5, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Mode != ModeWarm || res[1].Mode != ModeBurst {
		t.Fatalf("modes %+v", res)
	}
	if w := res[0]; w.Claims != 3 || w.WarmHits != 3 || w.Unready != 0 || w.Burst != 0 {
		t.Errorf("warm mode: %+v", w)
	}
	b := res[1]
	if b.Burst != 5 || b.Claims != 2 || len(b.Seconds) != 2 || b.WarmHits != 2 || b.Unready != 3 || b.HitRate != 0.4 || b.TimeoutSeconds != 0.3 {
		t.Errorf("burst: %+v", b)
	}
	if b.WarmMax == 0 || b.WarmMax != b.Max || b.WarmP50 > b.WarmP95 {
		t.Errorf("burst warm hits: P50 %v P95 %v max %v (all claims' max %v)", b.WarmP50, b.WarmP95, b.WarmMax, b.Max)
	}
	if b.UnreadyWhy != "no sandbox assigned yet" {
		t.Errorf("why a claim was not Ready: %q", b.UnreadyWhy)
	}
	if l, err := dyn.Resource(claimsGVR).Namespace(ns).List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("claims left behind: %v %v", l, err)
	}
	var md bytes.Buffer
	WriteClaimsTable(&md, res)
	for _, want := range []string{
		"| warm | 2 | 3 |",
		"| burst | 2 | 2 Ready of 5 |",
		"| 2/5 (40%) |",
		"Burst: 5 claims at once on a pool of 2; the 2 the pool served (warm hits) were Ready in P50 ",
		"; 3 not Ready within 300ms (the first: no sandbox assigned yet).",
		"Load average (1, 5, 15 min) before each mode's first claim",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("the claims table lacks %q:\n%s", want, md.String())
		}
	}
}
