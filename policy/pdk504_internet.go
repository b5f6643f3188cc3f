package policy

import "github.com/paddock-platform/paddock/model"

func init() {
	register(Rule{
		ID: "PDK-504", Title: "Egress to the whole internet", Severity: Error, Kind: Static,
		Control:   "Egress goes to named destinations (an FQDN allow-list) or through an egress proxy, never \"443 to the world\"",
		Checklist: []string{"H18", "L5"},
		Fix:       "Replace the allow with fqdns = [\"api.your-llm-provider.com\"], or send traffic through a proxy block.",
		check: func(c *checker) {
			c.eachTenant(func(t *model.Tenant) {
				for i := range t.Egress.Allows {
					a := &t.Egress.Allows[i]
					if internetWide(a.CIDR) {
						c.report(tenantAddr(t), a.Attrs.At("cidr", a.Src),
							"Tenant %q allows egress to %s: anything listening there, including attacker-controlled hosts, is reachable.", t.Name, a.CIDR)
					}
				}
			})
		},
	})
}
