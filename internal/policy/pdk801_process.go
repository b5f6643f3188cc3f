package policy

func init() {
	register(Rule{
		ID: "PDK-801", Title: "State and permission model documented", Severity: Warning, Kind: Process,
		Control:   "Agents are designed as stateful, credentialed, untrusted workloads, not services: the team has written down what each agent may hold, reach and do",
		Checklist: []string{"L1"},
		Fix:       "Write the agent threat model next to the spec: state kept, credentials held, tools reachable, and who approves what.",
	})
}
