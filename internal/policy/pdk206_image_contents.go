package policy

func init() {
	register(Rule{
		ID: "PDK-206", Title: "Sandbox images hold no credentials", Severity: Error, Kind: Process,
		Control:   "No kubeconfigs, cloud key files or shared tokens are baked into the sandbox image",
		Checklist: []string{"H7"},
		Fix:       "Scan template images for secrets in CI (gitleaks, trufflehog, or your registry's scanner) before they are referenced by a template.",
	})
}
