package policy

import (
	"net/netip"
	"strings"

	"github.com/paddock-platform/paddock/internal/model"
)

// metadataAddresses are the cloud instance metadata endpoints.
var metadataAddresses = []netip.Addr{
	model.MetadataServerAddr,               // GCE, EC2, Azure (and GKE's, with Dataplane V2)
	netip.MustParseAddr("169.254.169.252"), // GKE metadata server (Workload Identity)
	netip.MustParseAddr("169.254.170.2"),   // ECS task metadata
	netip.MustParseAddr("fd00:ec2::254"),   // EC2 over IPv6
}

// metadataAddr is the address every cloud's metadata service answers on.
var metadataAddr = metadataAddresses[0]

// metadataHosts are the names that resolve to a metadata service.
var metadataHosts = []string{"metadata.google.internal", "metadata.goog", "instance-data.ec2.internal"}

// linkLocal is where metadata services live; a range inside it targets them.
var (
	linkLocal   = netip.MustParsePrefix("169.254.0.0/16")
	linkLocalV6 = netip.MustParsePrefix("fe80::/10")
)

// metadataPorts are the ports metadata services answer on (HTTP, and 988 for
// the GKE metadata server's Workload Identity endpoint).
var metadataPorts = []int32{80, 988, 8080}

// metadataName reports whether an FQDN allow-list entry (a name or a
// "*.suffix" pattern) matches a metadata service's host name.
func metadataName(name string) bool {
	name = strings.TrimSuffix(name, ".")
	for _, h := range metadataHosts {
		if name == h || name == "*" {
			return true
		}
		if rest, ok := strings.CutPrefix(name, "*."); ok && strings.HasSuffix(h, "."+rest) {
			return true
		}
	}
	return false
}

// internetWide reports whether cidr spans a large part of the internet: an
// IPv4 prefix shorter than /8 or an IPv6 prefix shorter than /16.
func internetWide(cidr string) bool {
	pfx, err := model.ParseCIDR(cidr)
	if err != nil {
		return false
	}
	return peer{kind: peerCIDR, prefix: pfx.Masked()}.internetWide()
}
