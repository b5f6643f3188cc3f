package policy

import (
	"net"

	"github.com/paddock-platform/paddock/model"
)

// linkLocal is where metadata services live; an allow inside it targets them.
var _, linkLocal, _ = net.ParseCIDR("169.254.0.0/16")

// metadataPorts are the ports metadata services answer on (HTTP, and 988 for
// the GKE metadata server's Workload Identity endpoint).
var metadataPorts = []int32{80, 988, 8080}

func init() {
	register(Rule{
		ID: "PDK-503", Title: "Egress to the cloud metadata address", Severity: Error, Kind: Static,
		Control:   "Sandboxes never reach the instance metadata service (169.254.169.254 and friends), the highest-value target in any pod",
		Checklist: []string{"H17", "L5"},
		Fix:       "Narrow the allow's cidr so it excludes 169.254.0.0/16 and drop port 80; what the agent needs from the cloud goes through an identity and a tool gateway. (A workload_identity \"agent\" on GKE opens exactly TCP 80 to 169.254.169.254/32 by itself.)",
		check: func(c *checker) {
			c.eachTenant(func(t *model.Tenant) {
				for i := range t.Egress.Allows {
					a := &t.Egress.Allows[i]
					if !covers(a.CIDR, metadataAddresses) {
						continue
					}
					// The one exception: exactly the hole Paddock opens itself
					// for a workload identity of the agent (PDK-207 reports that
					// identity), spelled out. Anything wider still fires.
					if isMetadataServerHole(c.p, t, a) {
						continue
					}
					// A range that merely spans the metadata address on 443 does
					// not reach the service; one aimed at link-local addresses,
					// or open on a metadata port, does.
					_, n, _ := net.ParseCIDR(a.CIDR)
					ones, _ := n.Mask.Size()
					aimed := linkLocal.Contains(n.IP) && ones >= 16
					open := false
					for _, p := range metadataPorts {
						open = open || hasPort(a.Ports, p)
					}
					if aimed || open {
						c.report(tenantAddr(t), a.Attrs.At("cidr", a.Src),
							"Tenant %q allows egress to %s on ports %v, which reaches the cloud metadata service.", t.Name, a.CIDR, a.Ports)
					}
				}
			})
		},
	})
}
