package manifests

import (
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-platform/paddock/internal/model"
)

// ControllerDefaultEgress is the egress the pinned Agent Sandbox controller
// (v0.5.6, extensions/controllers: buildDefaultNetworkPolicySpec) gives the
// sandboxes of a managed SandboxTemplate that carries no network policy of its
// own, which is what Paddock renders when a tenant sets default_deny = false:
// every port of the public internet, private and link-local ranges excepted.
// Policy judges it like any rule Paddock writes itself.
func ControllerDefaultEgress() []networkingv1.NetworkPolicyEgressRule {
	return []networkingv1.NetworkPolicyEgressRule{{
		To: []networkingv1.NetworkPolicyPeer{
			{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"}}},
			{IPBlock: &networkingv1.IPBlock{CIDR: "::/0", Except: []string{"fc00::/7", "fe80::/10"}}},
		},
	}}
}

// ControllerDefaultIngress is the ingress the same default policy allows:
// the Agent Sandbox router's pods only (agent-sandbox-system, app=sandbox-router).
func ControllerDefaultIngress() []networkingv1.NetworkPolicyIngressRule {
	return []networkingv1.NetworkPolicyIngressRule{{
		From: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "agent-sandbox-system"}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sandbox-router"}},
		}},
	}}
}

// EgressView is every object of one tenant that opens egress for its
// sandboxes (NetworkPolicies, the FQDN policy, SandboxTemplates with their
// managed policy), built by the very functions whose output `render` writes
// and `up` applies, with the spec origin of each of their egress rules.
// Policy judges egress on this, not on spec fields, so that no way of
// writing a hole escapes it.
type EgressView struct {
	Objects []*unstructured.Unstructured
	// Origins maps each egress rule of Objects to the spec argument that
	// opened it. A rule without an entry is still judged; its finding then
	// points at the tenant.
	Origins map[RuleRef]Origin
}

// TenantEgress builds the EgressView of tenant t.
func TenantEgress(p *model.Platform, t model.Tenant) (EgressView, error) {
	v := EgressView{Origins: map[RuleRef]Origin{}}
	pols, origins, err := networkPolicies(p, t)
	if err != nil {
		return v, err
	}
	for ref, o := range origins {
		v.Origins[ref] = o
	}
	objs, err := egressObjects(p, t, pols)
	if err != nil {
		return v, err
	}
	v.Objects = append(v.Objects, objs...)
	if fq := FQDNPolicy(p, t); fq != nil {
		at := Origin{Field: OriginFQDNs, Src: t.Egress.Attrs.At("fqdns", orSrc(t.Egress.Src, t.Src))}
		rules, _, _ := unstructured.NestedSlice(fq.Object, "spec", "egress")
		for i := range rules {
			v.Origins[RuleRef{Kind: fq.GetKind(), Name: t.Namespace + "/" + fq.GetName(), Index: i}] = at
		}
	}
	_, _, tplOrigins, err := templateNetworkPolicy(p, t)
	if err != nil {
		return v, err
	}
	for _, tpl := range t.Templates {
		u, err := TemplateObject(p, t, tpl)
		if err != nil {
			return v, err
		}
		v.Objects = append(v.Objects, u)
		for i, o := range tplOrigins {
			v.Origins[RuleRef{Kind: u.GetKind(), Name: t.Namespace + "/" + tpl.Name, Index: i}] = o
		}
	}
	return v, nil
}

// egressObjects are pols as unstructured objects, then the FQDN policy.
func egressObjects(p *model.Platform, t model.Tenant, pols []*networkingv1.NetworkPolicy) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, np := range pols {
		u, err := ToUnstructured(np)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	if fq := FQDNPolicy(p, t); fq != nil {
		out = append(out, fq)
	}
	return out, nil
}

// IsClusterDNSPeer reports whether peer selects the cluster resolver and
// nothing else (DNSEgressRule's peer).
func IsClusterDNSPeer(peer networkingv1.NetworkPolicyPeer) bool {
	want := DNSEgressRule().To[0]
	return peer.IPBlock == nil && selectorEqual(peer.NamespaceSelector, want.NamespaceSelector) && selectorEqual(peer.PodSelector, want.PodSelector)
}

func selectorEqual(a, b *metav1.LabelSelector) bool {
	if a == nil || b == nil {
		return a == b
	}
	if len(a.MatchExpressions) > 0 || len(b.MatchExpressions) > 0 || len(a.MatchLabels) != len(b.MatchLabels) {
		return false
	}
	for k, v := range b.MatchLabels {
		if a.MatchLabels[k] != v {
			return false
		}
	}
	return true
}
