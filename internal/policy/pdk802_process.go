package policy

func init() {
	register(Rule{
		ID: "PDK-802", Title: "Control plane, sandbox and tool gateway separated", Severity: Warning, Kind: Process,
		Control:   "Sessions, policy and budgets live in a control plane; tools are reached through a gateway; the sandbox holds neither",
		Checklist: []string{"L2"},
		Fix:       "Run the orchestrator and tool gateway outside the tenant namespaces; sandboxes reach tools only through the egress proxy or gateway.",
	})
}
