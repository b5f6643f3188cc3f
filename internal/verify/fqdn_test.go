package verify

import (
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/model"
)

const (
	listedHost   = "api.llm.paddock.test"
	unlistedHost = "collector.exfil.paddock.test"
)

var worldAddrs = map[string]string{listedHost: "10.215.1.2", unlistedHost: "10.215.3.2"}

// fqdnPlatform is examples/local whose tenant lists the listed host.
func fqdnPlatform(t *testing.T) *model.Platform {
	p := localPlatform(t)
	p.Tenants[0].Egress.FQDNs = []string{listedHost}
	return p
}

// listedOnly is an enforcing dataplane: the control reaches every host, the
// tenant only the listed one, and the resolver answers the tenant only the
// names on its list.
func listedOnly(ns, name string) bool { return isControlNS(ns) || name == listedHost }

func TestFQDNAllowListEnforced(t *testing.T) {
	rs, _ := runV10(t, netCase{p: fqdnPlatform(t), probeHosts: []string{listedHost, unlistedHost},
		net: &fakeNet{world: worldAddrs, namedOpen: listedOnly, nameAnswered: listedOnly}})
	m := bySubject(t, rs)
	want(t, m, "agents-team-a named egress "+listedHost, Pass, "reached "+listedHost+":443 by name")
	want(t, m, "agents-team-a named egress "+unlistedHost, Pass, "refused", "10.215.3.2:443", "the control client reached it")
	want(t, m, "agents-team-a DNS "+unlistedHost, Pass, "got no address", "REFUSED", "the control client's lookup got 10.215.3.2")
	// The rest of V10 is judged as before.
	want(t, m, "agents-team-a egress", Pass)
	want(t, m, "agents-team-a DNS", Pass)
}

// Each proof fails when what it proves does not hold, and is not verifiable
// when its control does not hold.
func TestFQDNAllowListBroken(t *testing.T) {
	subjListed, subjConn, subjDNS := "agents-team-a named egress "+listedHost, "agents-team-a named egress "+unlistedHost, "agents-team-a DNS "+unlistedHost
	all := func(string, string) bool { return true }
	for _, c := range []struct {
		name   string
		net    *fakeNet
		hosts  []string
		checks func(t *testing.T, m map[string]Result)
	}{
		{"policy not enforced (the tenant reaches every host)", &fakeNet{namedOpen: all, nameAnswered: listedOnly}, nil, func(t *testing.T, m map[string]Result) {
			want(t, m, subjListed, Pass)
			want(t, m, subjConn, Fail, "reached "+unlistedHost, "not on the allow-list", "let a host off it through")
			want(t, m, subjDNS, Pass)
		}},
		{"the resolver answers every name", &fakeNet{namedOpen: listedOnly, nameAnswered: all}, nil, func(t *testing.T, m map[string]Result) {
			want(t, m, subjConn, Pass)
			want(t, m, subjDNS, Fail, "got an address for "+unlistedHost, "a channel out")
		}},
		{"the listed name is refused too", &fakeNet{nameAnswered: listedOnly}, nil, func(t *testing.T, m map[string]Result) {
			want(t, m, subjListed, Fail, "did not reach "+listedHost+":443", "does not let the listed name through")
			want(t, m, subjConn, Pass)
		}},
		{"no world host answers anyone", &fakeNet{worldDown: true, namedOpen: listedOnly, nameAnswered: listedOnly}, nil, func(t *testing.T, m map[string]Result) {
			want(t, m, subjListed, NotVerifiable, "the control client", "did not reach "+listedHost)
			want(t, m, subjConn, NotVerifiable, "proves nothing", "the control client did not reach 10.215.3.2:443")
		}},
		{"no host verify may probe", &fakeNet{}, []string{}, func(t *testing.T, m map[string]Result) {
			want(t, m, "agents-team-a named egress", NotVerifiable, "--fqdn-probe-host")
		}},
		{"only listed hosts to probe", &fakeNet{namedOpen: listedOnly, nameAnswered: listedOnly}, []string{listedHost}, func(t *testing.T, m map[string]Result) {
			want(t, m, subjListed, Pass)
			want(t, m, "agents-team-a named egress unlisted", NotVerifiable, "every probe host")
		}},
		{"probes that do not run are no refusals", &fakeNet{namedOpen: listedOnly, nameAnswered: listedOnly, noNC: func(ns, pod string) bool { return !isControlNS(ns) && strings.Contains(pod, "client") }}, nil, func(t *testing.T, m map[string]Result) {
			want(t, m, subjListed, Fail, "the probe did not run")
			want(t, m, subjConn, Fail, "the probe did not run")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			hosts := c.hosts
			if hosts == nil {
				hosts = []string{listedHost, unlistedHost}
			}
			c.net.world = worldAddrs
			rs, _ := runV10(t, netCase{p: fqdnPlatform(t), probeHosts: hosts, net: c.net})
			c.checks(t, bySubject(t, rs))
		})
	}
}

// A tenant without an allow-list gets no named-egress results.
func TestFQDNProbeOnlyForAllowLists(t *testing.T) {
	rs, _ := runV10(t, netCase{probeHosts: []string{listedHost, unlistedHost}, net: &fakeNet{world: worldAddrs}})
	for _, r := range rs {
		if strings.Contains(r.Subject, "named egress") || strings.Contains(r.Subject, unlistedHost) {
			t.Errorf("unexpected result %s: %s", r.Subject, r.Reason)
		}
	}
}

func TestPickFQDNHosts(t *testing.T) {
	hosts := []string{"api.llm.paddock.test", "pypi.mirror.paddock.test", "collector.exfil.paddock.test"}
	for _, c := range []struct {
		allow            []string
		listed, unlisted string
	}{
		{[]string{"api.llm.paddock.test"}, "api.llm.paddock.test", "pypi.mirror.paddock.test"},
		{[]string{"*.mirror.paddock.test"}, "pypi.mirror.paddock.test", "api.llm.paddock.test"},
		// "*.paddock.test" matches none in one label, yet might match all: no
		// host is listed, none unlisted.
		{[]string{"*.paddock.test"}, "", ""},
		{[]string{"api.llm.paddock.test", "*.mirror.paddock.test", "collector.exfil.paddock.test"}, "api.llm.paddock.test", ""},
		{[]string{"other.example.com"}, "", "api.llm.paddock.test"},
	} {
		listed, unlisted := pickFQDNHosts(c.allow, hosts)
		if listed != c.listed || unlisted != c.unlisted {
			t.Errorf("pickFQDNHosts(%v) = %q, %q; want %q, %q", c.allow, listed, unlisted, c.listed, c.unlisted)
		}
	}
}

// busybox nslookup's own words, as the probe image prints them.
func TestParseNameLookup(t *testing.T) {
	for _, c := range []struct {
		out     string
		outcome attemptOutcome
		addr    string
	}{
		{"Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\nName:\tapi.llm.paddock.test\nAddress: 10.215.1.2\n\n" + probeExitMarker + "0\n", attemptReached, "10.215.1.2"},
		// The search path's candidates come back NXDOMAIN first.
		{"Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\n** server can't find api.llm.paddock.test.agents-team-a.svc.cluster.local: NXDOMAIN\n\nName:\tapi.llm.paddock.test\nAddress: 10.215.1.2\n" + probeExitMarker + "0\n", attemptReached, "10.215.1.2"},
		{"Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\n** server can't find collector.exfil.paddock.test: REFUSED\n\n" + probeExitMarker + "1\n", attemptRefused, ""},
		{";; connection timed out; no servers could be reached\n\n" + probeExitMarker + "1\n", attemptRefused, ""},
		// An address for another name (a CNAME target's line) is not the name's.
		{"Server:\t\t10.96.0.10\nAddress:\t10.96.0.10:53\n\nName:\tother.test\nAddress: 10.215.9.2\n" + probeExitMarker + "0\n", attemptBroken, ""},
		{"sh: nslookup: not found\n" + probeExitMarker + "127\n", attemptBroken, ""},
	} {
		got := parseNameLookup("api.llm.paddock.test", c.out, "", nil)
		if got.outcome != c.outcome || got.addr != c.addr {
			t.Errorf("parseNameLookup(%q) = %v %q (%s), want %v %q", c.out, got.outcome, got.addr, got.detail, c.outcome, c.addr)
		}
	}
}
