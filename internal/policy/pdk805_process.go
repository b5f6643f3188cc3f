package policy

func init() {
	register(Rule{
		ID: "PDK-805", Title: "Session token, time and cost budgets", Severity: Warning, Kind: Process,
		Control:   "Each session has hard limits on model tokens, wall time and cost, enforced by the control plane",
		Checklist: []string{"L8"},
		Fix:       "Enforce per-session token and cost budgets in the orchestrator; Paddock enforces time (PDK-406) and resources (PDK-103, PDK-308).",
	})
}
