package policy

func init() {
	register(Rule{
		ID: "PDK-804", Title: "Prompt injection cannot expand authorization", Severity: Warning, Kind: Process,
		Control:   "The model proposes actions, the authorization system decides: tool permissions, policy and approvals cannot be changed by the agent",
		Checklist: []string{"L7"},
		Fix:       "Keep policy and approvals in the control plane, out of reach of sandboxes (Paddock gives the agent runtime zero Kubernetes permissions; see PDK-201).",
	})
}
