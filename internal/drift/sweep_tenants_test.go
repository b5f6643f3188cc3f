package drift

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/paddock-platform/paddock/internal/model"
)

// manyTenants is platform() with n tenants, each in its own namespace.
func manyTenants(n int) *model.Platform {
	p := platform()
	base := p.Tenants[0]
	p.Tenants = nil
	for i := 0; i < n; i++ {
		t := base
		t.Name, t.Namespace = fmt.Sprintf("t%03d", i), fmt.Sprintf("agents-t%03d", i)
		p.Tenants = append(p.Tenants, t)
	}
	return p
}

// The tenants are swept several at a time, and their findings still come
// in the tenants' order; a tenant whose pods cannot be listed fails the
// sweep.
func TestSweepTenantsInTheirOrder(t *testing.T) {
	p := manyTenants(3 * sweepWorkers)
	var objs []runtime.Object
	for _, tn := range p.Tenants {
		objs = append(objs, &corev1.Pod{ObjectMeta: om(tn.Namespace, "stray", nil), Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	}
	got, err := sweepTenants(context.Background(), p, fake.NewClientset(objs...), nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(p.Tenants) {
		t.Fatalf("%d findings, want one per tenant:%s", len(got), describe(got))
	}
	for i, f := range got {
		if f.Rule != RuleRuntimeMissing || f.Tenant != p.Tenants[i].Name || f.Namespace != p.Tenants[i].Namespace {
			t.Errorf("finding %d: %s %s/%s of tenant %s, want S04 of tenant %s", i, f.Rule, f.Namespace, f.Name, f.Tenant, p.Tenants[i].Name)
		}
	}

	kube := fake.NewClientset(objs...)
	kube.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() == p.Tenants[len(p.Tenants)-1].Namespace {
			return true, nil, errors.New("the server is on fire")
		}
		return false, nil, nil
	})
	if _, err := sweepTenants(context.Background(), p, kube, nil, time.Now()); err == nil || !strings.Contains(err.Error(), "on fire") {
		t.Errorf("a failed list gave %v", err)
	}

	// Read cluster-wide, a failed list fails the sweep too, and so does a
	// failed read of the runtime classes a pod is judged by, even one that
	// reads as not found (not a kind the cluster lacks).
	for _, res := range []string{"pods", "runtimeclasses"} {
		kube := fake.NewClientset(&corev1.Pod{ObjectMeta: om(p.Tenants[0].Namespace, "gvisor", nil), Spec: corev1.PodSpec{RuntimeClassName: ptr("gvisor")}})
		kube.PrependReactor("list", res, func(a k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewNotFound(a.GetResource().GroupResource(), "")
		})
		if _, err := sweepTenantsRead(context.Background(), p, kube, nil, time.Now(), true); (err == nil) != (res == "pods") {
			t.Errorf("%s not found gave %v", res, err)
		}
	}
}

// pagedServer serves the LISTs of a fake client as an API server pages
// them, and counts them by resource, cluster-wide and namespaced. A list
// with a limit gets at most pageItems items (fewer than asked is the
// server's right), a continue token and the count of items left;
// expire[resource] names which of its continued lists (1: the first)
// answer 410, as when a token outlives the snapshot; extraRemaining is
// added to the count left, as on a big shared cluster.
type pagedServer struct {
	pageItems      int
	expire         map[string][]int
	extraRemaining int64

	mu         sync.Mutex
	continued  map[string]int
	wide       map[string]int
	namespaced map[string]int
}

func newPagedServer(pageItems int) *pagedServer {
	return &pagedServer{pageItems: pageItems, expire: map[string][]int{}, continued: map[string]int{}, wide: map[string]int{}, namespaced: map[string]int{}}
}

// serve puts the server in front of fake f, whose objects tracker holds.
func (ps *pagedServer) serve(t testing.TB, f *k8stesting.Fake, tracker k8stesting.ObjectTracker) {
	objects := k8stesting.ObjectReaction(tracker)
	f.PrependReactor("list", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		res, opts := a.GetResource().Resource, a.(k8stesting.ListActionImpl).ListOptions
		ps.mu.Lock()
		if a.GetNamespace() == "" {
			ps.wide[res]++
		} else {
			ps.namespaced[res]++
		}
		expire := false
		if opts.Continue != "" {
			ps.continued[res]++
			for _, n := range ps.expire[res] {
				expire = expire || n == ps.continued[res]
			}
		}
		ps.mu.Unlock()
		if expire {
			return true, nil, apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result.")
		}
		handled, obj, err := objects(a)
		if opts.Limit == 0 || err != nil || !handled {
			return handled, obj, err
		}
		items, err := meta.ExtractList(obj)
		if err != nil {
			t.Fatal(err)
		}
		from := 0
		if opts.Continue != "" {
			if from, err = strconv.Atoi(opts.Continue); err != nil {
				t.Fatal(err)
			}
		}
		to := min(from+min(int(opts.Limit), ps.pageItems), len(items))
		if err := meta.SetList(obj, items[from:to]); err != nil {
			t.Fatal(err)
		}
		lm, err := meta.ListAccessor(obj)
		if err != nil {
			t.Fatal(err)
		}
		if to < len(items) {
			left := int64(len(items)-to) + ps.extraRemaining
			lm.SetContinue(strconv.Itoa(to))
			lm.SetRemainingItemCount(&left)
		}
		return true, obj, nil
	})
}

// lists is the LISTs served of resource res, cluster-wide and namespaced.
func (ps *pagedServer) lists(res string) (wide, namespaced int) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.wide[res], ps.namespaced[res]
}

var sweepNow = time.Date(2030, 1, 2, 12, 0, 0, 0, time.UTC)

// tenantObjects are live pods, claims and sandboxes for p's tenants (every
// kind of pod and session finding, differing by tenant), and the same in
// namespaces no tenant has, which the sweep must not read as a tenant's:
// one sorts among the tenants' namespaces.
func tenantObjects(p *model.Platform, podsEach int) (pods []runtime.Object, sessions []*unstructured.Unstructured) {
	classMade := sweepNow.Add(-48 * time.Hour)
	pods = append(pods, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor", CreationTimestamp: metav1.NewTime(classMade)}, Handler: "runsc"})
	h := func(d time.Duration) time.Time { return sweepNow.Add(-d) }
	rfc := func(at time.Time) string { return at.UTC().Format(time.RFC3339) }
	add := func(ns string, i int) {
		for j := 0; j < podsEach; j++ {
			o := om(ns, fmt.Sprintf("pod-%d", j), nil)
			o.CreationTimestamp = metav1.NewTime(h(time.Hour))
			pod := &corev1.Pod{ObjectMeta: o, Spec: corev1.PodSpec{RuntimeClassName: ptr("gvisor")}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
			switch (i + j) % 7 {
			case 1: // the host kernel
				pod.Spec.RuntimeClassName = nil
			case 2: // a class not declared
				pod.Spec.RuntimeClassName = ptr("kata")
			case 3: // started before the class was last created
				pod.CreationTimestamp = metav1.NewTime(classMade.Add(-time.Hour))
			case 4: // finished: nothing runs
				pod.Spec.RuntimeClassName, pod.Status.Phase = nil, corev1.PodSucceeded
			}
			pods = append(pods, pod)
		}
		in := func(u *unstructured.Unstructured) *unstructured.Unstructured {
			u.SetNamespace(ns)
			sessions = append(sessions, u)
			return u
		}
		in(claimLive("in-time", h(time.Hour), "Delete", rfc(sweepNow.Add(time.Hour))))
		in(sandboxLive("of-in-time", h(time.Hour), "", "SandboxClaim", "uid-in-time", false))
		in(sandboxLive("pool-member", h(48*time.Hour), "", "SandboxWarmPool", "pool", false))
		if i%3 == 0 {
			in(claimLive("overdue", h(2*time.Hour), "Delete", rfc(h(10*time.Minute))))
			in(claimLive("retained-running", h(3*time.Hour), "Retain", rfc(h(2*time.Hour))))
			in(sandboxLive("of-retained-running", h(3*time.Hour), "", "SandboxClaim", "uid-retained-running", false))
		}
		if i%4 == 1 {
			in(sandboxLive("direct-overdue", h(6*time.Hour), rfc(h(2*time.Hour)), "", "", false))
			in(sandboxLive("a-direct-forever", h(5*time.Hour), "", "", "", false))
		}
	}
	for i, t := range p.Tenants {
		add(t.Namespace, i)
	}
	for i, ns := range []string{"kube-system", "agents-t001-not-a-tenant", "zz-shared"} {
		add(ns, 7*i+1)
	}
	return pods, sessions
}

// tenantClients are fake clients holding objs, behind a paged server.
func tenantClients(t testing.TB, ps *pagedServer, pods []runtime.Object, sessions []*unstructured.Unstructured) (*fake.Clientset, *dynamicfake.FakeDynamicClient) {
	kube := fake.NewClientset(pods...)
	dyn := lifetimeClient(t, sessions...)
	if ps != nil {
		ps.serve(t, &kube.Fake, kube.Tracker())
		ps.serve(t, &dyn.Fake, dyn.Tracker())
	}
	return kube, dyn
}

// The cluster-wide paged lists find what one list per tenant namespace
// finds, in the same order and words: over many pages, with namespaces no
// tenant has among them, when a continue token expires mid-list (the list
// restarts), expires again (the kind is read per namespace), and when the
// first page says the cluster holds too many pages to be worth it.
func TestSweepTenantsClusterWideFindsWhatNamespacedLists(t *testing.T) {
	p := manyTenants(60)
	for i := range p.Tenants {
		p.Tenants[i].Claims.MaxTTL = 4 * time.Hour
	}
	pods, sessions := tenantObjects(p, 5)
	ctx := context.Background()

	perNS := newPagedServer(pageSize)
	kube, dyn := tenantClients(t, perNS, pods, sessions)
	want, err := sweepTenantsRead(ctx, p, kube, dyn, sweepNow, false)
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string]int{}
	for _, f := range want {
		rules[f.Rule]++
		if !strings.HasPrefix(f.Namespace, "agents-t") || strings.HasSuffix(f.Namespace, "not-a-tenant") {
			t.Errorf("a finding outside the tenants: %s", f.Object())
		}
	}
	if rules[RuleRuntimeMissing] < 100 || rules[RuleSessionOverdue] < 50 {
		t.Fatalf("the objects should give many findings of both rules: %v", rules)
	}
	for _, res := range []string{"pods", "sandboxes", "sandboxclaims"} {
		if w, n := perNS.lists(res); w != 0 || n != len(p.Tenants) {
			t.Errorf("per namespace, %s: %d cluster-wide and %d namespaced lists, want 0 and %d", res, w, n, len(p.Tenants))
		}
	}

	podPages := (len(pods) - 1 + 6) / 7 // less the runtime class
	for _, c := range []struct {
		name   string
		expire []int
		extra  int64
		// the pods' lists, cluster-wide and namespaced
		wide, namespaced int
	}{
		{"many pages", nil, 0, podPages, 0},
		{"a token expires mid-list", []int{3}, 0, 4 + podPages, 0},
		{"a token expires twice", []int{3, 6}, 0, 4 + 4, len(p.Tenants)},
		{"a shared cluster too big to list whole", nil, 100_000, 1, len(p.Tenants)},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := newPagedServer(7)
			ps.extraRemaining = c.extra
			for _, res := range []string{"pods", "sandboxes", "sandboxclaims"} {
				ps.expire[res] = c.expire
			}
			kube, dyn := tenantClients(t, ps, pods, sessions)
			got, err := sweepTenantsRead(ctx, p, kube, dyn, sweepNow, true)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("cluster-wide:%s\nper namespace:%s", describe(got), describe(want))
			}
			if w, n := ps.lists("pods"); w != c.wide || n != c.namespaced {
				t.Errorf("pods: %d cluster-wide and %d namespaced lists, want %d and %d", w, n, c.wide, c.namespaced)
			}
			if w, n := ps.lists("runtimeclasses"); w+n != 1 {
				t.Errorf("runtime classes listed %d times, want once", w+n)
			}
		})
	}
}

// At 1,000 tenants the sweep's lists of their pods, sandboxes and claims
// are as many as the pages those take, not three per tenant.
func TestSweepTenantsListsByPagesNotTenants(t *testing.T) {
	p := manyTenants(1000)
	pods, sessions := tenantObjects(p, 3)
	ps := newPagedServer(pageSize)
	kube, dyn := tenantClients(t, ps, pods, sessions)
	got, err := sweepTenants(context.Background(), p, kube, dyn, sweepNow)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 {
		t.Fatal("no findings")
	}
	var sandboxes int
	for _, u := range sessions {
		if u.GetKind() == "Sandbox" {
			sandboxes++
		}
	}
	pages := func(n int) int { return (n + pageSize - 1) / pageSize }
	for _, c := range []struct {
		res   string
		pages int
	}{{"pods", pages(len(pods) - 1)}, {"sandboxes", pages(sandboxes)}, {"sandboxclaims", pages(len(sessions) - sandboxes)}, {"runtimeclasses", 1}} {
		w, n := ps.lists(c.res)
		if w+n > c.pages {
			t.Errorf("%s: %d lists (%d of them namespaced) for %d tenants, want at most %d: one a page", c.res, w+n, n, len(p.Tenants), c.pages)
		}
	}
}

// The tenants' part of the sweep at 1,000 tenants, read per namespace and
// cluster-wide. The fake clients cost nothing like an API server (each of
// their lists walks every object held): lists/op is what carries over.
func BenchmarkSweepTenants(b *testing.B) {
	p := manyTenants(1000)
	pods, sessions := tenantObjects(p, 3)
	for _, c := range []struct {
		name string
		wide bool
	}{{"per-namespace", false}, {"cluster-wide", true}} {
		b.Run(c.name, func(b *testing.B) {
			ps := newPagedServer(pageSize)
			kube, dyn := tenantClients(b, ps, pods, sessions)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := sweepTenantsRead(context.Background(), p, kube, dyn, sweepNow, c.wide); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			var lists int
			for _, res := range []string{"pods", "sandboxes", "sandboxclaims", "runtimeclasses"} {
				w, n := ps.lists(res)
				lists += w + n
			}
			b.ReportMetric(float64(lists)/float64(b.N), "lists/op")
		})
	}
}
