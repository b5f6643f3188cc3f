package manifests

import (
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/paddock-platform/paddock/internal/model"
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
