package drift

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"

	"github.com/paddock-platform/paddock/internal/hangguard"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
)

func mustSet(t *testing.T, cidr string, except ...string) ipSet {
	t.Helper()
	s, err := parseCIDRSet(cidr, except)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestIPSetArithmetic(t *testing.T) {
	all4 := mustSet(t, "0.0.0.0/0")
	halves := mustSet(t, "0.0.0.0/1").union(mustSet(t, "128.0.0.0/1"))
	if halves.String() != all4.String() || len(halves) != 1 {
		t.Errorf("0.0.0.0/1 + 128.0.0.0/1 = %v, want 0.0.0.0/0", halves)
	}
	// Uneven splits, out of order and overlapping, still add up.
	pieces := mustSet(t, "192.0.0.0/2").union(mustSet(t, "0.0.0.0/1")).union(mustSet(t, "128.0.0.0/2")).union(mustSet(t, "10.0.0.0/8"))
	if pieces.String() != "0.0.0.0/0" {
		t.Errorf("pieces = %v", pieces)
	}
	if got := mustSet(t, "::/1").union(mustSet(t, "8000::/1")).String(); got != "::/0" {
		t.Errorf("::/1 + 8000::/1 = %s", got)
	}
	// Families never merge, even where their ends meet.
	if both := all4.union(mustSet(t, "::/0")); len(both) != 2 {
		t.Errorf("IPv4 and IPv6 merged: %v", both)
	}

	noMeta := mustSet(t, "169.254.0.0/16", "169.254.169.254/32")
	if noMeta.contains(model.MetadataServerAddr) {
		t.Error("an except of the metadata address left it in")
	}
	if !mustSet(t, "169.254.0.0/16", "169.254.169.0/30").contains(model.MetadataServerAddr) {
		t.Error("an except beside the metadata address removed it")
	}
	if got := all4.minus(mustSet(t, "0.0.0.0/1")).String(); got != "128.0.0.0/1" {
		t.Errorf("0/0 - 0/1 = %s", got)
	}
	// 169.254/16 minus its metadata address, taken from all of it, leaves
	// exactly the metadata address.
	if got := mustSet(t, "169.254.0.0/16").minus(noMeta).String(); got != "169.254.169.254/32" {
		t.Errorf("169.254/16 - (169.254/16 except metadata) = %s", got)
	}
	if got := mustSet(t, "10.0.0.0/8").minus(mustSet(t, "10.0.0.0/8")); len(got) != 0 {
		t.Errorf("a set minus itself = %v", got)
	}
	// An except outside the block, and a malformed one, change nothing;
	// one of the other family is ignored.
	if got := mustSet(t, "10.0.0.0/8", "11.0.0.0/8", "garbage", "::/0").String(); got != "10.0.0.0/8" {
		t.Errorf("foreign excepts: %s", got)
	}
	if _, err := parseCIDRSet("10.0.0.0/33", nil); err == nil {
		t.Error("a malformed cidr read without error")
	}
	// A range that is no single block is named in the blocks that make it.
	r := addrRange{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.6")}
	ps, more := r.cidrs(10)
	if fmt.Sprint(ps) != "[10.0.0.1/32 10.0.0.2/31 10.0.0.4/31 10.0.0.6/32]" || more {
		t.Errorf("cidrs = %v %v", ps, more)
	}
	if _, more := r.cidrs(2); !more {
		t.Error("a cut list did not say so")
	}
	// Host bits set in a live CIDR are masked, as the enforcer reads them.
	if got := mustSet(t, "10.1.2.3/8").String(); got != "10.0.0.0/8" {
		t.Errorf("unmasked cidr: %s", got)
	}
}

func sel(t *testing.T, s string) labelSet {
	t.Helper()
	if s == "" {
		return everything
	}
	ls, err := metav1.ParseToLabelSelector(s)
	if err != nil {
		t.Fatal(err)
	}
	return selectorOf(ls, declaredSide)
}

func TestSelectorContains(t *testing.T) {
	for _, c := range []struct {
		declared, live string
		want           bool
	}{
		{"", "app=x", true},
		{"", "", true},
		{"app=x", "app=x", true},
		{"app=x", "app=x,tier=db", true},
		{"app=x", "", false},
		{"app=x", "app=y", false},
		{"app=x,tier=db", "app=x", false},
		{"app in (x,y)", "app=x", true},
		{"app in (x)", "app in (x,y)", false},
		{"app notin (x)", "app=y", true},
		{"app notin (x)", "app notin (x,y)", true},
		{"app notin (x,y)", "app notin (x)", false},
		{"app notin (x)", "!app", true},
		{"app", "app=y", true},
		{"app", "app", true},
		{"app", "!app", false},
		{"!app", "!app", true},
		{"!app", "app notin (x)", false},
	} {
		if got := sel(t, c.declared).contains(sel(t, c.live)); got != c.want {
			t.Errorf("{%s} contains {%s} = %v, want %v", c.declared, c.live, got, c.want)
		}
	}
	if (labelSet{none: true}).contains(everything) {
		t.Error("an unreadable declared selector covered something")
	}
	// A live selector Paddock cannot read is taken as every pod.
	bad := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Sometimes"}}}
	if !selectorOf(bad, liveSide).isEverything() || !selectorOf(bad, declaredSide).none {
		t.Error("unreadable selectors are not read towards reporting")
	}
}

// Helpers that write NetworkPolicies tersely.

func tcp(port int32) networkingv1.NetworkPolicyPort {
	p := corev1.ProtocolTCP
	v := intstr.FromInt32(port)
	return networkingv1.NetworkPolicyPort{Protocol: &p, Port: &v}
}

func tcpRange(lo, hi int32) networkingv1.NetworkPolicyPort {
	p := tcp(lo)
	p.EndPort = &hi
	return p
}

func proto(pr corev1.Protocol, port int32) networkingv1.NetworkPolicyPort {
	p := tcp(port)
	p.Protocol = &pr
	return p
}

func anyPort(pr corev1.Protocol) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Protocol: &pr}
}

func ptrProto(pr corev1.Protocol) *corev1.Protocol { return &pr }

func ptrIntstr(v intstr.IntOrString) *intstr.IntOrString { return &v }

func named(name string) networkingv1.NetworkPolicyPort {
	v := intstr.FromString(name)
	return networkingv1.NetworkPolicyPort{Port: &v}
}

func cidr(c string, except ...string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: c, Except: except}}
}

func egressTo(ports []networkingv1.NetworkPolicyPort, peers ...networkingv1.NetworkPolicyPeer) networkingv1.NetworkPolicyEgressRule {
	return networkingv1.NetworkPolicyEgressRule{To: peers, Ports: ports}
}

func egressPolicy(podSelector string, rules ...networkingv1.NetworkPolicyEgressRule) networkingv1.NetworkPolicySpec {
	ls, _ := metav1.ParseToLabelSelector(podSelector)
	return networkingv1.NetworkPolicySpec{PodSelector: *ls, PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}, Egress: rules}
}

const testNS = "agents-team-a"

// reference is a declared rule set made of policies, as declaredNetwork
// makes it from Paddock's own.
func reference(specs ...networkingv1.NetworkPolicySpec) []netRule {
	var out []netRule
	for _, s := range specs {
		out = append(out, networkPolicyEffect(s, testNS, declaredSide).rules...)
	}
	return out
}

// opened is every gap of the live policies, as report text.
func opened(declared []netRule, live ...networkingv1.NetworkPolicySpec) []string {
	var out []string
	for _, s := range live {
		e := networkPolicyEffect(s, testNS, liveSide)
		for i := range e.rules {
			for _, g := range uncovered(&e.rules[i], declared) {
				out = append(out, g.String())
			}
		}
	}
	return out
}

func TestNetworkCoverage(t *testing.T) {
	dnsOnly := reference(
		networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}},
		egressPolicy("", manifests.DNSEgressRule()),
	)
	https := reference(egressPolicy("", manifests.DNSEgressRule(), egressTo([]networkingv1.NetworkPolicyPort{tcp(443)}, cidr("0.0.0.0/0", model.GKEMetadataServerCIDR))))

	for _, c := range []struct {
		name     string
		declared []netRule
		live     []networkingv1.NetworkPolicySpec
		want     []string // each gap, in order; nil: covered
	}{
		{
			name:     "the declared DNS rule itself, and for fewer pods, is covered",
			declared: dnsOnly,
			live: []networkingv1.NetworkPolicySpec{
				egressPolicy("", manifests.DNSEgressRule()),
				egressPolicy("app=x", egressTo([]networkingv1.NetworkPolicyPort{proto(corev1.ProtocolUDP, 53)}, manifests.DNSEgressRule().To...)),
			},
		},
		{
			name:     "the internet split across two rules",
			declared: dnsOnly,
			live:     []networkingv1.NetworkPolicySpec{egressPolicy("", egressTo(nil, cidr("0.0.0.0/1")), egressTo(nil, cidr("128.0.0.0/1")))},
			want: []string{
				"egress from every pod to 0.0.0.0/1 on every protocol and port (egress[0])",
				"egress from every pod to 128.0.0.0/1 (including the metadata server 169.254.169.254) on every protocol and port (egress[1])",
			},
		},
		{
			name:     "the internet split across two policies",
			declared: dnsOnly,
			live: []networkingv1.NetworkPolicySpec{
				egressPolicy("", egressTo([]networkingv1.NetworkPolicyPort{tcp(443)}, cidr("0.0.0.0/1"))),
				egressPolicy("", egressTo([]networkingv1.NetworkPolicyPort{tcp(443)}, cidr("128.0.0.0/1", "169.254.169.254/32"))),
			},
			want: []string{
				"egress from every pod to 0.0.0.0/1 on TCP 443 (egress[0])",
				"egress from every pod to 128.0.0.0/3, 160.0.0.0/5, 168.0.0.0/8, 169.0.0.0/9, … on TCP 443 (egress[0])",
			},
		},
		{
			name:     "the declared internet on 443, written in halves, with the metadata address carved out",
			declared: https,
			live: []networkingv1.NetworkPolicySpec{egressPolicy("app=x",
				egressTo([]networkingv1.NetworkPolicyPort{tcp(443)}, cidr("0.0.0.0/1")),
				egressTo([]networkingv1.NetworkPolicyPort{tcp(443)}, cidr("128.0.0.0/1", "169.254.0.0/16")))},
		},
		{
			name:     "an except that misses the metadata address",
			declared: https,
			live:     []networkingv1.NetworkPolicySpec{egressPolicy("", egressTo([]networkingv1.NetworkPolicyPort{tcp(443)}, cidr("128.0.0.0/1", "169.254.169.0/30")))},
			want:     []string{"egress from every pod to 169.254.169.254/32 (including the metadata server 169.254.169.254) on TCP 443 (egress[0])"},
		},
		{
			name:     "the declared internet, on a port it does not declare",
			declared: https,
			live:     []networkingv1.NetworkPolicySpec{egressPolicy("", egressTo([]networkingv1.NetworkPolicyPort{tcpRange(440, 450)}, cidr("8.8.8.8/32")))},
			want:     []string{"egress from every pod to 8.8.8.8/32 on TCP 440-442, TCP 444-450 (egress[0])"},
		},
		{
			name:     "ingress from anywhere",
			declared: dnsOnly,
			live: []networkingv1.NetworkPolicySpec{{
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
				Ingress:     []networkingv1.NetworkPolicyIngressRule{{}},
			}},
			want: []string{"ingress to every pod from any peer (every address, pod and entity) on every protocol and port (ingress[0])"},
		},
		{
			name:     "ingress rules of a policy that isolates egress only are not enforced",
			declared: dnsOnly,
			live: []networkingv1.NetworkPolicySpec{{
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
				Ingress:     []networkingv1.NetworkPolicyIngressRule{{}},
			}},
		},
		{
			name:     "a narrower pod selector allowing all egress",
			declared: dnsOnly,
			live:     []networkingv1.NetworkPolicySpec{egressPolicy("app=x", networkingv1.NetworkPolicyEgressRule{})},
			want:     []string{"egress from pods app=x to any peer (every address, pod and entity) on every protocol and port (egress[0])"},
		},
		{
			name:     "DNS to every pod of kube-system, or over SCTP, is more than DNS to kube-dns",
			declared: dnsOnly,
			live: []networkingv1.NetworkPolicySpec{egressPolicy("",
				egressTo([]networkingv1.NetworkPolicyPort{proto(corev1.ProtocolUDP, 53)}, networkingv1.NetworkPolicyPeer{NamespaceSelector: manifests.DNSEgressRule().To[0].NamespaceSelector}),
				egressTo([]networkingv1.NetworkPolicyPort{proto(corev1.ProtocolSCTP, 53)}, manifests.DNSEgressRule().To...))},
			want: []string{
				"egress from every pod to every pod in namespace kube-system on UDP 53 (egress[0])",
				"egress from every pod to pods k8s-app=kube-dns in namespace kube-system on SCTP 53 (egress[1])",
			},
		},
		{
			name:     "pods of the tenant's own namespace",
			declared: dnsOnly,
			live: []networkingv1.NetworkPolicySpec{egressPolicy("",
				egressTo([]networkingv1.NetworkPolicyPort{tcp(5432)}, networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}))},
			want: []string{"egress from every pod to pods app=db in namespace agents-team-a on TCP 5432 (egress[0])"},
		},
		{
			name: "endPort ranges: inside, across and beyond the declared range",
			declared: reference(egressPolicy("", egressTo([]networkingv1.NetworkPolicyPort{tcpRange(8000, 9000)}, cidr("10.0.0.0/8")),
				egressTo([]networkingv1.NetworkPolicyPort{tcpRange(9001, 9100)}, cidr("10.0.0.0/9")))),
			live: []networkingv1.NetworkPolicySpec{egressPolicy("",
				egressTo([]networkingv1.NetworkPolicyPort{tcpRange(8500, 8600)}, cidr("10.1.0.0/16")),
				egressTo([]networkingv1.NetworkPolicyPort{tcpRange(8900, 9200)}, cidr("10.0.0.0/8")),
				egressTo([]networkingv1.NetworkPolicyPort{{}}, cidr("10.1.0.0/16")))},
			want: []string{
				"egress from every pod to 10.128.0.0/9 on TCP 9001-9100 (egress[1])",
				"egress from every pod to 10.0.0.0/8 on TCP 9101-9200 (egress[1])",
				"egress from every pod to 10.1.0.0/16 on TCP 1-7999, TCP 9101-65535 (egress[2])",
			},
		},
		{
			name: "named ports: the same name, or every port of the protocol, covers it",
			declared: reference(egressPolicy("", egressTo([]networkingv1.NetworkPolicyPort{named("http")}, cidr("10.0.0.0/8")),
				egressTo([]networkingv1.NetworkPolicyPort{anyPort(corev1.ProtocolUDP)}, cidr("10.0.0.0/8")))),
			live: []networkingv1.NetworkPolicySpec{egressPolicy("",
				egressTo([]networkingv1.NetworkPolicyPort{named("http")}, cidr("10.0.0.0/8")),
				egressTo([]networkingv1.NetworkPolicyPort{{Protocol: ptrProto(corev1.ProtocolUDP), Port: ptrIntstr(intstr.FromString("dns"))}}, cidr("10.0.0.0/8")),
				egressTo([]networkingv1.NetworkPolicyPort{named("https"), tcp(80)}, cidr("10.0.0.0/8")),
			)},
			want: []string{"egress from every pod to 10.0.0.0/8 on TCP 80, TCP port named https (egress[2])"},
		},
		{
			name:     "a malformed CIDR is reported, not taken as nothing",
			declared: dnsOnly,
			live:     []networkingv1.NetworkPolicySpec{egressPolicy("", egressTo(nil, cidr("10.0.0.0/99")), egressTo(nil, networkingv1.NetworkPolicyPeer{}))},
			want: []string{
				`egress from every pod to an unreadable ipBlock (cidr "10.0.0.0/99": netip.ParsePrefix("10.0.0.0/99"): prefix length out of range), which the enforcer may read as any address on every protocol and port (egress[0])`,
				"egress from every pod to any peer (every address, pod and entity) on every protocol and port (egress[1])",
			},
		},
		{
			name:     "empty and nil everything",
			declared: nil,
			live:     []networkingv1.NetworkPolicySpec{{}, {PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}}, egressPolicy("", networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{}}}})},
			want:     []string{`egress from every pod to an unreadable ipBlock (cidr "": netip.ParsePrefix(""): no '/'), which the enforcer may read as any address on every protocol and port (egress[0])`},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := opened(c.declared, c.live...)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("opened:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(c.want, "\n  "))
			}
		})
	}
}

func TestPortAtomsUnion(t *testing.T) {
	// Declared ports split over rules (and peers split over rules on the
	// same ports) add up: a live rule is covered by their union.
	declared := reference(egressPolicy("",
		egressTo([]networkingv1.NetworkPolicyPort{tcpRange(1, 1000)}, cidr("0.0.0.0/1")),
		egressTo([]networkingv1.NetworkPolicyPort{tcpRange(1, 1000)}, cidr("128.0.0.0/1")),
		egressTo([]networkingv1.NetworkPolicyPort{tcpRange(1001, 65535)}, cidr("0.0.0.0/0")),
	))
	if got := opened(declared, egressPolicy("", egressTo([]networkingv1.NetworkPolicyPort{anyPort(corev1.ProtocolTCP)}, cidr("0.0.0.0/0")))); len(got) != 0 {
		t.Errorf("every TCP port to every IPv4 address, declared in pieces, was reported: %v", got)
	}
	if got := opened(declared, egressPolicy("", egressTo(nil, cidr("0.0.0.0/0")))); len(got) != 1 || !strings.Contains(got[0], "every protocol and port") {
		t.Errorf("every protocol is more than every TCP port: %v", got)
	}
}

func labelsOf(s string) labels.Set {
	set, err := labels.ConvertSelectorToLabelsMap(s)
	if err != nil {
		panic(err)
	}
	return set
}

func TestCiliumEffect(t *testing.T) {
	declared := reference(egressPolicy("", manifests.DNSEgressRule()))
	fq := map[string]any{
		"spec": map[string]any{
			"endpointSelector": map[string]any{},
			"egress": []any{map[string]any{
				"toFQDNs": []any{map[string]any{"matchName": "api.example.com"}, map[string]any{"matchPattern": "*.example.org"}},
				"toPorts": []any{map[string]any{"ports": []any{map[string]any{"port": "443", "protocol": "TCP"}}}},
			}},
		},
	}
	e, _ := ciliumEffect(fq, ciliumScope{namespace: testNS}, declaredSide)
	declared = append(declared, e.rules...)

	judge := func(obj map[string]any, sc ciliumScope) []string {
		e, applies := ciliumEffect(obj, sc, liveSide)
		if !applies {
			return []string{"(does not apply)"}
		}
		var out []string
		for i := range e.rules {
			for _, g := range uncovered(&e.rules[i], declared) {
				out = append(out, g.String())
			}
		}
		return out
	}
	rule := func(r map[string]any) map[string]any {
		return map[string]any{"spec": map[string]any{"endpointSelector": map[string]any{"matchLabels": map[string]any{"k8s:app": "agent"}}, "egress": []any{r}}}
	}
	ports443 := []any{map[string]any{"ports": []any{map[string]any{"port": "443", "protocol": "TCP"}}}}
	for _, c := range []struct {
		name string
		obj  map[string]any
		sc   ciliumScope
		want []string
	}{
		{"declared names and patterns", rule(map[string]any{"toFQDNs": []any{
			map[string]any{"matchName": "API.example.com."}, map[string]any{"matchName": "x.example.org"}, map[string]any{"matchPattern": "*.example.org"},
		}, "toPorts": ports443}), ciliumScope{namespace: testNS}, nil},
		{"a wider pattern", rule(map[string]any{"toFQDNs": []any{map[string]any{"matchPattern": "*"}, map[string]any{"matchName": "a.b.example.org"}}, "toPorts": ports443}),
			ciliumScope{namespace: testNS}, []string{"egress from pods app=agent to hosts matching *; host a.b.example.org on TCP 443 (egress[0])"}},
		{"the world entity", rule(map[string]any{"toEntities": []any{"world"}, "toPorts": ports443}), ciliumScope{namespace: testNS},
			[]string{"egress from pods app=agent to 0.0.0.0/0, ::/0 (including the metadata server 169.254.169.254) on TCP 443 (egress[0])"}},
		{"ports only: every peer", rule(map[string]any{"toPorts": ports443}), ciliumScope{namespace: testNS},
			[]string{"egress from pods app=agent to any peer (every address, pod and entity) on TCP 443 (egress[0])"}},
		{"an empty rule allows nothing", rule(map[string]any{}), ciliumScope{namespace: testNS}, nil},
		{"kube-dns through Cilium's labels", rule(map[string]any{
			"toEndpoints": []any{map[string]any{"matchLabels": map[string]any{"k8s:io.kubernetes.pod.namespace": "kube-system", "k8s:k8s-app": "kube-dns"}}},
			"toPorts":     []any{map[string]any{"ports": []any{map[string]any{"port": "53", "protocol": "ANY"}}}},
		}), ciliumScope{namespace: testNS}, []string{"egress from pods app=agent to pods k8s-app=kube-dns in namespace kube-system on SCTP 53 (egress[0])"}},
		{"CIDR sets split, an entity, a CIDR group", rule(map[string]any{
			"toCIDRSet":  []any{map[string]any{"cidr": "0.0.0.0/1"}, map[string]any{"cidr": "128.0.0.0/1", "except": []any{"128.0.0.0/2", "192.0.0.0/2"}}, map[string]any{"cidrGroupRef": "corp"}},
			"toEntities": []any{"host"},
			"icmps":      []any{map[string]any{"fields": []any{map[string]any{"type": int64(8), "family": "IPv4"}}}},
		}), ciliumScope{namespace: testNS}, []string{"egress from pods app=agent to 0.0.0.0/1; CIDR group corp; Cilium entity host on ICMP (egress[0])"}},
		{"ingress from every entity", map[string]any{"spec": map[string]any{"endpointSelector": map[string]any{}, "ingress": []any{map[string]any{"fromEntities": []any{"all"}}}}},
			ciliumScope{namespace: testNS}, []string{"ingress to every pod from any peer (every address, pod and entity) on every protocol and port (ingress[0])"}},
		{"a field of a newer Cilium", rule(map[string]any{"toMagic": []any{"x"}, "toPorts": ports443}), ciliumScope{namespace: testNS},
			[]string{"egress from pods app=agent to peers of field toMagic, which Paddock does not read on TCP 443 (egress[0])"}},
		{"garbage in every field", map[string]any{"spec": map[string]any{"endpointSelector": "nope", "egress": []any{
			"not a rule", map[string]any{"toEndpoints": []any{7}, "toCIDR": []any{"10.0.0.0/99"}, "toPorts": []any{map[string]any{"ports": []any{map[string]any{"port": int64(99999), "protocol": "TCP"}}}}},
		}}}, ciliumScope{namespace: testNS}, []string{
			`egress from every pod to endpoints chosen by an unreadable selector; an unreadable CIDR (cidr "10.0.0.0/99": netip.ParsePrefix("10.0.0.0/99"): prefix length out of range), which the enforcer may read as any address on TCP every port (egress[1])`,
		}},
		{"clusterwide, another namespace", map[string]any{"spec": map[string]any{
			"endpointSelector": map[string]any{"matchLabels": map[string]any{"k8s:io.kubernetes.pod.namespace": "elsewhere"}},
			"egress":           []any{map[string]any{"toEntities": []any{"world"}}},
		}}, ciliumScope{namespace: testNS, clusterwide: true, nsLabels: labelsOf("kubernetes.io/metadata.name=" + testNS)}, []string{"(does not apply)"}},
		{"clusterwide, by a namespace label the tenant has", map[string]any{"spec": map[string]any{
			"endpointSelector": map[string]any{"matchLabels": map[string]any{"k8s:io.cilium.k8s.namespace.labels.team": "a"}},
			"egress":           []any{map[string]any{"toEndpoints": []any{map[string]any{}}}},
		}}, ciliumScope{namespace: testNS, clusterwide: true, nsLabels: labelsOf("kubernetes.io/metadata.name=" + testNS + ",team=a")},
			[]string{"egress from every pod to every pod in every namespace on every protocol and port (egress[0])"}},
		{"a host policy selects no pod", map[string]any{"spec": map[string]any{"nodeSelector": map[string]any{}, "egress": []any{map[string]any{"toEntities": []any{"all"}}}}},
			ciliumScope{namespace: testNS}, []string{"(does not apply)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := judge(c.obj, c.sc)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("opened:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(c.want, "\n  "))
			}
		})
	}
}

// Whatever a live object holds, reading and judging it never panics.
func FuzzCiliumEffect(f *testing.F) {
	for _, seed := range []string{
		`{}`, `null`, `{"spec": "x"}`, `{"specs": [1, null, {"egress": {"a": 1}}]}`,
		`{"spec": {"endpointSelector": {"matchLabels": {"k8s:a": 1}}, "egress": [{"toPorts": [{"ports": [{"port": 80.5, "endPort": "x", "protocol": 7}]}]}]}}`,
		`{"spec": {"endpointSelector": {"matchExpressions": [{"key": "k8s:io.kubernetes.pod.namespace", "operator": "In", "values": ["a", 2]}]}, "ingress": [{"fromCIDRSet": [{"cidr": "::/0", "except": ["0.0.0.0/0", 5]}], "icmps": [{"fields": "x"}]}]}}`,
		`{"spec": {"endpointSelector": {"matchLabels": {"reserved:host": ""}}, "egress": [{"toEndpoints": [{"matchLabels": {"reserved:world": "", "any:x": "y"}}], "toFQDNs": [{}, {"matchPattern": ""}], "toServices": [{}]}]}}`,
		`{"spec": {"podSelector": [], "egress": [{"matches": [{"pattern": "*"}, 3], "ports": [{"port": -1}, {"protocol": "UDP"}]}]}}`,
	} {
		f.Add(seed)
	}
	declared := reference(egressPolicy("", manifests.DNSEgressRule(), egressTo([]networkingv1.NetworkPolicyPort{tcpRange(1, 65535)}, cidr("0.0.0.0/0", "10.0.0.0/8"))))
	f.Fuzz(func(t *testing.T, doc string) {
		var obj map[string]any
		if json.Unmarshal([]byte(doc), &obj) != nil {
			return
		}
		for _, sc := range []ciliumScope{{namespace: testNS}, {namespace: testNS, clusterwide: true, nsLabels: labels.Set{"team": "a"}}, {clusterwide: true}} {
			for _, s := range []side{declaredSide, liveSide} {
				e, _ := ciliumEffect(obj, sc, s)
				g := gkeFQDNEffect(obj, s)
				for _, r := range append(e.rules, g.rules...) {
					for _, gp := range uncovered(&r, declared) {
						_ = gp.String()
					}
				}
			}
		}
	})
}

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"*.example.com", "api.example.com", true},
		{"*.example.com", "a.b.example.com", false},
		{"*.example.com", "example.com", false},
		{"*.example.com", ".example.com", true},
		{"api-*.example.com", "api-eu.example.com", true},
		{"*", "com", true},
		{"*", "a.com", false},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"", "", true},
		{"x", "", false},
		{strings.Repeat("*a", 60) + "b", strings.Repeat("a", 250), false}, // no blow-up
	} {
		if got := globMatch(c.pattern, c.name); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

// A live rule as large as the API server stores costs its distinct pieces,
// not the product of its ports and peers.
func TestLargeLiveRule(t *testing.T) {
	declared, live := largeLiveRule()
	got := hangguard.Within(t, 2*time.Minute, "comparing a rule of 10,000 ports and 2,000 peers", func() []string {
		return opened(declared, live)
	})
	if len(got) != 1 || !strings.Contains(got[0], "pods app=x0 in namespace agents-team-a") || !strings.Contains(got[0], "on TCP 1, TCP 3, TCP 5") || !strings.Contains(got[0], "and 9994 more port ranges") || !strings.Contains(got[0], "and 1994 more peers") || len(got[0]) > 2000 {
		t.Errorf("opened %d gaps: %.300s", len(got), strings.Join(got, "\n"))
	}
}

// BenchmarkLargeLiveRule is TestLargeLiveRule's comparison, timed.
func BenchmarkLargeLiveRule(b *testing.B) {
	declared, live := largeLiveRule()
	b.ReportAllocs()
	for b.Loop() {
		if got := opened(declared, live); len(got) != 1 {
			b.Fatalf("%d gaps", len(got))
		}
	}
}

// largeLiveRule is a declared DNS-and-one-range policy and a live rule as
// large as the API server stores: 10,000 ports to 2,000 peers.
func largeLiveRule() ([]netRule, networkingv1.NetworkPolicySpec) {
	var ports []networkingv1.NetworkPolicyPort
	for p := int32(1); p <= 20000; p += 2 {
		ports = append(ports, tcp(p))
	}
	var peers []networkingv1.NetworkPolicyPeer
	for i := range 2000 {
		peers = append(peers, networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprint("x", i)}}})
	}
	declared := reference(egressPolicy("", manifests.DNSEgressRule(), egressTo([]networkingv1.NetworkPolicyPort{tcpRange(1, 1000)}, cidr("10.0.0.0/8"))))
	return declared, egressPolicy("", egressTo(ports, peers...))
}

// The sweep cannot tell one template's pods from another's: a rule only one
// template declares covers no template's pods.
func TestTemplatesShareOnlyCommonRules(t *testing.T) {
	template := func(name string, rules ...networkingv1.NetworkPolicyEgressRule) netEffect {
		st := &extv1beta1.SandboxTemplate{TypeMeta: metav1.TypeMeta{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxTemplate"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS}}
		st.Spec.NetworkPolicy = &extv1beta1.NetworkPolicySpec{Egress: rules}
		u, err := manifests.ToUnstructured(st)
		if err != nil {
			t.Fatal(err)
		}
		e, err := templateEffect(u, testNS)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	web := egressTo([]networkingv1.NetworkPolicyPort{tcp(443)}, cidr("0.0.0.0/0"))
	both := commonToAll([]netEffect{template("a", manifests.DNSEgressRule(), web), template("b", manifests.DNSEgressRule())})
	for _, e := range both {
		if len(e.rules) != 1 || e.rules[0].ports.ranges["UDP"] == nil {
			t.Errorf("kept %d rules, want the DNS rule only: %+v", len(e.rules), e.rules)
		}
	}
	same := commonToAll([]netEffect{template("a", web), template("b", web)})
	if len(same[0].rules) != 1 || len(same[1].rules) != 1 {
		t.Errorf("rules both declare were dropped: %+v", same)
	}
}
