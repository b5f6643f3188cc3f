package policy

func init() {
	register(Rule{
		ID: "PDK-702", Title: "Nodes have public IP addresses", Severity: Warning, Kind: Static,
		Control:   "Nodes are not reachable from the internet (private nodes); egress leaves through Cloud NAT",
		Checklist: []string{"L5"},
		Fix:       "Remove `private_nodes = false` from the cluster block.",
		check: func(c *checker) {
			if cl := c.p.Cluster; cl != nil && cl.PublicNodes {
				c.report("cluster", cl.Attrs.At("private_nodes", cl.Src), "The GKE cluster's nodes get public IP addresses.")
			}
		},
	})
}
