package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-502", Title: "Egress on port 80", Severity: Error, Kind: Static,
		Control:   "No plain-HTTP egress: the cloud metadata service speaks HTTP on port 80, so without port 80 it stays unreachable by construction",
		Checklist: []string{"H17"},
		Fix:       "Remove port 80 from the allow (or the proxy URL); reach HTTP-only destinations through an egress proxy on another port.",
		check: func(c *checker) {
			c.eachEgressFinding(func(t *model.Tenant, r *egressRule) string {
				if !r.allowsPort(80) || isMetadataServerRule(c.p, t, r) {
					return ""
				}
				return peersWhere(r, func(peer) bool { return true })
			}, func(t *model.Tenant, f egressFinding) {
				c.report(tenantAddr(t), f.origin.PortsSrc(), "Tenant %q allows egress to %s on port 80 %s.", t.Name, f.what, f.through())
			})
		},
	})
}
