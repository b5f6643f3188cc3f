package rules

import (
	"fmt"
	"net/netip"

	"github.com/paddock-platform/paddock/internal/gcpinputs"
)

func init() {
	register(Rule{
		ID: "GCP-003", Title: "Control plane access",
		Hint: "List the CIDRs of the networks that administer the cluster; never 0.0.0.0/0. The private endpoint range must be an RFC 1918 /28.",
		check: func(p gcpinputs.PlatformArgs) []Violation {
			var out []Violation
			for i, n := range p.Cluster.AuthorizedNetworks {
				attr := fmt.Sprintf("authorized_networks[%d]", i)
				pfx, err := netip.ParsePrefix(n.CIDR)
				switch {
				case err != nil:
					out = append(out, v("cluster", attr, "%q is not a CIDR", n.CIDR))
				case pfx.Bits() == 0:
					out = append(out, v("cluster", attr, "%s opens the control plane to the whole internet", n.CIDR))
				case pfx.Masked() != pfx:
					out = append(out, v("cluster", attr, "%s has host bits set (did you mean %s?)", n.CIDR, pfx.Masked()))
				}
			}
			if !p.Cluster.PublicNodes {
				pfx, err := netip.ParsePrefix(p.Cluster.MasterCIDR)
				if err != nil || !pfx.Addr().Is4() || pfx.Bits() != 28 || !pfx.Addr().IsPrivate() || pfx.Masked() != pfx {
					out = append(out, v("cluster", "master_cidr", "%q is not a private IPv4 /28 (GKE's private control plane range)", p.Cluster.MasterCIDR))
				}
			}
			if p.Cluster.PrivateEndpoint && p.Cluster.PublicNodes {
				out = append(out, v("cluster", "private_endpoint", "a private-only control plane needs private nodes"))
			}
			return out
		},
	})
}
