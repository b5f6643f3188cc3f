package policy

func init() {
	register(Rule{
		ID: "PDK-701", Title: "Sandbox node pool shared with other workloads", Severity: Warning, Kind: Static,
		Control:   "Sandbox nodes are tainted so nothing but sandboxes lands there: physical separation removes shared fate",
		Checklist: []string{"H4"},
		Fix:       "Remove `dedicated = false` from the node pool.",
		check: func(c *checker) {
			for i := range c.p.NodePools {
				if np := &c.p.NodePools[i]; np.Shared && len(np.NodeTaints()) == 0 {
					c.report(nodePoolAddr(np), np.Attrs.At("dedicated", np.Src),
						"Node pool %q carries no taint: any workload of the cluster may share its nodes with sandboxes.", np.Name)
				}
			}
		},
	})
}
