package drift

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"golang.org/x/sync/errgroup"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
)

// The tenants' pods (S04), sandboxes and claims (S08) are read one of two
// ways, chosen per kind:
//
//   - one list per tenant namespace, sweepWorkers at a time: three lists a
//     tenant, which at 1,000 tenants were 3,000 of the 4,137 LISTs of a
//     drift and most of its 59 s;
//   - one cluster-wide list, pageSize items a page, judged as each page
//     arrives and dropped but for the findings (and the names of claims'
//     running sandboxes): as many lists as pages, whatever the tenant count,
//     and never the whole cluster's pods in memory.
//
// A cluster-wide page also carries every pod that is not a tenant's: on a
// big shared cluster with a few tenants it reads far more than it keeps.
// So the cluster-wide list is tried from clusterWideTenants tenants on, and
// its first page decides: when the API server says the whole list takes
// more pages than pageWeight-to-one against the namespaced lists, the kind
// is read per namespace after all (one page wasted).
const (
	// sweepWorkers bounds the namespaced lists in flight, per kind.
	sweepWorkers = 16
	// clusterWideTenants: below it a kind takes at most 49 namespaced
	// lists, 16 at a time, and a first page wasted on a shared cluster
	// (pageWeight lists' worth) would be a large share of them; at 50 it
	// is 8% at worst, and on a platform's own cluster (a few pods a
	// tenant) one page holds what 50 lists would.
	clusterWideTenants = 50
	// pageWeight is what a full page costs in namespaced lists: 500 pods
	// are 1.5-2.5 MB of JSON to encode and decode, 20-50 ms at each end,
	// where a tenant's own list of a few pods is one round trip of 5-10 ms.
	pageWeight = 4
)

// sweepTenants judges each tenant's pods (S04) and sandbox lifetimes; the
// findings come in the tenants' order, each tenant's pods then sessions,
// as if swept one after the other.
func sweepTenants(ctx context.Context, p *model.Platform, kube kubernetes.Interface, dyn dynamic.Interface, now time.Time) ([]Finding, error) {
	return sweepTenantsRead(ctx, p, kube, dyn, now, len(p.Tenants) >= clusterWideTenants)
}

// sweepTenantsRead is sweepTenants with the cluster-wide lists tried
// (wide) or not.
func sweepTenantsRead(ctx context.Context, p *model.Platform, kube kubernetes.Interface, dyn dynamic.Interface, now time.Time, wide bool) ([]Finding, error) {
	s := newTenantSweep(p, kube, now, wide)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		return readTenants(gctx, s, podKind(kube), func() {
			s.pods = make([][]Finding, len(s.tenants))
		}, s.pod)
	})
	if dyn != nil {
		g.Go(func() error {
			// Every sandbox before any claim: a claim is judged with the
			// sandboxes it still runs.
			err := readTenants(gctx, s, sessionKind(dyn, agentsandbox.Sandboxes), func() {
				for _, ss := range s.sessions {
					ss.forgetSandboxes()
				}
			}, func(_ context.Context, i int, sb *unstructured.Unstructured) error {
				s.sessions[i].sandbox(sb)
				return nil
			})
			if err != nil {
				return err
			}
			return readTenants(gctx, s, sessionKind(dyn, agentsandbox.SandboxClaims), func() {
				for _, ss := range s.sessions {
					ss.forgetClaims()
				}
			}, func(_ context.Context, i int, c *unstructured.Unstructured) error {
				s.sessions[i].claim(c)
				return nil
			})
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []Finding
	for i := range s.tenants {
		out = append(out, s.pods[i]...)
		out = append(out, s.sessions[i].findings()...)
	}
	return out, nil
}

// tenantSweep is what the sweep keeps of the tenants while their pods,
// sandboxes and claims are read: each tenant's findings by its index, in
// slots no two readers share.
type tenantSweep struct {
	tenants []model.Tenant
	wide    bool
	byNS    map[string][]int // a namespace's tenants
	rules   []podRules
	classes *runtimeClasses
	pods    [][]Finding
	// sessions judge each tenant's claims and sandboxes.
	sessions []*sessions
}

func newTenantSweep(p *model.Platform, kube kubernetes.Interface, now time.Time, wide bool) *tenantSweep {
	s := &tenantSweep{tenants: p.Tenants, wide: wide, byNS: map[string][]int{}, classes: &runtimeClasses{kube: kube},
		pods: make([][]Finding, len(p.Tenants))}
	for i, t := range p.Tenants {
		s.byNS[t.Namespace] = append(s.byNS[t.Namespace], i)
		s.rules = append(s.rules, podRulesOf(p, t))
		s.sessions = append(s.sessions, newSessions(t, now))
	}
	return s
}

// tenantKind is a kind read in every tenant namespace: list lists one
// namespace, or every one ("").
type tenantKind[T any] struct {
	what      string
	list      func(ctx context.Context, ns string, o metav1.ListOptions) (page[T], error)
	namespace func(*T) string
}

func podKind(kube kubernetes.Interface) tenantKind[corev1.Pod] {
	return tenantKind[corev1.Pod]{what: "pods",
		list: func(ctx context.Context, ns string, o metav1.ListOptions) (page[corev1.Pod], error) {
			l, err := kube.CoreV1().Pods(ns).List(ctx, o)
			if err != nil {
				return page[corev1.Pod]{}, err
			}
			return page[corev1.Pod]{items: l.Items, cont: l.Continue, remaining: l.RemainingItemCount}, nil
		},
		namespace: func(p *corev1.Pod) string { return p.Namespace },
	}
}

func sessionKind(dyn dynamic.Interface, gvr schema.GroupVersionResource) tenantKind[unstructured.Unstructured] {
	return tenantKind[unstructured.Unstructured]{what: gvr.GroupResource().String(),
		list: func(ctx context.Context, ns string, o metav1.ListOptions) (page[unstructured.Unstructured], error) {
			l, err := dyn.Resource(gvr).Namespace(ns).List(ctx, o)
			if err != nil {
				return page[unstructured.Unstructured]{}, err
			}
			return page[unstructured.Unstructured]{items: l.Items, cont: l.GetContinue(), remaining: l.GetRemainingItemCount()}, nil
		},
		namespace: func(u *unstructured.Unstructured) string { return u.GetNamespace() },
	}
}

// readTenants hands judge every item of kind k in a tenant namespace, with
// its tenant's index: from one cluster-wide paged list when s.wide and the
// first page finds it worth it, else one list per namespace. A list whose
// continue token expired twice is read again per namespace, after forget
// drops what its pages gave. A kind the API server does not serve (its
// CRD absent) holds nothing.
func readTenants[T any](ctx context.Context, s *tenantSweep, k tenantKind[T], forget func(), judge func(context.Context, int, *T) error) error {
	if s.wide {
		worth := true
		var judgeErr error // not the list's: never read as its answer
		err := walk(ctx, func(ctx context.Context, o metav1.ListOptions) (page[T], error) {
			return k.list(ctx, metav1.NamespaceAll, o)
		}, forget, func(p page[T], first bool) (bool, error) {
			if first && p.remaining != nil && pageWeight*pagesOf(len(p.items)+int(*p.remaining)) > len(s.tenants) {
				worth = false
				return false, nil
			}
			for i := range p.items {
				for _, t := range s.byNS[k.namespace(&p.items[i])] {
					if judgeErr = judge(ctx, t, &p.items[i]); judgeErr != nil {
						return false, nil
					}
				}
			}
			return true, nil
		})
		switch {
		case judgeErr != nil:
			return judgeErr
		case err == nil && worth:
			return nil
		case apierrors.IsNotFound(err):
			forget()
			return nil
		case err != nil && !expired(err):
			return fmt.Errorf("listing %s: %w", k.what, err)
		}
		forget()
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(sweepWorkers)
	for i, t := range s.tenants {
		g.Go(func() error {
			p, err := k.list(gctx, t.Namespace, metav1.ListOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("listing %s in %s: %w", k.what, t.Namespace, err)
			}
			for j := range p.items {
				if err := judge(gctx, i, &p.items[j]); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// pagesOf is how many pages n items take.
func pagesOf(n int) int { return (n + pageSize - 1) / pageSize }

// sweepPods judges one tenant's pods (S04), from one list of its namespace.
func sweepPods(ctx context.Context, p *model.Platform, t model.Tenant, kube kubernetes.Interface) ([]Finding, error) {
	one := *p
	one.Tenants = []model.Tenant{t}
	s := newTenantSweep(&one, kube, time.Time{}, false)
	if err := readTenants(ctx, s, podKind(kube), func() {}, s.pod); err != nil {
		return nil, err
	}
	return s.pods[0], nil
}

// podRules are the runtime classes a tenant's pods may run under.
type podRules struct {
	allowed  map[string]bool
	declared map[string]string // class → the handler the spec gives it
	names    string            // the allowed classes, for the reason
}

func podRulesOf(p *model.Platform, t model.Tenant) podRules {
	r := podRules{allowed: map[string]bool{}, declared: map[string]string{}}
	for _, rc := range p.RuntimeClasses {
		r.allowed[rc.Name] = true
		r.declared[rc.Name] = rc.Handler
	}
	for _, tpl := range t.Templates {
		// A template without a runtime class is a waived PDK-301: its pods may run without one.
		r.allowed[tpl.RuntimeClass] = true
	}
	names := make([]string, 0, len(r.allowed))
	for n := range r.allowed {
		if n != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	r.names = strings.Join(names, " or ")
	return r
}

// pod judges a pod of tenant i (S04).
func (s *tenantSweep) pod(ctx context.Context, i int, pod *corev1.Pod) error {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	t, r := s.tenants[i], s.rules[i]
	rc := ""
	if pod.Spec.RuntimeClassName != nil {
		rc = *pod.Spec.RuntimeClassName
	}
	if !r.allowed[rc] {
		got := "no runtime class (the host kernel)"
		if rc != "" {
			got = "runtime class " + rc
		}
		s.pods[i] = append(s.pods[i], finding(RuleRuntimeMissing, "Pod", pod.ObjectMeta, t.Name,
			fmt.Sprintf("runs with %s; tenant %s's pods must run under %s", got, t.Name, r.names),
			fmt.Sprintf("kubectl delete pod -n %s %s, and find what created it outside the platform's templates", pod.Namespace, pod.Name)))
		return nil
	}
	want, managed := r.declared[rc]
	if rc == "" || !managed || want == "" {
		return nil
	}
	classes, err := s.classes.get(ctx)
	if err != nil {
		return err
	}
	// The kubelet resolves the class to a handler when the pod starts: a
	// class swapped since (or swapped and put back) says nothing of it.
	why := ""
	live, ok := classes[rc]
	switch {
	case !ok:
		why = fmt.Sprintf("its runtime class %s no longer exists, so the handler it was started under cannot be known", rc)
	case live.Handler != want:
		why = fmt.Sprintf("its runtime class %s now resolves to handler %s, not %s as declared: the pod may run on another runtime than the sandbox's", rc, live.Handler, want)
	case live.CreationTimestamp.After(pod.CreationTimestamp.Time):
		why = fmt.Sprintf("it was created (%s) before runtime class %s was last created (%s): the class was replaced under it, so the handler it was started under cannot be known",
			pod.CreationTimestamp.UTC().Format(time.RFC3339), rc, live.CreationTimestamp.UTC().Format(time.RFC3339))
	}
	if why == "" {
		return nil
	}
	s.pods[i] = append(s.pods[i], finding(RuleRuntimeMissing, "Pod", pod.ObjectMeta, t.Name, why,
		fmt.Sprintf("`paddock up` puts runtime class %s back as declared; then kubectl delete pod -n %s %s (a warm pool or claim starts a new one under the declared handler)", rc, pod.Namespace, pod.Name)))
	return nil
}

// runtimeClasses are the cluster's RuntimeClasses by name, read once in a
// sweep, when a pod first names a declared one.
type runtimeClasses struct {
	kube kubernetes.Interface
	mu   sync.Mutex
	read bool
	m    map[string]nodev1.RuntimeClass
	err  error
}

func (c *runtimeClasses) get(ctx context.Context) (map[string]nodev1.RuntimeClass, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.read {
		c.m, c.err = liveRuntimeClasses(ctx, c.kube)
		c.read = true
	}
	return c.m, c.err
}

// liveRuntimeClasses are the cluster's RuntimeClasses by name.
func liveRuntimeClasses(ctx context.Context, kube kubernetes.Interface) (map[string]nodev1.RuntimeClass, error) {
	l, err := kube.NodeV1().RuntimeClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing runtime classes: %w", err)
	}
	out := make(map[string]nodev1.RuntimeClass, len(l.Items))
	for _, rc := range l.Items {
		out[rc.Name] = rc
	}
	return out, nil
}
