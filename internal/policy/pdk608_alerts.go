package policy

func init() {
	register(Rule{
		ID: "PDK-608", Title: "Alerts on lifetime, quota saturation and policy drops", Severity: Warning, Kind: Process,
		Control:   "Misuse is visible while it happens: sandboxes living far longer than sessions, quota saturation (a runaway loop), NetworkPolicy drop spikes",
		Checklist: []string{"H23"},
		Fix:       "Alert on the audit sink's network_drops and admission records and on ResourceQuota usage of the tenant namespaces.",
	})
}
