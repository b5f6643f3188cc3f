package model

import (
	"fmt"
	"net/netip"
)

// ParseCIDR is the one parser of address ranges in a spec: the decoder, the
// objects and policy all read a CIDR through it, so a range means the same
// thing (or is refused with the same reason) at every stage. It is
// netip.ParsePrefix, which refuses what the Kubernetes API server refuses
// (leading zeros in the prefix length, zones), plus one refusal of its own: an
// IPv4-mapped IPv6 range ("::ffff:169.254.169.254/128") names IPv4 addresses
// in a form CNIs and policy checks disagree on; write the IPv4 range instead.
func ParseCIDR(s string) (netip.Prefix, error) {
	pfx, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if pfx.Addr().Is4In6() {
		return netip.Prefix{}, fmt.Errorf("%q is an IPv4-mapped IPv6 range: write the IPv4 range it means", s)
	}
	return pfx, nil
}
