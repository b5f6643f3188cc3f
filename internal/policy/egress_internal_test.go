package policy

import (
	"testing"
	"time"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/schemas"
)

// The orchestrator's metadata server hole (issue: an orchestrator with a
// workload identity cannot reach Google APIs) is accepted only in the policy
// that selects the orchestrator's pods and nothing else: the same rule in a
// policy over every pod of the namespace would reach sandboxes too.
func TestOrchestratorMetadataHoleAcceptedOnlyForItsOwnPods(t *testing.T) {
	l := schemas.NewLoader()
	p, diags := l.LoadDir("../../examples/gke-gvisor", schemas.LoadOptions{Environ: []string{}})
	if diags.HasErrors() {
		t.Fatalf("examples/gke-gvisor does not load: %v", diags)
	}
	var tenant *model.Tenant
	for i := range p.Tenants {
		if p.OrchestratorNeedsMetadataServer(p.Tenants[i]) && !p.AgentNeedsMetadataServer(p.Tenants[i]) {
			tenant = &p.Tenants[i]
		}
	}
	if tenant == nil {
		t.Fatal("examples/gke-gvisor has no tenant whose orchestrator alone has a workload identity")
	}
	rep := Check(p, time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	for _, f := range rep.Findings {
		if f.RuleID == "PDK-502" || f.RuleID == "PDK-503" || f.RuleID == "PDK-504" {
			t.Errorf("the orchestrator's own metadata hole was reported: %s %s", f.RuleID, f.Message)
		}
	}
	te := readEgress(p, tenant)
	var hole *egressRule
	for i := range te.rules {
		if te.rules[i].orchestratorOnly {
			hole = &te.rules[i]
		}
	}
	if hole == nil {
		t.Fatalf("no rendered rule of tenant %s selects the orchestrator's pods only", tenant.Name)
	}
	if !isMetadataServerRule(p, tenant, hole) {
		t.Errorf("the orchestrator-only rule is not recognised as the metadata server hole")
	}
	wide := *hole
	wide.orchestratorOnly = false
	if isMetadataServerRule(p, tenant, &wide) {
		t.Errorf("the same rule over every pod (sandboxes included) was accepted as the orchestrator's hole")
	}
}
