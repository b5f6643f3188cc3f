package policy

func init() {
	register(Rule{
		ID: "PDK-409", Title: "Claimed sandboxes never return to a pool", Severity: Error, Kind: Live,
		Control:   "A claimed sandbox serves one session and is deleted, never wiped and returned; the pool refills with fresh ones",
		Checklist: []string{"H14"},
		Fix:       "Run `paddock verify`: it claims a sandbox, releases it and checks the pool refills with a new sandbox rather than the released one.",
	})
}
