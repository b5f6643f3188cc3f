package policy

import "github.com/paddock-platform/paddock/internal/model"

func init() {
	register(Rule{
		ID: "PDK-505", Title: "DNS to an uncontrolled resolver", Severity: Warning, Kind: Static,
		Control:   "Name resolution goes to the cluster's resolver only: DNS is a classic exfiltration channel",
		Checklist: []string{"H17", "L5"},
		Fix:       "Remove port 53 from the allow; `dns = true` (the default) already allows the cluster DNS.",
		check: func(c *checker) {
			c.eachEgressFinding(func(_ *model.Tenant, r *egressRule) string {
				if !r.allowsPort(53) {
					return ""
				}
				return peersWhere(r, func(pr peer) bool { return pr.kind != peerClusterDNS && pr.kind != peerName })
			}, func(t *model.Tenant, f egressFinding) {
				c.report(tenantAddr(t), f.origin.PortsSrc(), "Tenant %q allows DNS (port 53) to %s, a resolver outside the cluster %s.", t.Name, f.what, f.through())
			})
		},
	})
}
