package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-504", Title: "Egress to the whole internet", Severity: Error, Kind: Static,
		Control:   "Egress goes to named destinations (an FQDN allow-list) or through an egress proxy, never \"443 to the world\"",
		Checklist: []string{"H18", "L5"},
		Fix:       "Replace the allow (or the proxy's cidr, or the wildcard) with fqdns = [\"api.your-llm-provider.com\"], or send traffic through a proxy block that names the proxy's own address.",
		check: func(c *checker) {
			c.eachEgressFinding(func(_ *model.Tenant, r *egressRule) string {
				return peersWhere(r, peer.internetWide)
			}, func(t *model.Tenant, f egressFinding) {
				c.report(tenantAddr(t), f.origin.Src,
					"Tenant %q allows egress to %s: anything listening there, including attacker-controlled hosts, is reachable %s.", t.Name, f.what, f.through())
			})
		},
	})
}
