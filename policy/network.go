package policy

import (
	"net"

	"github.com/paddock-platform/paddock/model"
)

// metadataAddresses are the cloud instance metadata endpoints.
var metadataAddresses = []net.IP{
	net.ParseIP("169.254.169.254"), // GCE, EC2, Azure
	net.ParseIP("169.254.169.252"), // GKE metadata server (Workload Identity)
	net.ParseIP("169.254.170.2"),   // ECS task metadata
	net.ParseIP("fd00:ec2::254"),   // EC2 over IPv6
}

// covers reports whether cidr contains any of ips.
func covers(cidr string, ips []net.IP) bool {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return false
	}
	for _, ip := range ips {
		if n.Contains(ip) {
			return true
		}
	}
	return false
}

// internetWide reports whether cidr spans a large part of the internet: an
// IPv4 prefix shorter than /8 or an IPv6 prefix shorter than /16.
func internetWide(cidr string) bool {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return false
	}
	ones, bits := n.Mask.Size()
	if bits == 32 {
		return ones < 8
	}
	return ones < 16
}

func hasPort(ports []int32, p int32) bool {
	for _, x := range ports {
		if x == p {
			return true
		}
	}
	return false
}

// isMetadataServerHole reports whether a is exactly the one hole Paddock
// itself opens for a workload identity of the agent (TCP 80 to the GKE
// metadata server, 169.254.169.254/32), on a platform where it opens it
// (model.Platform.AgentNeedsMetadataServer). Anything wider is not.
func isMetadataServerHole(p *model.Platform, t *model.Tenant, a *model.EgressAllow) bool {
	proto := a.Protocol
	if proto == "" {
		proto = "TCP"
	}
	return p.AgentNeedsMetadataServer(*t) && a.CIDR == model.GKEMetadataServerCIDR && proto == model.GKEMetadataServerProto &&
		len(a.Ports) == 1 && a.Ports[0] == model.GKEMetadataServerPort
}
