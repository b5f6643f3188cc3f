package policy

func init() {
	register(Rule{
		ID: "PDK-705", Title: "Workload Identity off", Severity: Error, Kind: Static,
		Control:   "Pods never see the node's cloud credentials: cloud access goes through a per-namespace workload identity",
		Checklist: []string{"H7", "L4"},
		Fix:       "Remove `workload_identity = false` from the cluster block.",
		check: func(c *checker) {
			if cl := c.p.Cluster; cl != nil && cl.NoWorkloadIdentity {
				c.report("cluster", cl.Attrs.At("workload_identity", cl.Src), "The GKE cluster runs without Workload Identity: the node's service account credentials are one metadata request away.")
			}
		},
	})
}
