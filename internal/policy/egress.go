package policy

import (
	"fmt"
	"net/netip"
	"reflect"
	"sort"
	"strconv"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
)

// The egress rules (PDK-501..505) judge the objects Paddock applies, not the
// spec fields that produce them: manifests.TenantEgress builds a tenant's
// NetworkPolicies, FQDN policy and SandboxTemplates with the very functions
// `render` and `up` use, and every egress rule in them is read back here into
// one form (peers and ports). Whatever spec field opens a hole (allow, proxy,
// fqdns, the template's managed policy, a field added later), the rules see
// the hole itself; the rule's origin only says where to point the finding.

// peerKind is what an egress peer reaches.
type peerKind int

const (
	// peerCIDR is an address range, less its exceptions.
	peerCIDR peerKind = iota
	// peerWorld is every address (an empty peer list, a Cilium world entity).
	peerWorld
	// peerCluster is pods selected by labels, inside the cluster.
	peerCluster
	// peerClusterDNS is the cluster resolver (kube-system/kube-dns) only.
	peerClusterDNS
	// peerName is a host name or a wildcard pattern (FQDN policies).
	peerName
)

type peer struct {
	kind   peerKind
	prefix netip.Prefix
	except []netip.Prefix
	name   string // peerName: "api.example.com" or "*.example.com"
}

// portRange is a range of ports of one protocol ("" for any protocol).
// A rule without ports allows every port.
type portRange struct {
	proto    string
	from, to int32
}

// egressRule is one rendered egress rule.
type egressRule struct {
	// object is the rendered object that holds it ("NetworkPolicy
	// allow-egress").
	object string
	peers  []peer
	ports  []portRange
	origin manifests.Origin
	// exact is the rule as Kubernetes writes it (NetworkPolicy and
	// SandboxTemplate rules), for the one accepted hole.
	exact *networkingv1.NetworkPolicyEgressRule
	// orchestratorOnly: the rule is in a NetworkPolicy that selects exactly
	// the orchestrator's pods (manifests.OrchestratorPodLabels), which the
	// tenant's guardrail keeps off every sandbox.
	orchestratorOnly bool
}

// tenantEgress is what the egress rules see of one tenant.
type tenantEgress struct {
	rules []egressRule
	// defaultDeny: a namespace NetworkPolicy selects every pod and denies
	// all their ingress and egress.
	defaultDeny bool
	err         error
}

// egress returns the rendered egress of t, built once per Check.
func (c *checker) egress(t *model.Tenant) *tenantEgress {
	if c.egressCache == nil {
		c.egressCache = map[*model.Tenant]*tenantEgress{}
	}
	if te, ok := c.egressCache[t]; ok {
		return te
	}
	te := readEgress(c.p, t)
	c.egressCache[t] = te
	return te
}

func readEgress(p *model.Platform, t *model.Tenant) *tenantEgress {
	te := &tenantEgress{}
	view, err := manifests.TenantEgress(p, *t)
	if err != nil {
		te.err = err
		return te
	}
	fallback := manifests.Origin{Field: "tenant", Src: orSrc(t.Egress.Src, t.Src)}
	origin := func(kind, name string, i int) manifests.Origin {
		if o, ok := view.Origins[manifests.RuleRef{Kind: kind, Name: t.Namespace + "/" + name, Index: i}]; ok {
			return o
		}
		return fallback
	}
	for _, u := range view.Objects {
		kind, name := u.GetKind(), u.GetName()
		switch kind {
		case "NetworkPolicy":
			var np networkingv1.NetworkPolicy
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &np); err != nil {
				te.err = fmt.Errorf("NetworkPolicy %s: %w", name, err)
				return te
			}
			if isDefaultDeny(&np) {
				te.defaultDeny = true
			}
			if !selectsEgress(&np) {
				continue
			}
			orchestratorOnly := len(np.Spec.PodSelector.MatchExpressions) == 0 &&
				reflect.DeepEqual(np.Spec.PodSelector.MatchLabels, manifests.OrchestratorPodLabels())
			for i := range np.Spec.Egress {
				r := k8sRule("NetworkPolicy "+name, &np.Spec.Egress[i], origin(kind, name, i))
				r.orchestratorOnly = orchestratorOnly
				te.rules = append(te.rules, r)
			}
		case "SandboxTemplate":
			var st extv1beta1.SandboxTemplate
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &st); err != nil {
				te.err = fmt.Errorf("SandboxTemplate %s: %w", name, err)
				return te
			}
			if st.Spec.NetworkPolicyManagement == extv1beta1.NetworkPolicyManagementUnmanaged {
				continue
			}
			rules := manifests.ControllerDefaultEgress()
			where := "SandboxTemplate " + name + " (controller default)"
			if st.Spec.NetworkPolicy != nil {
				rules = st.Spec.NetworkPolicy.Egress
				where = "SandboxTemplate " + name
			}
			for i := range rules {
				te.rules = append(te.rules, k8sRule(where, &rules[i], origin(kind, name, i)))
			}
		case "CiliumNetworkPolicy":
			for i, r := range ciliumRules(u) {
				r.object, r.origin = "CiliumNetworkPolicy "+name, origin(kind, name, i)
				te.rules = append(te.rules, r)
			}
		case "FQDNNetworkPolicy":
			for i, r := range gkeFQDNRules(u) {
				r.object, r.origin = "FQDNNetworkPolicy "+name, origin(kind, name, i)
				te.rules = append(te.rules, r)
			}
		}
	}
	return te
}

func selectsEgress(np *networkingv1.NetworkPolicy) bool {
	for _, pt := range np.Spec.PolicyTypes {
		if pt == networkingv1.PolicyTypeEgress {
			return true
		}
	}
	return len(np.Spec.Egress) > 0
}

// isDefaultDeny: every pod of the namespace, ingress and egress isolated,
// nothing allowed.
func isDefaultDeny(np *networkingv1.NetworkPolicy) bool {
	sel := np.Spec.PodSelector
	if len(sel.MatchLabels) > 0 || len(sel.MatchExpressions) > 0 || len(np.Spec.Ingress) > 0 || len(np.Spec.Egress) > 0 {
		return false
	}
	var in, out bool
	for _, pt := range np.Spec.PolicyTypes {
		in = in || pt == networkingv1.PolicyTypeIngress
		out = out || pt == networkingv1.PolicyTypeEgress
	}
	return in && out
}

// k8sRule reads a NetworkPolicy egress rule.
func k8sRule(object string, r *networkingv1.NetworkPolicyEgressRule, origin manifests.Origin) egressRule {
	out := egressRule{object: object, origin: origin, exact: r}
	if len(r.To) == 0 {
		out.peers = []peer{{kind: peerWorld}}
	}
	for _, to := range r.To {
		switch {
		case to.IPBlock != nil:
			pfx, err := cidrPrefix(to.IPBlock.CIDR)
			if err != nil {
				// Unreadable: judge it as the widest thing it could be.
				out.peers = append(out.peers, peer{kind: peerWorld})
				continue
			}
			pr := peer{kind: peerCIDR, prefix: pfx}
			for _, e := range to.IPBlock.Except {
				if ep, err := cidrPrefix(e); err == nil {
					pr.except = append(pr.except, ep)
				}
			}
			out.peers = append(out.peers, pr)
		case manifests.IsClusterDNSPeer(to):
			out.peers = append(out.peers, peer{kind: peerClusterDNS})
		default:
			out.peers = append(out.peers, peer{kind: peerCluster})
		}
	}
	for _, p := range r.Ports {
		proto := "TCP"
		if p.Protocol != nil {
			proto = string(*p.Protocol)
		}
		switch {
		case p.Port == nil:
			out.ports = append(out.ports, portRange{proto: proto, from: 1, to: 65535})
		case p.Port.Type == intstr.String:
			// A named port can be any number on the destination.
			out.ports = append(out.ports, portRange{proto: proto, from: 1, to: 65535})
		default:
			pr := portRange{proto: proto, from: p.Port.IntVal, to: p.Port.IntVal}
			if p.EndPort != nil && *p.EndPort > pr.to {
				pr.to = *p.EndPort
			}
			out.ports = append(out.ports, pr)
		}
	}
	return out
}

// cidrPrefix reads an ipBlock range. An IPv4-mapped IPv6 range is judged as
// the IPv4 range it maps (model.ParseCIDR refuses to write one).
func cidrPrefix(s string) (netip.Prefix, error) {
	pfx, err := netip.ParsePrefix(s)
	if err != nil {
		return pfx, err
	}
	if a := pfx.Addr(); a.Is4In6() {
		bits := pfx.Bits() - 96
		if bits < 0 {
			// Wider than the mapped block: it holds every IPv4 address.
			bits = 0
		}
		return netip.PrefixFrom(a.Unmap(), bits).Masked(), nil
	}
	return pfx.Masked(), nil
}

// ciliumRules reads the egress rules of a CiliumNetworkPolicy (spec or
// specs). A rule without an L3 selector reaches every destination on its
// ports; a selector this reader does not know is judged as the world.
func ciliumRules(u *unstructured.Unstructured) []egressRule {
	var specs []any
	if s, ok := u.Object["spec"].(map[string]any); ok {
		specs = append(specs, s)
	}
	if ss, ok := u.Object["specs"].([]any); ok {
		specs = append(specs, ss...)
	}
	var out []egressRule
	for _, s := range specs {
		spec, _ := s.(map[string]any)
		rules, _ := spec["egress"].([]any)
		for _, r := range rules {
			rule, _ := r.(map[string]any)
			var er egressRule
			for key, val := range rule {
				switch key {
				case "toPorts", "authentication":
				case "toFQDNs":
					list, _ := val.([]any)
					for _, f := range list {
						m, _ := f.(map[string]any)
						if n, ok := m["matchName"].(string); ok {
							er.peers = append(er.peers, peer{kind: peerName, name: strings.ToLower(n)})
						}
						if n, ok := m["matchPattern"].(string); ok {
							er.peers = append(er.peers, peer{kind: peerName, name: strings.ToLower(n)})
						}
					}
				case "toEndpoints":
					list, _ := val.([]any)
					for _, e := range list {
						if ciliumIsClusterDNS(e) {
							er.peers = append(er.peers, peer{kind: peerClusterDNS})
						} else {
							er.peers = append(er.peers, peer{kind: peerCluster})
						}
					}
				case "toCIDR":
					list, _ := val.([]any)
					for _, c := range list {
						s, _ := c.(string)
						er.peers = append(er.peers, cidrOrWorld(s, nil))
					}
				case "toCIDRSet":
					list, _ := val.([]any)
					for _, c := range list {
						m, _ := c.(map[string]any)
						s, _ := m["cidr"].(string)
						ex, _ := m["except"].([]any)
						er.peers = append(er.peers, cidrOrWorld(s, ex))
					}
				case "toEntities":
					list, _ := val.([]any)
					for _, e := range list {
						switch e {
						case "cluster", "host", "remote-node", "kube-apiserver", "ingress", "health", "init", "unmanaged":
							er.peers = append(er.peers, peer{kind: peerCluster})
						default: // world, world-ipv4, world-ipv6, all
							er.peers = append(er.peers, peer{kind: peerWorld})
						}
					}
				default: // toServices, toGroups, toNodes, ...: judged as the world
					er.peers = append(er.peers, peer{kind: peerWorld})
				}
			}
			if len(er.peers) == 0 {
				er.peers = []peer{{kind: peerWorld}}
			}
			tps, hasPorts := rule["toPorts"].([]any)
			for _, tp := range tps {
				m, _ := tp.(map[string]any)
				ports, _ := m["ports"].([]any)
				if len(ports) == 0 {
					er.ports = append(er.ports, portRange{from: 1, to: 65535})
				}
				for _, p := range ports {
					pm, _ := p.(map[string]any)
					er.ports = append(er.ports, ciliumPort(pm))
				}
			}
			if hasPorts && len(er.ports) == 0 {
				er.ports = []portRange{{from: 1, to: 65535}}
			}
			out = append(out, er)
		}
	}
	return out
}

func cidrOrWorld(s string, except []any) peer {
	pfx, err := cidrPrefix(s)
	if err != nil {
		return peer{kind: peerWorld}
	}
	pr := peer{kind: peerCIDR, prefix: pfx}
	for _, e := range except {
		if es, ok := e.(string); ok {
			if ep, err := cidrPrefix(es); err == nil {
				pr.except = append(pr.except, ep)
			}
		}
	}
	return pr
}

func ciliumIsClusterDNS(e any) bool {
	m, _ := e.(map[string]any)
	labels, _ := m["matchLabels"].(map[string]any)
	if len(m) != 1 || len(labels) != 2 {
		return false
	}
	ns := labels["k8s:io.kubernetes.pod.namespace"]
	app := labels["k8s:k8s-app"]
	return ns == "kube-system" && app == "kube-dns"
}

// ciliumPort reads a Cilium port: "443", "0" (every port), a name (any
// number), with an optional endPort.
func ciliumPort(m map[string]any) portRange {
	proto, _ := m["protocol"].(string)
	if proto == "ANY" {
		proto = ""
	}
	all := portRange{proto: proto, from: 1, to: 65535}
	var n int64
	switch v := m["port"].(type) {
	case string:
		x, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return all
		}
		n = x
	case int64:
		n = v
	case float64:
		n = int64(v)
	default:
		return all
	}
	if n <= 0 || n > 65535 {
		return all
	}
	pr := portRange{proto: proto, from: int32(n), to: int32(n)}
	if e, ok := m["endPort"].(int64); ok && e > n && e <= 65535 {
		pr.to = int32(e)
	}
	return pr
}

// gkeFQDNRules reads the egress rules of a GKE FQDNNetworkPolicy.
func gkeFQDNRules(u *unstructured.Unstructured) []egressRule {
	rules, _, _ := unstructured.NestedSlice(u.Object, "spec", "egress")
	var out []egressRule
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		var er egressRule
		matches, _ := rule["matches"].([]any)
		for _, m := range matches {
			mm, _ := m.(map[string]any)
			if n, ok := mm["name"].(string); ok {
				er.peers = append(er.peers, peer{kind: peerName, name: strings.ToLower(n)})
			}
			if n, ok := mm["pattern"].(string); ok {
				er.peers = append(er.peers, peer{kind: peerName, name: strings.ToLower(n)})
			}
		}
		if len(er.peers) == 0 {
			er.peers = []peer{{kind: peerWorld}}
		}
		ports, _ := rule["ports"].([]any)
		for _, p := range ports {
			pm, _ := p.(map[string]any)
			er.ports = append(er.ports, ciliumPort(pm))
		}
		out = append(out, er)
	}
	return out
}

// allowsPort reports whether r allows port n (any protocol).
func (r *egressRule) allowsPort(n int32) bool {
	if len(r.ports) == 0 {
		return true
	}
	for _, p := range r.ports {
		if p.from <= n && n <= p.to {
			return true
		}
	}
	return false
}

// reaches reports whether a peer reaches addr.
func (pr peer) reaches(addr netip.Addr) bool {
	switch pr.kind {
	case peerWorld:
		return true
	case peerCIDR:
		if !pr.prefix.Contains(addr) {
			return false
		}
		for _, e := range pr.except {
			if e.Contains(addr) {
				return false
			}
		}
		return true
	case peerName:
		return metadataName(pr.name)
	}
	return false
}

// internetWide reports whether a peer spans a large part of the internet:
// the world, an IPv4 prefix shorter than /8, an IPv6 prefix shorter than
// /16, or a name pattern that matches hosts anyone can register.
func (pr peer) internetWide() bool {
	switch pr.kind {
	case peerWorld:
		return true
	case peerCIDR:
		if pr.prefix.Addr().Is4() {
			return pr.prefix.Bits() < 8
		}
		return pr.prefix.Bits() < 16
	case peerName:
		return model.PublicSuffixWildcard(pr.name)
	}
	return false
}

// describe is the peer as a finding names it.
func (pr peer) describe() string {
	switch pr.kind {
	case peerWorld:
		return "every address"
	case peerCIDR:
		s := pr.prefix.String()
		if len(pr.except) > 0 {
			var ex []string
			for _, e := range pr.except {
				ex = append(ex, e.String())
			}
			s += " (except " + strings.Join(ex, ", ") + ")"
		}
		return s
	case peerClusterDNS:
		return "the cluster DNS"
	case peerCluster:
		return "pods of the cluster"
	case peerName:
		return pr.name
	}
	return "?"
}

func (r *egressRule) describePorts() string {
	if len(r.ports) == 0 {
		return "every port"
	}
	var out []string
	for _, p := range r.ports {
		s := strconv.Itoa(int(p.from))
		if p.to != p.from {
			s += "-" + strconv.Itoa(int(p.to))
		}
		if p.proto != "" {
			s = p.proto + " " + s
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// isMetadataServerRule reports whether r is exactly the one hole Paddock
// itself opens for a workload identity (TCP 80 to the GKE metadata server,
// 169.254.169.254/32, nothing excepted, nothing more), on a platform where it
// opens it: for the agent (model.Platform.AgentNeedsMetadataServer; PDK-207
// reports that identity), or for the orchestrator, in a policy that selects
// the orchestrator's pods and nothing else
// (model.Platform.OrchestratorNeedsMetadataServer). Anything wider is not
// this hole.
func isMetadataServerRule(p *model.Platform, t *model.Tenant, r *egressRule) bool {
	if r.exact == nil {
		return false
	}
	if !p.AgentNeedsMetadataServer(*t) && !(r.orchestratorOnly && p.OrchestratorNeedsMetadataServer(*t)) {
		return false
	}
	e := r.exact
	if len(e.To) != 1 || len(e.Ports) != 1 {
		return false
	}
	to, pt := e.To[0], e.Ports[0]
	if to.IPBlock == nil || to.NamespaceSelector != nil || to.PodSelector != nil || len(to.IPBlock.Except) > 0 {
		return false
	}
	if pfx, err := cidrPrefix(to.IPBlock.CIDR); err != nil || pfx.String() != model.GKEMetadataServerCIDR {
		return false
	}
	proto := "TCP"
	if pt.Protocol != nil {
		proto = string(*pt.Protocol)
	}
	return proto == model.GKEMetadataServerProto && pt.Port != nil && pt.Port.Type == intstr.Int &&
		pt.Port.IntVal == model.GKEMetadataServerPort && (pt.EndPort == nil || *pt.EndPort == model.GKEMetadataServerPort)
}

// egressFinding gathers the rendered rules of one finding: the same hole is
// rendered into the namespace policy and into every template's managed
// policy, and is reported once, at its origin.
type egressFinding struct {
	origin  manifests.Origin
	what    string
	objects []string
}

// eachEgressFinding calls judge on every rendered egress rule of every
// tenant; judge returns what the rule opens that the current rule forbids
// ("" for nothing), and report is called once per tenant, origin and what.
func (c *checker) eachEgressFinding(judge func(t *model.Tenant, r *egressRule) string, report func(t *model.Tenant, f egressFinding)) {
	c.eachTenant(func(t *model.Tenant) {
		te := c.egress(t)
		var found []*egressFinding
		index := map[string]*egressFinding{}
		for i := range te.rules {
			r := &te.rules[i]
			what := judge(t, r)
			if what == "" {
				continue
			}
			key := r.origin.Field + "\x00" + r.origin.Src.String() + "\x00" + what
			f, ok := index[key]
			if !ok {
				f = &egressFinding{origin: r.origin, what: what}
				index[key] = f
				found = append(found, f)
			}
			if !contains(f.objects, r.object) {
				f.objects = append(f.objects, r.object)
			}
		}
		for _, f := range found {
			report(t, *f)
		}
	})
}

// through names the objects that hold a hole, and the spec argument that opened it.
func (f egressFinding) through() string {
	objs := f.objects
	sort.Strings(objs)
	more := ""
	if len(objs) > 3 {
		more = fmt.Sprintf(" and %d more", len(objs)-3)
		objs = objs[:3]
	}
	return fmt.Sprintf("(%s%s; opened by %s)", strings.Join(objs, ", "), more, f.origin.Field)
}

// peersWhere describes the peers of r that satisfy keep.
func peersWhere(r *egressRule, keep func(peer) bool) string {
	var out []string
	for _, pr := range r.peers {
		if keep(pr) {
			if d := pr.describe(); !contains(out, d) {
				out = append(out, d)
			}
		}
	}
	return strings.Join(out, ", ")
}
