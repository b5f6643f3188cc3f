package policy

func init() {
	register(Rule{
		ID: "PDK-408", Title: "Templates owned and reviewed by the platform team", Severity: Warning, Kind: Process,
		Control:   "One hardened template per workload type, changed only through review by the platform team",
		Checklist: []string{"H13"},
		Fix:       "Keep the spec in a repository with CODEOWNERS naming the platform team for *.hcl, and run `paddock validate --format sarif` in CI on every change.",
	})
}
