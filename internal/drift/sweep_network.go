package drift

import (
	"context"
	"fmt"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
)

// The policy kinds beyond NetworkPolicy that open traffic; each CRD may be
// absent, and then its kind is skipped.
var (
	ciliumPolicies            = manifests.CiliumNetworkPolicies
	ciliumClusterwidePolicies = manifests.CiliumClusterwideNetworkPolicies
	gkeFQDNPolicies           = schema.GroupVersionResource{Group: "networking.gke.io", Version: "v1alpha1", Resource: "fqdnnetworkpolicies"}
)

// pageSize bounds what one list response holds: the sweep keeps only the
// tenants' objects of each page, so a large cluster is never in memory whole.
const pageSize = 500

// pages lists page by page, keeping what keep accepts. A continue token
// that expired fails the list: keep may have acted on what it saw.
func pages[T any](ctx context.Context, list func(context.Context, metav1.ListOptions) ([]T, string, error), keep func(*T) bool) ([]T, error) {
	var out []T
	err := walk(ctx, func(ctx context.Context, o metav1.ListOptions) (page[T], error) {
		items, cont, err := list(ctx, o)
		return page[T]{items: items, cont: cont}, err
	}, nil, func(p page[T], _ bool) (bool, error) {
		for i := range p.items {
			if keep(&p.items[i]) {
				out = append(out, p.items[i])
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// page is one answer of a paged list.
type page[T any] struct {
	items []T
	cont  string
	// remaining is how many items the API server says follow this page
	// (nil: it does not say).
	remaining *int64
}

// walk lists from the start, page by page, handing each page to visit as
// it arrives (first: the list's first page); visit returns false to stop.
// A continue token that expired (410: the list outlived the snapshot the
// API server pages through, 5 minutes by default) restarts the list from
// the start once, after restart forgets what the pages gave; without
// restart, or on a second expiry, the error is returned: a list is never
// taken whole with pages missing.
func walk[T any](ctx context.Context, list func(context.Context, metav1.ListOptions) (page[T], error), restart func(), visit func(p page[T], first bool) (bool, error)) error {
	for attempt := 0; ; attempt++ {
		err := walkOnce(ctx, list, visit)
		if !expired(err) || restart == nil || attempt > 0 {
			return err
		}
		restart()
	}
}

func walkOnce[T any](ctx context.Context, list func(context.Context, metav1.ListOptions) (page[T], error), visit func(p page[T], first bool) (bool, error)) error {
	opts := metav1.ListOptions{Limit: pageSize}
	for first := true; ; first = false {
		p, err := list(ctx, opts)
		if err != nil {
			return err
		}
		more, err := visit(p, first)
		if err != nil || !more || p.cont == "" {
			return err
		}
		opts.Continue = p.cont
	}
}

// expired is the API server's answer to a continue token it no longer
// holds the snapshot of.
func expired(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}

// dynamicPages lists a resource of the dynamic client page by page.
func dynamicPages(ctx context.Context, ri dynamic.ResourceInterface, keep func(*unstructured.Unstructured) bool) ([]unstructured.Unstructured, error) {
	return pages(ctx, func(ctx context.Context, o metav1.ListOptions) ([]unstructured.Unstructured, string, error) {
		l, err := ri.List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.GetContinue(), nil
	}, keep)
}

// served reports whether the API server serves gvr (its CRD is installed).
func served(disco discovery.DiscoveryInterface, gvr schema.GroupVersionResource) (bool, error) {
	list, err := disco.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", gvr.GroupVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return true, nil
		}
	}
	return false, nil
}

func fromUnstructured(u *unstructured.Unstructured, into any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return fmt.Errorf("reading the declared %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// templatePods are the pods of the tenant's sandbox templates: the Agent
// Sandbox controller labels each with its template's hash and selects them
// by it in the policy it derives. Any template's hash stands for all of them
// here; every template of a tenant declares the same network policy.
func templatePods() labelSet {
	return requirement(sandboxv1beta1.SandboxTemplateRefHashLabel, selection.Exists, nil, declaredSide)
}

// templateEffect is the policy the Agent Sandbox controller derives from a
// declared template: its networkPolicy, or the controller's own default when
// it declares none; nothing when the template opts out.
func templateEffect(u *unstructured.Unstructured, ns string) (netEffect, error) {
	// Only the two fields the controller derives the policy from are read:
	// converting the whole template (its pod spec) would cost far more.
	mgmt, _, _ := unstructured.NestedString(u.Object, "spec", "networkPolicyManagement")
	if extv1beta1.NetworkPolicyManagement(mgmt) == extv1beta1.NetworkPolicyManagementUnmanaged {
		return netEffect{}, nil
	}
	spec := networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}}
	if raw, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "networkPolicy"); ok && raw != nil {
		m, isMap := raw.(map[string]any)
		if !isMap {
			return netEffect{}, fmt.Errorf("the network policy of the declared template %s is not an object", u.GetName())
		}
		var np extv1beta1.NetworkPolicySpec
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &np); err != nil {
			return netEffect{}, fmt.Errorf("reading the network policy of the declared template %s: %w", u.GetName(), err)
		}
		spec.Ingress, spec.Egress = np.Ingress, np.Egress
	} else {
		spec.Ingress, spec.Egress = manifests.ControllerDefaultIngress(), manifests.ControllerDefaultEgress()
	}
	e := networkPolicyEffect(spec, ns, declaredSide)
	pods := templatePods()
	for d, targets := range e.isolates {
		for i := range targets {
			targets[i] = pods
		}
		e.isolates[d] = targets
	}
	for i := range e.rules {
		e.rules[i].target = pods
		e.rules[i].where = "template " + u.GetName() + " " + e.rules[i].where
	}
	return e, nil
}

// declaredNetwork is what tenant tp's spec lets through, read from the
// objects Paddock builds for it: its NetworkPolicies, its FQDN policy, the
// policies the Agent Sandbox controller derives from its templates, and for
// pods that none of them isolates (default deny waived), everything.
func declaredNetwork(tp manifests.TenantParts) ([]netRule, error) {
	ns := tp.Tenant.Namespace
	var effects []netEffect
	for _, u := range tp.Egress {
		switch u.GetKind() {
		case "NetworkPolicy":
			var np networkingv1.NetworkPolicy
			if err := fromUnstructured(u, &np); err != nil {
				return nil, err
			}
			effects = append(effects, networkPolicyEffect(np.Spec, ns, declaredSide))
		case "CiliumNetworkPolicy":
			e, _ := ciliumEffect(u.Object, ciliumScope{namespace: ns}, declaredSide)
			effects = append(effects, e)
		case "FQDNNetworkPolicy":
			effects = append(effects, gkeFQDNEffect(u.Object, declaredSide))
		default:
			// A new kind of egress object must be taught to the sweep, or
			// every live policy that matches it would be reported.
			return nil, fmt.Errorf("tenant %s: the sweep cannot read the declared %s %s", tp.Tenant.Name, u.GetKind(), u.GetName())
		}
	}
	var templates []netEffect
	for _, tpl := range tp.Templates {
		e, err := templateEffect(tpl.Object, ns)
		if err != nil {
			return nil, err
		}
		templates = append(templates, e)
	}
	effects = append(effects, commonToAll(templates)...)
	var rules []netRule
	for _, e := range effects {
		rules = append(rules, e.rules...)
	}
	for _, d := range []direction{ingress, egress} {
		if open, ok := unisolated(effects, d); ok {
			rules = append(rules, netRule{dir: d, target: open, peers: peerSet{any: true}, ports: portSet{any: true}, where: "pods no declared policy isolates"})
		}
	}
	return rules, nil
}

// commonToAll keeps of each template's rules only those every template
// declares. The sweep cannot tell one template's pods from another's (the
// controller selects them by a hash it computes), so a rule one template
// declares and another does not must not cover the other's pods. Today
// every template of a tenant declares the same policy, and nothing is lost.
func commonToAll(templates []netEffect) []netEffect {
	if len(templates) < 2 {
		return templates
	}
	count := map[string]int{}
	for _, e := range templates {
		seen := map[string]bool{}
		for _, r := range e.rules {
			if k := r.key(); !seen[k] {
				seen[k] = true
				count[k]++
			}
		}
	}
	out := make([]netEffect, len(templates))
	for i, e := range templates {
		out[i].isolates = e.isolates
		for _, r := range e.rules {
			if count[r.key()] == len(templates) {
				out[i].rules = append(out[i].rules, r)
			}
		}
	}
	return out
}

// unisolated are the pods no declared policy isolates in direction d, when
// they can be written as a selector: every pod when nothing isolates, the
// pods outside the templates when only the templates' policies do.
func unisolated(effects []netEffect, d direction) (labelSet, bool) {
	var targets []labelSet
	for _, e := range effects {
		targets = append(targets, e.isolates[d]...)
	}
	if len(targets) == 0 {
		return everything, true
	}
	tpl := templatePods().String()
	for _, t := range targets {
		if t.String() != tpl {
			// All pods isolated, or a mix Paddock does not declare: claim nothing.
			return labelSet{}, false
		}
	}
	return requirement(sandboxv1beta1.SandboxTemplateRefHashLabel, selection.DoesNotExist, nil, declaredSide), true
}

// tenantNetwork is one tenant and what its spec lets through.
type tenantNetwork struct {
	tenant   model.Tenant
	declared []netRule
	nsLabels labels.Set
	// own are the kind/name of the policies Paddock builds for the tenant.
	own map[string]bool
}

// gaps is what effect e opens beyond the tenant's spec.
func (tn *tenantNetwork) gaps(e netEffect) []gap {
	var out []gap
	for i := range e.rules {
		out = append(out, uncovered(&e.rules[i], tn.declared)...)
	}
	return out
}

// opensText is the one line of a network finding: what the object opens.
func opensText(gaps []gap, tenant string) string {
	const shown = 3
	var parts []string
	for i, g := range gaps {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(gaps)-shown))
			break
		}
		parts = append(parts, g.String())
	}
	return fmt.Sprintf("opens %s — beyond what tenant %s's spec allows (policies only add allows: no other policy can take it back)", strings.Join(parts, "; "), tenant)
}

// sweepNetwork judges every network policy that can select a tenant's pods
// by what it lets through.
func sweepNetwork(ctx context.Context, built *manifests.Objects, nsLabels map[string]labels.Set, kube kubernetes.Interface, dyn dynamic.Interface) ([]Finding, error) {
	tenants := map[string]*tenantNetwork{}
	var order []*tenantNetwork
	for _, tp := range built.Tenants {
		declared, err := declaredNetwork(tp)
		if err != nil {
			return nil, err
		}
		tn := &tenantNetwork{tenant: tp.Tenant, declared: declared, nsLabels: nsLabels[tp.Tenant.Namespace], own: map[string]bool{}}
		for _, u := range tp.Egress {
			tn.own[u.GetKind()+"/"+u.GetName()] = true
		}
		tenants[tp.Tenant.Namespace] = tn
		order = append(order, tn)
	}
	inTenant := func(ns string) bool { return tenants[ns] != nil }

	var out []Finding
	nps, err := pages(ctx, func(ctx context.Context, o metav1.ListOptions) ([]networkingv1.NetworkPolicy, string, error) {
		l, err := kube.NetworkingV1().NetworkPolicies(metav1.NamespaceAll).List(ctx, o)
		if err != nil {
			return nil, "", err
		}
		return l.Items, l.Continue, nil
	}, func(np *networkingv1.NetworkPolicy) bool { return inTenant(np.Namespace) })
	if err != nil {
		return nil, fmt.Errorf("listing network policies: %w", err)
	}
	for i := range nps {
		np := &nps[i]
		tn := tenants[np.Namespace]
		gaps := tn.gaps(networkPolicyEffect(np.Spec, np.Namespace, liveSide))
		if len(gaps) == 0 {
			continue
		}
		out = append(out, finding(RuleNetworkOpen, "NetworkPolicy", np.ObjectMeta, tn.tenant.Name, opensText(gaps, tn.tenant.Name), tn.fix("NetworkPolicy", "networkpolicy", np.ObjectMeta)))
	}
	if dyn == nil {
		return out, nil
	}

	// Cilium's and GKE's policies, where their CRDs are installed.
	for _, kind := range []struct {
		gvr  schema.GroupVersionResource
		kind string
	}{{ciliumPolicies, "CiliumNetworkPolicy"}, {gkeFQDNPolicies, "FQDNNetworkPolicy"}} {
		ok, err := served(kube.Discovery(), kind.gvr)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		items, err := dynamicPages(ctx, dyn.Resource(kind.gvr).Namespace(metav1.NamespaceAll), func(u *unstructured.Unstructured) bool { return inTenant(u.GetNamespace()) })
		if err != nil {
			if apierrors.IsNotFound(err) {
				continue // the CRD went away since discovery
			}
			return nil, fmt.Errorf("listing %s: %w", kind.gvr.Resource, err)
		}
		for i := range items {
			u := &items[i]
			tn := tenants[u.GetNamespace()]
			var e netEffect
			if kind.kind == "CiliumNetworkPolicy" {
				e, _ = ciliumEffect(u.Object, ciliumScope{namespace: u.GetNamespace()}, liveSide)
			} else {
				e = gkeFQDNEffect(u.Object, liveSide)
			}
			gaps := tn.gaps(e)
			if len(gaps) == 0 {
				continue
			}
			m := metav1.ObjectMeta{Namespace: u.GetNamespace(), Name: u.GetName(), Labels: u.GetLabels()}
			out = append(out, finding(RuleNetworkOpen, kind.kind, m, tn.tenant.Name, opensText(gaps, tn.tenant.Name), tn.fix(kind.kind, kind.gvr.Resource, m)))
		}
	}

	// Clusterwide Cilium policies select pods of any namespace.
	ok, err := served(kube.Discovery(), ciliumClusterwidePolicies)
	if err != nil {
		return nil, err
	}
	if !ok {
		return out, nil
	}
	ccnps, err := dynamicPages(ctx, dyn.Resource(ciliumClusterwidePolicies), func(*unstructured.Unstructured) bool { return true })
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("listing %s: %w", ciliumClusterwidePolicies.Resource, err)
	}
	for i := range ccnps {
		u := &ccnps[i]
		var hit []string
		var first []gap
		for _, tn := range order {
			e, applies := ciliumEffect(u.Object, ciliumScope{namespace: tn.tenant.Namespace, clusterwide: true, nsLabels: tn.nsLabels}, liveSide)
			if !applies {
				continue
			}
			if gaps := tn.gaps(e); len(gaps) > 0 {
				hit = append(hit, tn.tenant.Name)
				if first == nil {
					first = gaps
				}
			}
		}
		if len(hit) == 0 {
			continue
		}
		tenant, who := strings.Join(hit, ","), "tenant "+hit[0]
		if len(hit) > 1 {
			who = fmt.Sprintf("%d tenants (%s)", len(hit), listSome(hit, 3))
		}
		if len(hit) == len(order) && len(order) > 1 {
			tenant = "" // the whole platform
		}
		m := metav1.ObjectMeta{Name: u.GetName()}
		out = append(out, finding(RuleNetworkOpen, "CiliumClusterwideNetworkPolicy", m, tenant,
			strings.Replace(opensText(first, hit[0]), "tenant "+hit[0]+"'s spec", who+"'s spec", 1),
			fmt.Sprintf("kubectl delete %s %s, or narrow its endpointSelector away from the tenant namespaces", ciliumClusterwidePolicies.Resource, u.GetName())))
	}
	return out, nil
}

// fix says how to undo a policy that opens too much. One of Paddock's own
// that was edited is put back whole by the next `up`; one the Agent Sandbox
// controller derives comes back by itself once deleted; any other is
// deleted.
func (tn *tenantNetwork) fix(kind, resource string, m metav1.ObjectMeta) string {
	del := fmt.Sprintf("kubectl delete %s -n %s %s", resource, m.Namespace, m.Name)
	if tn.own[kind+"/"+m.Name] {
		return "`paddock up` puts it back as declared, removing the rules it does not declare"
	}
	if ref := metav1.GetControllerOf(&m); ref != nil && ref.Kind == "SandboxTemplate" {
		return del + "; the Agent Sandbox controller recreates it from template " + ref.Name + " as declared"
	}
	return del + fmt.Sprintf("; traffic tenant %s needs is declared in its egress block (Paddock allows no ingress)", tn.tenant.Name)
}
