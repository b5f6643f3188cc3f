package policy

func init() {
	register(Rule{
		ID: "PDK-506", Title: "Network policy enforcement verified", Severity: Error, Kind: Live,
		Control:   "The CNI really enforces the NetworkPolicies (an unenforced policy is a comment, not a boundary)",
		Checklist: []string{"H19", "H16"},
		Fix:       "Run `paddock verify`: it compares each tenant's live NetworkPolicies with the ones the spec declares, and looks for a CNI that enforces them (Cilium, Calico or GKE Dataplane V2). It sends no traffic: to see enforcement, dial a denied destination (and the metadata address) from a sandbox and expect both to fail.",
		Verify:    []string{"V09", "V10"},
	})
}
