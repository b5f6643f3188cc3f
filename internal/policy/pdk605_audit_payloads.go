package policy

func init() {
	register(Rule{
		ID: "PDK-605", Title: "Audit records payloads", Severity: Error, Kind: Static,
		Control:   "Audit records the action chain, not its content: no prompts, user code, credentials or returned data in the sink",
		Checklist: []string{"L11"},
		Fix:       "Remove `include_payloads = true`; record metadata and have the orchestrator log tool calls with masking.",
		check: func(c *checker) {
			for i := range c.p.AuditSinks {
				if s := &c.p.AuditSinks[i]; s.IncludePayloads {
					c.report(auditSinkAddr(s), s.Attrs.At("include_payloads", s.Src),
						"Audit sink %q records request and response bodies: secrets and prompts end up in %s.", s.Name, s.Destination)
				}
			}
		},
	})
}
