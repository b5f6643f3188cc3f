package components

import (
	"slices"
	"testing"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
)

const tEgressGateway = "paddock:network:EgressGateway"

// gatewayPlatform is testPlatform with a gateway for its tenant.
func gatewayPlatform() *model.Platform {
	p := testPlatform(model.TargetKubeconfig)
	g := model.DefaultEgressGateway()
	g.Image = "registry.example.com/paddock-gateway@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	cred := model.DefaultGatewayCredential("llm-key")
	g.Destinations = []model.GatewayDestination{{Host: "api.example-llm.com", Port: 443, Credential: &cred}}
	p.Tenants[0].EgressGateway = &g
	return p
}

// The gateway is one component under its tenant: its workload objects are
// its children, on the caller's provider, inside the tenant's fence (after
// the namespace and the NetworkPolicies), and the sandboxes' templates wait
// for it. Its NetworkPolicies are in the tenant's egress group.
func TestEgressGatewayComponent(t *testing.T) {
	m := runWithProvider(t, gatewayPlatform())
	gw := m.Find(t, tEgressGateway, "team-a")
	if gw.Parent != "paddock:tenant:Tenant::team-a" {
		t.Errorf("gateway is parented to %q", gw.Parent)
	}
	if !slices.Contains(gw.Deps, "kubernetes:networking.k8s.io/v1:NetworkPolicy::agents-team-a/"+manifests.GatewayEgressPolicy) {
		t.Errorf("gateway does not wait for its NetworkPolicies (deps %v)", gw.Deps)
	}
	var kinds []string
	for _, r := range m.All() {
		if r.Parent != gw.ID() {
			continue
		}
		kinds = append(kinds, r.Type)
		if r.Provider != "pulumi:providers:kubernetes::cluster" {
			t.Errorf("%s uses provider %q", r.ID(), r.Provider)
		}
		r.WantString(t, "metadata.labels[app.kubernetes.io/managed-by]", "paddock")
	}
	slices.Sort(kinds)
	want := []string{"kubernetes:apps/v1:Deployment", "kubernetes:core/v1:ConfigMap", "kubernetes:core/v1:Service",
		"kubernetes:core/v1:ServiceAccount", "kubernetes:rbac.authorization.k8s.io/v1:Role", "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"}
	if !slices.Equal(kinds, want) {
		t.Errorf("gateway children %v, want %v", kinds, want)
	}
	egress := m.Find(t, "paddock:network:Egress", "team-a")
	for _, np := range []string{manifests.GatewayEgressPolicy, manifests.GatewayIngressPolicy, manifests.AllowGatewayPolicy} {
		if r := m.Find(t, "kubernetes:networking.k8s.io/v1:NetworkPolicy", "agents-team-a/"+np); r.Parent != egress.ID() {
			t.Errorf("%s is parented to %q", np, r.Parent)
		}
	}
	tpl := m.Find(t, "paddock:sandbox:Template", "team-a/python")
	if !slices.Contains(tpl.Deps, "kubernetes:apps/v1:Deployment::agents-team-a/"+manifests.GatewayName) {
		t.Errorf("the template does not wait for the gateway (deps %v)", tpl.Deps)
	}
}

// Without a gateway no component is registered.
func TestNoEgressGatewayWithoutTheBlock(t *testing.T) {
	if rs := runWithProvider(t, testPlatform(model.TargetKubeconfig)).OfType(tEgressGateway); len(rs) > 0 {
		t.Errorf("%d gateways registered without an egress_gateway block", len(rs))
	}
}
