package manifests

import (
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/paddock-platform/paddock/model"
)

// NetworkPolicySpecs are the specs of the tenant's own NetworkPolicies
// (NetworkPolicies), by name: what `paddock verify` (V09) and `paddock drift`
// compare the live policies with. Empty when the spec waives default-deny.
func NetworkPolicySpecs(p *model.Platform, t model.Tenant) (map[string]networkingv1.NetworkPolicySpec, error) {
	pols, err := NetworkPolicies(p, t)
	if err != nil {
		return nil, err
	}
	out := make(map[string]networkingv1.NetworkPolicySpec, len(pols))
	for _, np := range pols {
		out[np.Name] = np.Spec
	}
	return out, nil
}

// TemplateNetworkPolicyName is the name of the NetworkPolicy the Agent
// Sandbox controller derives from a template (and controls through it).
func TemplateNetworkPolicyName(template string) string { return template + "-network-policy" }

// TemplateNetworkPolicySpecs are the specs of the NetworkPolicies the Agent
// Sandbox controller derives from the tenant's templates, by template name:
// the template's declared networkPolicy egress, or, when it declares none,
// the controller's secure default (public internet, private ranges blocked).
func TemplateNetworkPolicySpecs(p *model.Platform, t model.Tenant) (map[string]networkingv1.NetworkPolicySpec, error) {
	out := map[string]networkingv1.NetworkPolicySpec{}
	for _, tpl := range t.Templates {
		st, err := SandboxTemplate(p, t, tpl)
		if err != nil {
			return nil, err
		}
		spec := networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}}
		if np := st.Spec.NetworkPolicy; np != nil {
			spec.Egress = np.Egress
		} else {
			spec.Egress = []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0"}}}}}
		}
		out[tpl.Name] = spec
	}
	return out, nil
}
