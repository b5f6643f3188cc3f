package policy

func init() {
	register(Rule{
		ID: "PDK-704", Title: "Network policy not enforced by the cluster", Severity: Error, Kind: Static,
		Control:   "The cluster's dataplane enforces NetworkPolicy (GKE Dataplane V2); otherwise every network rule is a comment",
		Checklist: []string{"H16", "H19"},
		Fix:       "Remove `dataplane_v2 = false` from the cluster block.",
		// FQDN allow-lists need Dataplane V2: GCP-004 on the same argument.
		SupersededBy: []string{"GCP-004"},
		check: func(c *checker) {
			if cl := c.p.Cluster; cl != nil && cl.NoDataplaneV2 {
				c.report("cluster", cl.Attrs.At("dataplane_v2", cl.Src), "The GKE cluster runs without Dataplane V2: no NetworkPolicy of the platform is enforced.")
			}
		},
	})
}
