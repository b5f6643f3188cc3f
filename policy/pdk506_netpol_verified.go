package policy

func init() {
	register(Rule{
		ID: "PDK-506", Title: "Network policy enforcement verified", Severity: Error, Kind: Live,
		Control:   "The CNI really enforces the NetworkPolicies (an unenforced policy is a comment, not a boundary)",
		Checklist: []string{"H19", "H16"},
		Fix:       "Run `paddock verify`: from a test sandbox it tries a destination the policy denies (and the metadata address) and expects both to fail.",
	})
}
