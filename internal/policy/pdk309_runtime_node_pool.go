package policy

func init() {
	register(Rule{
		ID: "PDK-309", Title: "Sandbox runtime has no node pool", Severity: Error, Kind: Static,
		Control:   "On a cluster Paddock creates, every sandbox runtime a template uses is provided by a node pool of matching isolation",
		Checklist: []string{"H8"},
		Fix:       `Declare a node_pool with the runtime's isolation ("gvisor" or "kvm") and set node_pool on the runtime class.`,
		check: func(c *checker) {
			if !c.gke() {
				return
			}
			for _, rc := range c.usedRuntimeClasses() {
				if rc.NodePool == "" {
					c.report(runtimeClassAddr(rc), rc.Src,
						"Runtime class %q names no node_pool: no node of the GKE cluster Paddock creates is known to provide handler %q.", rc.Name, rc.Handler)
				}
			}
		},
	})
}
