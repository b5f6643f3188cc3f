package policy

import "github.com/paddock-platform/paddock/model"

func init() {
	register(Rule{
		ID: "PDK-505", Title: "DNS to an uncontrolled resolver", Severity: Warning, Kind: Static,
		Control:   "Name resolution goes to the cluster's resolver only: DNS is a classic exfiltration channel",
		Checklist: []string{"H17", "L5"},
		Fix:       "Remove port 53 from the allow; `dns = true` (the default) already allows the cluster DNS.",
		check: func(c *checker) {
			c.eachTenant(func(t *model.Tenant) {
				for i := range t.Egress.Allows {
					a := &t.Egress.Allows[i]
					if hasPort(a.Ports, 53) {
						c.report(tenantAddr(t), a.Attrs.At("ports", a.Src), "Tenant %q allows DNS (port 53) to %s, a resolver outside the cluster.", t.Name, a.CIDR)
					}
				}
			})
		},
	})
}
