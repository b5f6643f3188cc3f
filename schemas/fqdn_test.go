package schemas

import (
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/model"
)

const fqdnSpec = `
platform { name = "p" }
%TARGET%
agent_sandbox { version = "v0.5.6" }
tenant "a" {
  egress { fqdns = ["api.example.com"] }
}
`

// FQDN egress is accepted only on targets whose CNI can enforce it, and each
// target picks its engine.
func TestFQDNPolicyFollowsTheTarget(t *testing.T) {
	for _, tc := range []struct {
		target, engine, err string
	}{
		{`target "local" {}`, model.FQDNPolicyCilium, ""},
		{`target "kubeconfig" { fqdn_policy = "cilium" }`, model.FQDNPolicyCilium, ""},
		{`target "kubeconfig" {}`, "", "FQDN egress cannot be enforced on this target"},
		{`target "kubeconfig" { fqdn_policy = "none" }`, "", "FQDN egress cannot be enforced on this target"},
		{`target "gke" {
  project  = "my-project-1"
  location = "europe-west1"
}`, model.FQDNPolicyGKE, ""},
	} {
		src := strings.Replace(fqdnSpec, "%TARGET%", tc.target, 1)
		p, diags := LoadSource("spec.hcl", []byte(src), LoadOptions{})
		if tc.err != "" {
			if !diags.HasErrors() || !strings.Contains(diags.Error(), tc.err) {
				t.Errorf("%s: want error %q, got %v", tc.target, tc.err, diags)
				continue
			}
			for _, d := range diags {
				if d.Summary == tc.err && (d.Subject == nil || d.Subject.Start.Line != 6) {
					t.Errorf("%s: error should point at the fqdns line 6: %v", tc.target, d.Subject)
				}
			}
			continue
		}
		if diags.HasErrors() {
			t.Errorf("%s: %v", tc.target, diags)
			continue
		}
		if p.Target.FQDNPolicy != tc.engine {
			t.Errorf("%s: FQDN policy %q, want %q", tc.target, p.Target.FQDNPolicy, tc.engine)
		}
	}
}
