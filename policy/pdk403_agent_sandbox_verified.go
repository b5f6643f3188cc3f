package policy

func init() {
	register(Rule{
		ID: "PDK-403", Title: "Agent Sandbox CRDs and controller verified", Severity: Error, Kind: Live,
		Control:   "The pinned release's CRDs are installed and its controller is running and ready",
		Checklist: []string{"H12"},
		Fix:       "Run `paddock verify`: it checks sandboxes.agents.x-k8s.io and the extension CRDs exist at the pinned version and the controller Deployment is available.",
	})
}
