package policy

func init() {
	register(Rule{
		ID: "PDK-409", Title: "Claimed sandboxes never return to a pool", Severity: Error, Kind: Live,
		Control:   "A claimed sandbox serves one session and is deleted, never wiped and returned; the pool refills with fresh ones",
		Checklist: []string{"H14"},
		Fix:       "Run `paddock verify`: it checks each warm pool is back at its replicas with ready sandboxes. A released sandbox is deleted, not returned, because every claim must set shutdownPolicy Delete: the claims guardrail (PDK-407), which verify shows is in force by a dry-run claim it must refuse.",
		Verify:    []string{"V07", "V08"},
	})
}
