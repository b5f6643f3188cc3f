package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// errAddressRefused is matched (errors.Is) by every refusal of an address.
var errAddressRefused = errors.New("destination address refused")

// refusedAddressError says which address was refused and why. It names the
// address and the rule, nothing the sandbox sent beyond the host.
type refusedAddressError struct {
	addr netip.Addr
	why  string
}

func (e *refusedAddressError) Error() string {
	return fmt.Sprintf("address %s refused: %s", e.addr, e.why)
}

func (e *refusedAddressError) Is(target error) bool { return target == errAddressRefused }

type namedPrefix struct {
	prefix netip.Prefix
	name   string
}

// Ranges never dialed, whatever the allow-list says.
var neverPrefixes = []namedPrefix{
	{netip.MustParsePrefix("0.0.0.0/8"), "\"this network\" (0.0.0.0/8)"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (the metadata server's range)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
}

// Ranges refused by default that the allow-list may reopen.
var reopenablePrefixes = []namedPrefix{
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT (100.64.0.0/10)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments (192.0.0.0/24)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking (198.18.0.0/15)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (240.0.0.0/4)"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
}

// nat64 is the well-known NAT64 prefix: its addresses carry an IPv4 one,
// judged as well.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// addressPolicy judges the addresses the gateway may connect to.
type addressPolicy struct {
	cluster []namedPrefix
	allow   []netip.Prefix
}

func newAddressPolicy(c *Config) (*addressPolicy, error) {
	p := &addressPolicy{}
	for _, list := range []struct {
		v    []string
		name string
		bare bool
	}{
		{c.Cluster.PodCIDRs, "the cluster's pod range", false},
		{c.Cluster.ServiceCIDRs, "the cluster's service range", false},
		{c.Cluster.NodeAddresses, "a node's address", true},
	} {
		for _, s := range list.v {
			pr, err := parsePrefix(s, list.bare)
			if err != nil {
				return nil, err
			}
			p.cluster = append(p.cluster, namedPrefix{pr, list.name})
		}
	}
	for _, s := range c.AllowCIDRs {
		pr, err := parsePrefix(s, false)
		if err != nil {
			return nil, err
		}
		p.allow = append(p.allow, pr)
	}
	return p, nil
}

// check returns nil for an address the gateway may connect to, or a
// *refusedAddressError.
func (p *addressPolicy) check(a netip.Addr) error {
	a = a.Unmap().WithZone("")
	if !a.IsValid() {
		return &refusedAddressError{a, "not an address"}
	}
	if a.Is6() && nat64.Contains(a) {
		b := a.As16()
		if err := p.check(netip.AddrFrom4([4]byte(b[12:]))); err != nil {
			return &refusedAddressError{a, "NAT64 of a refused address: " + err.(*refusedAddressError).why}
		}
	}
	switch {
	case a.IsUnspecified():
		return &refusedAddressError{a, "unspecified"}
	case a.IsMulticast():
		return &refusedAddressError{a, "multicast"}
	}
	for _, n := range neverPrefixes {
		if n.prefix.Contains(a) {
			return &refusedAddressError{a, n.name}
		}
	}
	for _, n := range p.cluster {
		if n.prefix.Contains(a) {
			return &refusedAddressError{a, n.name}
		}
	}
	why := ""
	switch {
	case a.IsLoopback():
		why = "loopback"
	case a.IsPrivate():
		why = "private"
	default:
		for _, n := range reopenablePrefixes {
			if n.prefix.Contains(a) {
				why = n.name
				break
			}
		}
	}
	if why == "" {
		return nil
	}
	for _, pr := range p.allow {
		if pr.Contains(a) {
			return nil
		}
	}
	return &refusedAddressError{a, why}
}

// control is the net.Dialer Control hook: it judges the address the socket
// is about to connect to, after every resolution is done.
func (p *addressPolicy) control(network, address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %q is not an address and port", errAddressRefused, address)
	}
	return p.check(ap.Addr())
}

// guardedDialer connects to destinations. It resolves the name itself and
// refuses a name whose every address is forbidden without opening a socket;
// then it connects by name, and net.Dialer's Control hook judges each
// address actually connected to, so an answer that changes between the
// check and the connection (DNS rebinding) is judged too.
type guardedDialer struct {
	resolver *net.Resolver
	policy   *addressPolicy
	dialer   net.Dialer

	// Test hooks: onDial is told of each dial that passed the check;
	// afterControl runs after the policy's Control check allowed an address.
	onDial       func(host string)
	afterControl func(network, address string) error
}

func newGuardedDialer(resolver *net.Resolver, policy *addressPolicy, timeout time.Duration) *guardedDialer {
	g := &guardedDialer{resolver: resolver, policy: policy}
	g.dialer = net.Dialer{
		Timeout:  timeout,
		Resolver: resolver,
		Control: func(network, address string, _ syscall.RawConn) error {
			if err := policy.control(network, address); err != nil {
				return err
			}
			if g.afterControl != nil {
				return g.afterControl(network, address)
			}
			return nil
		},
	}
	return g
}

// DialContext connects to addr ("host:port", host a DNS name).
func (g *guardedDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return nil, &refusedAddressError{ip, "an IP literal: the gateway resolves names itself"}
	}
	ips, err := g.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", host, err)
	}
	var refused error
	allowed := 0
	for _, ip := range ips {
		if err := g.policy.check(ip); err != nil {
			refused = cmpOr(refused, err)
			continue
		}
		allowed++
	}
	if allowed == 0 {
		if refused == nil {
			return nil, fmt.Errorf("resolving %s: no addresses", host)
		}
		return nil, fmt.Errorf("%s: %w", host, refused)
	}
	if g.onDial != nil {
		g.onDial(host)
	}
	return g.dialer.DialContext(ctx, network, addr)
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
