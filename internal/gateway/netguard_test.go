package gateway

import (
	"net/netip"
	"testing"
)

// The address policy alone: no address here is ever connected to.
func TestAddressPolicy(t *testing.T) {
	c := &Config{
		Cluster:    ClusterRanges{PodCIDRs: []string{"10.244.0.0/16"}, ServiceCIDRs: []string{"10.96.0.0/12"}, NodeAddresses: []string{"198.51.100.7"}},
		AllowCIDRs: []string{"127.0.0.0/8", "169.254.0.0/16", "10.0.0.0/8"},
	}
	p, err := newAddressPolicy(c)
	if err != nil {
		t.Fatal(err)
	}
	bare, _ := newAddressPolicy(&Config{})
	for _, tc := range []struct {
		addr           string
		withAllow, def bool // allowed with the allow-list above, and by default
	}{
		{"8.8.8.8", true, true},
		{"2001:4860:4860::8888", true, true},
		{"192.0.2.10", true, true}, // TEST-NET: public-looking
		{"127.0.0.1", true, false},
		{"::ffff:127.0.0.1", true, false},
		{"::1", false, false},
		{"10.0.0.1", true, false},
		{"172.16.0.1", false, false},
		{"192.168.1.1", false, false},
		{"100.64.0.1", false, false},
		{"fd00::1", false, false},
		{"169.254.169.254", false, false}, // link-local: never, allow-list or not
		{"fe80::1", false, false},
		{"fe80::1%eth0", false, false},
		{"0.0.0.0", false, false},
		{"0.1.2.3", false, false},
		{"::", false, false},
		{"224.0.0.1", false, false},
		{"ff02::1", false, false},
		{"255.255.255.255", false, false},
		{"240.0.0.1", false, false},
		{"10.244.3.4", false, false},         // the pod range: never, though 10/8 is allowed
		{"10.96.0.10", false, false},         // the service range
		{"198.51.100.7", false, true},        // a node address (bare: public-looking)
		{"64:ff9b::ac10:1", false, false},    // NAT64 of 172.16.0.1
		{"64:ff9b::a9fe:a9fe", false, false}, // NAT64 of the metadata server
		{"64:ff9b::808:808", true, true},     // NAT64 of 8.8.8.8
	} {
		a := netip.MustParseAddr(tc.addr)
		if got := p.check(a) == nil; got != tc.withAllow {
			t.Errorf("%s with the allow-list: allowed=%v, want %v (%v)", tc.addr, got, tc.withAllow, p.check(a))
		}
		if got := bare.check(a) == nil; got != tc.def {
			t.Errorf("%s by default: allowed=%v, want %v (%v)", tc.addr, got, tc.def, bare.check(a))
		}
	}
	if err := p.control("tcp", "not-an-address"); err == nil {
		t.Errorf("control accepted an address it cannot read")
	}
}
