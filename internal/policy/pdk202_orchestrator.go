package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-202", Title: "No scoped orchestrator identity", Severity: Warning, Kind: Static,
		Control:   "Sessions are started by an orchestrator identity that may only manage claims and read sandboxes of its own namespace",
		Checklist: []string{"H6", "L2"},
		Fix:       "Remove `orchestrator = false` from the tenant's identity block, and have your control plane create claims as agent-orchestrator.",
		check: func(c *checker) {
			c.eachTenant(func(t *model.Tenant) {
				if !t.Identity.Orchestrator {
					c.report(tenantAddr(t), t.Identity.Attrs.At("orchestrator", orSrc(t.Identity.Src, t.Src)),
						"Tenant %q has no agent-orchestrator identity: whatever creates its claims holds permissions Paddock does not scope.", t.Name)
				}
			})
		},
	})
}
