package policy

func init() {
	register(Rule{
		ID: "PDK-703", Title: "Control plane open to the internet", Severity: Warning, Kind: Static,
		Control:   "Only named networks reach the Kubernetes API (authorized networks)",
		Checklist: []string{"L5"},
		Fix:       "List your office or CI ranges in authorized_networks instead of a range spanning the internet.",
		// For 0.0.0.0/0 the GCP layer refuses outright (GCP-003, same
		// argument); narrower internet-wide ranges (/1../7) stay warnings here.
		SupersededBy: []string{"GCP-003"},
		check: func(c *checker) {
			cl := c.p.Cluster
			if cl == nil {
				return
			}
			for _, cidr := range cl.AuthorizedNetworks {
				if internetWide(cidr) {
					c.report("cluster", cl.Attrs.At("authorized_networks", cl.Src), "The GKE control plane accepts connections from %s.", cidr)
				}
			}
		},
	})
}
