// Package cluster is the egress gateway's cluster layer: it knows which
// sandbox, and which claim, is behind a pod address (Identifier, from
// informers on the tenant's namespace) or a projected service-account token
// (TokenReviewer, the TokenReview API).
//
// How a caller is named, from the pinned Agent Sandbox release's own
// controllers:
//   - The sandbox's pod has a controller ownerReference to its Sandbox
//     (agents.x-k8s.io); the pod usually bears the sandbox's name, but the
//     reference, not the name, decides.
//   - A warm sandbox's controller is its SandboxWarmPool. When a claim adopts
//     it, the claim controller replaces the Sandbox's ownerReferences with a
//     controller reference to the SandboxClaim (extensions.agents.x-k8s.io)
//     and labels the Sandbox with the claim's UID. The claim's identity
//     reaches the Sandbox only: the sandbox controller does not copy the
//     agents.x-k8s.io/* labels onto an adopted pod. So the Identifier
//     watches pods and Sandboxes both, and reads the claim's name from the
//     Sandbox's controller reference.
//
// Both informers watch the tenant's namespace only, and keep only the few
// fields the mapping reads (a transform drops the rest), so memory grows
// with the number of pods, not with their specs.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extensionsv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"

	"github.com/paddock-platform/paddock/internal/gateway"
	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
)

// ipIndex indexes pods by each of their addresses.
const ipIndex = "podIP"

// Identifier maps a pod address of the tenant's namespace to the sandbox
// there and the claim it serves. It implements gateway.Identifier and
// answers from its informers' memory.
type Identifier struct {
	namespace string
	pods      cache.SharedIndexInformer
	sandboxes cache.SharedIndexInformer
	start     func(stop <-chan struct{})
}

// NewIdentifier makes the informers for namespace; Start runs them.
func NewIdentifier(kube kubernetes.Interface, dyn dynamic.Interface, namespace string) (*Identifier, error) {
	if namespace == "" {
		return nil, errors.New("the gateway's namespace is required (the tenant's namespace, whose pods it serves)")
	}
	// No resync: the mapping reads the cache, and a resync only replays it.
	pf := informers.NewSharedInformerFactoryWithOptions(kube, 0,
		informers.WithNamespace(namespace), informers.WithTransform(slimPod))
	pods := pf.Core().V1().Pods().Informer()
	if err := pods.AddIndexers(cache.Indexers{ipIndex: podIPs}); err != nil {
		return nil, fmt.Errorf("indexing pods by address: %w", err)
	}
	sf := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, namespace, nil)
	sandboxes := sf.ForResource(agentsandbox.Sandboxes).Informer()
	if err := sandboxes.SetTransform(slimSandbox); err != nil {
		return nil, fmt.Errorf("sandboxes informer: %w", err)
	}
	return &Identifier{
		namespace: namespace,
		pods:      pods,
		sandboxes: sandboxes,
		start: func(stop <-chan struct{}) {
			pf.Start(stop)
			sf.Start(stop)
		},
	}, nil
}

// Start runs the informers until ctx ends.
func (id *Identifier) Start(ctx context.Context) { id.start(ctx.Done()) }

// WaitForSync waits, at most timeout, until both informers hold the
// namespace's pods and Sandboxes. Its error says what to check.
func (id *Identifier) WaitForSync(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if cache.WaitForCacheSync(ctx.Done(), id.pods.HasSynced, id.sandboxes.HasSynced) {
		return nil
	}
	var missing []string
	if !id.pods.HasSynced() {
		missing = append(missing, "pods")
	}
	if !id.sandboxes.HasSynced() {
		missing = append(missing, agentsandbox.Sandboxes.GroupResource().String())
	}
	return fmt.Errorf("the gateway could not list and watch %v in namespace %s within %s: check that the API server is reachable from the gateway's pod (its egress policy) and that its Role grants get, list and watch on them",
		missing, id.namespace, timeout)
}

// Identify names the sandbox at addr, or refuses (gateway.ErrUnknownCaller)
// an address that is no running sandbox pod of the namespace.
func (id *Identifier) Identify(_ context.Context, addr netip.Addr) (gateway.Caller, error) {
	objs, err := id.pods.GetIndexer().ByIndex(ipIndex, addr.Unmap().String())
	if err != nil {
		return gateway.Caller{}, err
	}
	// An address is reused only once its pod is gone or finished, but the
	// informer may still hold the old pod for a moment: a live pod wins
	// over one being deleted, and two live ones refuse.
	var live, leaving []*corev1.Pod
	for _, o := range objs {
		p, ok := o.(*corev1.Pod)
		if !ok || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if p.DeletionTimestamp != nil {
			leaving = append(leaving, p)
		} else {
			live = append(live, p)
		}
	}
	if len(live) == 0 {
		live = leaving
	}
	if len(live) != 1 {
		return gateway.Caller{}, gateway.ErrUnknownCaller
	}
	return id.callerOf(live[0])
}

// Pod names the sandbox of the namespace's pod name, if its UID is uid
// (when uid is set): the TokenReviewer's lookup.
func (id *Identifier) Pod(name, uid string) (gateway.Caller, error) {
	o, ok, err := id.pods.GetIndexer().GetByKey(id.namespace + "/" + name)
	if err != nil {
		return gateway.Caller{}, err
	}
	p, _ := o.(*corev1.Pod)
	if !ok || p == nil || (uid != "" && string(p.UID) != uid) {
		return gateway.Caller{}, gateway.ErrUnknownCaller
	}
	return id.callerOf(p)
}

// callerOf names pod's sandbox and claim. A pod that no Sandbox controls,
// or whose Sandbox is not (or no longer) known, is no caller.
func (id *Identifier) callerOf(p *corev1.Pod) (gateway.Caller, error) {
	ref := controllerOf(p.OwnerReferences, agentsandbox.Sandboxes.Group, sandboxv1beta1.SandboxKind)
	if ref == nil {
		return gateway.Caller{}, gateway.ErrUnknownCaller
	}
	o, ok, err := id.sandboxes.GetIndexer().GetByKey(id.namespace + "/" + ref.Name)
	if err != nil {
		return gateway.Caller{}, err
	}
	sb, _ := o.(*unstructured.Unstructured)
	if !ok || sb == nil || sb.GetUID() != ref.UID {
		return gateway.Caller{}, gateway.ErrUnknownCaller
	}
	c := gateway.Caller{Namespace: id.namespace, Pod: p.Name, Sandbox: sb.GetName()}
	if cl := controllerOf(sb.GetOwnerReferences(), agentsandbox.SandboxClaims.Group, extensionsv1beta1.SandboxClaimKind); cl != nil {
		c.Claim = cl.Name
	}
	return c, nil
}

// controllerOf is the controller reference of kind in group, or nil.
func controllerOf(refs []metav1.OwnerReference, group, kind string) *metav1.OwnerReference {
	for i, r := range refs {
		if r.Controller == nil || !*r.Controller || r.Kind != kind {
			continue
		}
		if gv, err := schema.ParseGroupVersion(r.APIVersion); err == nil && gv.Group == group {
			return &refs[i]
		}
	}
	return nil
}

func podIPs(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	var out []string
	for _, ip := range p.Status.PodIPs {
		if a, err := netip.ParseAddr(ip.IP); err == nil {
			out = append(out, a.Unmap().String())
		}
	}
	if len(out) == 0 && p.Status.PodIP != "" {
		if a, err := netip.ParseAddr(p.Status.PodIP); err == nil {
			out = append(out, a.Unmap().String())
		}
	}
	return out, nil
}

// slimPod keeps what the mapping reads of a pod.
func slimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil // a deletion tombstone: the informer handles it
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
			DeletionTimestamp: p.DeletionTimestamp, OwnerReferences: p.OwnerReferences,
		},
		Status: corev1.PodStatus{Phase: p.Status.Phase, PodIP: p.Status.PodIP, PodIPs: p.Status.PodIPs},
	}, nil
}

// slimSandbox keeps what the mapping reads of a Sandbox.
func slimSandbox(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	out := &unstructured.Unstructured{Object: map[string]any{}}
	out.SetAPIVersion(u.GetAPIVersion())
	out.SetKind(u.GetKind())
	out.SetName(u.GetName())
	out.SetNamespace(u.GetNamespace())
	out.SetUID(u.GetUID())
	out.SetResourceVersion(u.GetResourceVersion())
	out.SetOwnerReferences(u.GetOwnerReferences())
	return out, nil
}
