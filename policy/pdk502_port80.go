package policy

import "github.com/paddock-platform/paddock/model"

func init() {
	register(Rule{
		ID: "PDK-502", Title: "Egress on port 80", Severity: Error, Kind: Static,
		Control:   "No plain-HTTP egress: the cloud metadata service speaks HTTP on port 80, so without port 80 it stays unreachable by construction",
		Checklist: []string{"H17"},
		Fix:       "Remove port 80 from the allow; reach HTTP-only destinations through the egress proxy.",
		check: func(c *checker) {
			c.eachTenant(func(t *model.Tenant) {
				for i := range t.Egress.Allows {
					a := &t.Egress.Allows[i]
					if hasPort(a.Ports, 80) && !isMetadataServerHole(c.p, t, a) {
						c.report(tenantAddr(t), a.Attrs.At("ports", a.Src), "Tenant %q allows egress to %s on port 80.", t.Name, a.CIDR)
					}
				}
			})
		},
	})
}
