package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-604", Title: "Network policy drops not recorded", Severity: Note, Kind: Static,
		Control:   "NetworkPolicy denials of sandbox pods are recorded: a spike is often the first sign of an agent trying to reach what it should not",
		Checklist: []string{"H23", "H19"},
		Fix:       `Add "network_drops" to the filters of an audit sink, and alert on it.`,
		check: func(c *checker) {
			if len(c.p.AuditSinks) > 0 && !c.auditCovers(model.AuditNetworkDrops) {
				s := &c.p.AuditSinks[0]
				c.report(auditSinkAddr(s), s.Attrs.At("filters", s.Src), "No audit sink receives network_drops: denied connections of sandboxes go unseen.")
			}
		},
	})
}
