package policy

func init() {
	register(Rule{
		ID: "PDK-607", Title: "LLM keys dedicated and spend-capped", Severity: Warning, Kind: Process,
		Control:   "The LLM key in a sandbox is a dedicated key for the agent platform with a spend limit at the provider: a leak is a billing alert, not an incident",
		Checklist: []string{"H20"},
		Fix:       "Create a provider key for the agent platform only, set its spend limit, and rotate it through the namespace's Secret.",
	})
}
