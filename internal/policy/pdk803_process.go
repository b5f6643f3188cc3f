package policy

func init() {
	register(Rule{
		ID: "PDK-803", Title: "Tool permissions modelled item by item", Severity: Warning, Kind: Process,
		Control:   "Each tool has a parameter schema, per-session budget, audit fields and an approval rule",
		Checklist: []string{"L6"},
		Fix:       "Define tools in the gateway with schemas, budgets and approval; `can execute shell` is not a permission model.",
	})
}
