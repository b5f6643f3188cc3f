package policy

import (
	"github.com/paddock-platform/paddock/internal/model"
)

func init() {
	register(Rule{
		ID: "PDK-503", Title: "Egress to the cloud metadata address", Severity: Error, Kind: Static,
		Control:   "Sandboxes never reach the instance metadata service (169.254.169.254 and friends), the highest-value target in any pod",
		Checklist: []string{"H17", "L5"},
		Fix:       "Narrow the allow's (or the proxy's) cidr so it excludes 169.254.0.0/16 and drop port 80; what the agent needs from the cloud goes through an identity and a tool gateway. (A workload_identity \"agent\" on GKE opens exactly TCP 80 to 169.254.169.254/32 by itself.)",
		check: func(c *checker) {
			c.eachEgressFinding(func(t *model.Tenant, r *egressRule) string {
				// The one exception: exactly the hole Paddock opens itself for
				// a workload identity of the agent (PDK-207 reports that
				// identity). Anything wider still fires.
				if isMetadataServerRule(c.p, t, r) {
					return ""
				}
				open := false
				for _, p := range metadataPorts {
					open = open || r.allowsPort(p)
				}
				return peersWhere(r, func(pr peer) bool {
					reached := false
					for _, a := range metadataAddresses {
						reached = reached || pr.reaches(a)
					}
					if !reached {
						return false
					}
					// The metadata address itself, on any port, is reached;
					// a range that merely spans another metadata address on
					// 443 does not reach the service; one aimed at link-local
					// addresses, or open on a metadata port, does.
					aimed := pr.kind == peerName ||
						pr.kind == peerCIDR && (linkLocal.Contains(pr.prefix.Addr()) && pr.prefix.Bits() >= linkLocal.Bits() ||
							linkLocalV6.Contains(pr.prefix.Addr()) && pr.prefix.Bits() >= linkLocalV6.Bits() ||
							pr.prefix.IsSingleIP())
					return pr.reaches(metadataAddr) || aimed || open
				})
			}, func(t *model.Tenant, f egressFinding) {
				c.report(tenantAddr(t), f.origin.Src,
					"Tenant %q allows egress to %s, which reaches the cloud metadata service %s.", t.Name, f.what, f.through())
			})
		},
	})
}
