package policy

func init() {
	register(Rule{
		ID: "PDK-106", Title: "Sandboxes not pinned to dedicated nodes", Severity: Warning, Kind: Static,
		Control:   "Sandboxes run on nodes of their own (node selector and toleration of a tainted pool), so a hostile pod shares no node with other workloads",
		Checklist: []string{"H4"},
		Fix:       "Give the runtime class a node_pool (target \"gke\"), or the node_selector and toleration of your sandbox nodes.",
		check: func(c *checker) {
			for _, rc := range c.usedRuntimeClasses() {
				if len(rc.NodeSelector) == 0 && len(rc.Tolerations) == 0 {
					c.report(runtimeClassAddr(rc), rc.Src,
						"Runtime class %q sets no node selector or toleration: its sandboxes land on any node.", rc.Name)
				}
			}
		},
	})
}
