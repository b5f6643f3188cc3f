package policy

func init() {
	register(Rule{
		ID: "PDK-609", Title: "Per-session credentials", Severity: Note, Kind: Process,
		Control:   "Sandboxes hold no standing secret where the design allows: the orchestrator or proxy mints a token per session or execution and revokes it after",
		Checklist: []string{"H21"},
		Fix:       "Keep real provider credentials in the egress proxy or tool gateway; hand sandboxes short-lived, execution-scoped tokens.",
	})
}
