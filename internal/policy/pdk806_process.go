package policy

func init() {
	register(Rule{
		ID: "PDK-806", Title: "Agent artifacts go through trusted CI", Severity: Warning, Kind: Process,
		Control:   "Code, configuration and images an agent produces are rebuilt, scanned, reviewed and signed by trusted CI before release",
		Checklist: []string{"L10"},
		Fix:       "Route agent output through review and your CI; never give a sandbox identity release permissions.",
	})
}
