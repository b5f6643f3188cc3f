package verify

import (
	"context"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
)

// V01 expects the level the spec declares: a baseline tenant's namespace
// passes when it enforces baseline (audit and warn at restricted), and fails
// when it enforces anything else; a restricted tenant's namespace must
// enforce restricted.
func TestV01FollowsTheTenantsLevel(t *testing.T) {
	p := &model.Platform{Name: "p"}
	baseline := model.DefaultTenant("a")
	baseline.PodSecurity = "baseline"
	restricted := model.DefaultTenant("b")
	p.Tenants = []model.Tenant{baseline, restricted}

	applied := fake.NewSimpleClientset(manifests.Namespace(p, baseline), manifests.Namespace(p, restricted))
	v := &Verifier{p: p, kube: applied}
	for _, r := range checkNamespaces(context.Background(), v) {
		if r.Status != Pass {
			t.Errorf("%s: %s %s", r.Subject, r.Status, r.Reason)
		}
	}

	// The namespaces swapped: each enforces the other's level.
	swappedA := manifests.Namespace(p, restricted)
	swappedA.Name = baseline.Namespace
	swappedB := manifests.Namespace(p, baseline)
	swappedB.Name = restricted.Namespace
	v = &Verifier{p: p, kube: fake.NewSimpleClientset(swappedA, swappedB)}
	for _, r := range checkNamespaces(context.Background(), v) {
		if r.Status != Fail {
			t.Errorf("%s: %s %s, want a failure", r.Subject, r.Status, r.Reason)
		}
	}
}
