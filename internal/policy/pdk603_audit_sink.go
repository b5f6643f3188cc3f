package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-603", Title: "Sandbox lifecycle not audited", Severity: Warning, Kind: Static,
		Control:   "API audit answers who created or deleted which Sandbox and SandboxClaim, from which identity, when, and the record leaves the cluster",
		Checklist: []string{"H22", "L11"},
		Fix:       `Add an audit_sink block (kind "bigquery", "storage" or "pubsub") whose filters include "sandbox_lifecycle" (the default).`,
		check: func(c *checker) {
			switch {
			case len(c.p.AuditSinks) == 0:
				c.report("platform", c.platformSrc(), "Platform %q has no audit sink: no record of sandbox and claim creation or deletion leaves the cluster.", c.p.Name)
			case !c.auditCovers(model.AuditSandboxLifecycle):
				s := &c.p.AuditSinks[0]
				c.report(auditSinkAddr(s), s.Attrs.At("filters", s.Src), "No audit sink receives sandbox_lifecycle: Sandbox and SandboxClaim create and delete are not recorded.")
			}
		},
	})
}
