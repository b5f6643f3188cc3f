package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-606", Title: "Sandbox logs not shipped out", Severity: Warning, Kind: Static,
		Control:   "Sandbox stdout and stderr leave the sandbox before its TTL deletes them",
		Checklist: []string{"H22"},
		Fix:       `Add "pod_logs" to the filters of an audit sink.`,
		check: func(c *checker) {
			if len(c.p.AuditSinks) > 0 && !c.auditCovers(model.AuditPodLogs) {
				s := &c.p.AuditSinks[0]
				c.report(auditSinkAddr(s), s.Attrs.At("filters", s.Src), "No audit sink receives pod_logs: sandbox logs die with the sandbox.")
			}
		},
	})
}
