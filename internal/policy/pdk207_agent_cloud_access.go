package policy

import (
	"strings"

	"github.com/paddock-platform/paddock/internal/model"
)

func init() {
	register(Rule{
		ID: "PDK-207", Title: "Agent runtime identity has cloud access", Severity: Error, Kind: Static,
		Control:   "The identity sandboxes run as holds no permission at all, in the cluster or in the cloud: a manipulated agent can use whatever its identity may",
		Checklist: []string{"H5", "L4", "L7"},
		Fix:       `Give the cloud access to the orchestrator (workload_identity "orchestrator") or to a tool gateway outside the sandbox. If the agent itself must call a cloud API, waive PDK-207 with the reason, scoped to the tenant, and grant only a role on the one resource it needs.`,
		check: func(c *checker) {
			c.eachTenant(func(t *model.Tenant) {
				wi := t.Identity.WorkloadIdentity(model.AgentRuntimeServiceAccount)
				if wi == nil {
					return
				}
				what := "Google Cloud roles " + strings.Join(wi.Roles, ", ")
				if c.p.AgentNeedsMetadataServer(*t) {
					what += ", and its sandboxes reach the GKE metadata server for the tokens"
				}
				c.report(tenantAddr(t)+".workload_identity.agent", wi.Src,
					"Tenant %q gives agent-runtime, the identity its sandboxes run as, %s: a manipulated agent can act in the project with them.", t.Name, what)
			})
		},
	})
}
