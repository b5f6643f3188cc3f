package policy

func init() {
	register(Rule{
		ID: "PDK-403", Title: "Agent Sandbox CRDs and controller verified", Severity: Error, Kind: Live,
		Control:   "The pinned release's CRDs are installed and its controller is running and ready",
		Checklist: []string{"H12"},
		Fix:       "Run `paddock verify`: it checks the controller is available (its Deployment, or on the local target the supervisor's controller), and reads the warm pools and sandboxes through the release's CRDs.",
		Verify:    []string{"V11", "V07"},
	})
}
