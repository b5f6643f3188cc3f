package policy

func init() {
	register(Rule{
		ID: "PDK-205", Title: "Agent runtime identity has no RoleBindings", Severity: Error, Kind: Live,
		Control:   "The agent runtime's ServiceAccount has zero Kubernetes permissions: a stolen pod token buys nothing",
		Checklist: []string{"H5", "L4"},
		Fix:       "Paddock never binds agent-runtime; `paddock verify` asks the API server whether agent-runtime may do any of the actions a compromised sandbox would try first and fails on each it may, `paddock drift` lists any RoleBinding or ClusterRoleBinding someone else added, and `kubectl auth can-i --list --as=system:serviceaccount:<ns>:agent-runtime` must show nothing.",
		Verify:    []string{"V03"},
	})
}
