package gcp

import (
	"testing"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
	"github.com/paddock-platform/paddock/internal/gcpinputs/frommodel"
	"github.com/paddock-platform/paddock/schemas"
)

const observedGKE = `platform { name = "obs" }
target "gke" {
  project  = "paddock-demo"
  location = "europe-west4"
}
node_pool "sandboxes" { isolation = "gvisor" }
agent_sandbox { version = "v0.5.6" }
runtime_class "gvisor" {
  handler   = "gvisor"
  node_pool = "sandboxes"
}
tenant "team-a" {
  claims { max_ttl = "2h" }
}
`

// A GKE spec's observability block reaches the Cloud Monitoring policies:
// the quota one over the tenant namespaces, the lifetime one at
// lifetime_factor × max_ttl. Without the block, no policy.
func TestMockAlertsFromObservabilityBlock(t *testing.T) {
	args := func(src string) PlatformArgs {
		t.Helper()
		p, diags := schemas.LoadSource("spec.hcl", []byte(src), schemas.LoadOptions{Environ: []string{}})
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		return frommodel.Args(p)
	}
	m, _ := runPlatform(t, args(observedGKE+"observability {\n  lifetime_factor = 3\n}\n"))
	q := m.Find(t, tAlert, "obs-alerts-quota-saturation")
	q.WantString(t, "conditions[0].conditionMatchedLog.filter",
		gcpinputs.QuotaExceededFilter("paddock-demo", "europe-west4", "obs", []string{"agents-team-a"}))
	l := m.Find(t, tAlert, "obs-alerts-sandbox-lifetime")
	l.WantNumber(t, "conditions[0].conditionThreshold.thresholdValue", 3*2*3600)

	none, _ := runPlatform(t, args(observedGKE))
	if n := len(none.OfType(tAlert)); n != 0 {
		t.Errorf("%d alert policies without an observability block", n)
	}
}
