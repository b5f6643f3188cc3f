package manifests

import (
	"testing"

	"github.com/paddock-platform/paddock/internal/model"
)

// The tenant's pod_security reaches its Namespace: enforce at the tenant's
// level, audit and warn at restricted whatever is enforced.
func TestNamespaceEnforcesTheTenantsLevel(t *testing.T) {
	p := &model.Platform{Name: "p"}
	for _, c := range []struct{ level, enforce string }{
		{"", "restricted"},
		{"restricted", "restricted"},
		{"baseline", "baseline"},
	} {
		tn := model.DefaultTenant("a")
		tn.PodSecurity = c.level
		l := Namespace(p, tn).Labels
		if l["pod-security.kubernetes.io/enforce"] != c.enforce || l["pod-security.kubernetes.io/audit"] != "restricted" ||
			l["pod-security.kubernetes.io/warn"] != "restricted" || l["pod-security.kubernetes.io/enforce-version"] != PSSVersion() {
			t.Errorf("level %q: labels %v", c.level, l)
		}
	}
}
