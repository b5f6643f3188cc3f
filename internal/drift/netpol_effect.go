package drift

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/paddock-platform/paddock/internal/model"
)

// This file judges network policies by what they let through, not by how
// they are written. Every rule of every policy (NetworkPolicy, Cilium's,
// GKE's FQDN policy, a template's) is normalised into one shape — a
// direction, the pods it applies to, the peers and the ports it opens — and
// a live rule is covered only when, for every port it opens, the declared
// rules that apply to at least its pods and open that port together open
// every peer it opens. Whatever is left over is what the live rule opens
// beyond the spec. The analysis is pure: no cluster, no clock.
//
// Where it cannot prove coverage it reports. Addresses are compared as
// ranges (net/netip), so CIDRs and except blocks however split add up
// exactly. Ports are ranges per protocol, split at every declared boundary;
// a named port is covered only by the same name or every port of its
// protocol. A declared selector covers a live one only when each of its
// requirements follows from one of the live selector's (labelSet.contains);
// a pod peer is covered by one declared pod peer, never by several together;
// host names by the same name or a pattern that matches it; Cilium entities
// and other peers Paddock cannot compare, only by the same peer.

// direction is the way traffic flows relative to the pods a rule applies to.
type direction string

const (
	ingress direction = "ingress"
	egress  direction = "egress"
)

// side says whose object is being read. An object Paddock cannot read is
// judged so the sweep errs towards reporting: a live one as broadly as it
// could act, a declared one as allowing nothing.
type side int

const (
	declaredSide side = iota
	liveSide
)

// labelSet is a label selector as requirements (ANDed); none are
// "everything". none marks a declared selector Paddock could not read: it
// selects nothing, so it never covers anything.
type labelSet struct {
	reqs labels.Requirements
	none bool
}

var everything = labelSet{}

// selectorOf reads a label selector; nil means everything (callers that give
// nil another meaning decide before calling).
func selectorOf(ls *metav1.LabelSelector, s side) labelSet {
	if ls == nil || len(ls.MatchLabels)+len(ls.MatchExpressions) == 0 {
		return everything
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		if s == liveSide {
			return everything
		}
		return labelSet{none: true}
	}
	reqs, ok := sel.Requirements()
	if !ok {
		return labelSet{none: true}
	}
	return labelSet{reqs: reqs}
}

// requirement builds one requirement; a value the API would refuse makes it
// everything on the live side and nothing on the declared side.
func requirement(key string, op selection.Operator, vals []string, s side) labelSet {
	r, err := labels.NewRequirement(key, op, vals)
	if err != nil {
		if s == liveSide {
			return everything
		}
		return labelSet{none: true}
	}
	return labelSet{reqs: labels.Requirements{*r}}
}

func (l labelSet) isEverything() bool { return !l.none && len(l.reqs) == 0 }

func (l labelSet) String() string {
	if l.none {
		return "(nothing)"
	}
	if len(l.reqs) == 0 {
		return "(everything)"
	}
	return labels.NewSelector().Add(l.reqs...).String()
}

// contains reports whether d provably selects every object l selects: each
// requirement of d follows from one requirement of l on the same key. It
// never proves more than that (two requirements of l that only together
// imply one of d are not combined), so a false answer means "not proven".
func (d labelSet) contains(l labelSet) bool {
	if d.none {
		return false
	}
	if l.none {
		return true
	}
	for _, dr := range d.reqs {
		ok := false
		for _, lr := range l.reqs {
			if lr.Key() == dr.Key() && implies(lr, dr) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

type opKind int

const (
	opOther opKind = iota
	opIn
	opNotIn
	opExists
	opAbsent
)

func kindOf(op selection.Operator) opKind {
	switch op {
	case selection.In, selection.Equals, selection.DoubleEquals:
		return opIn
	case selection.NotIn, selection.NotEquals:
		return opNotIn
	case selection.Exists:
		return opExists
	case selection.DoesNotExist:
		return opAbsent
	}
	return opOther
}

// implies reports whether every label set satisfying l satisfies d (same key).
func implies(l, d labels.Requirement) bool {
	lv, dv := l.Values(), d.Values()
	switch lk, dk := kindOf(l.Operator()), kindOf(d.Operator()); {
	case dk == opIn:
		return lk == opIn && lv.Len() > 0 && dv.IsSuperset(lv)
	case dk == opNotIn:
		return (lk == opIn && !lv.HasAny(dv.UnsortedList()...)) || (lk == opNotIn && lv.IsSuperset(dv)) || lk == opAbsent
	case dk == opExists:
		return (lk == opIn && lv.Len() > 0) || lk == opExists
	case dk == opAbsent:
		return lk == opAbsent
	}
	return l.Equal(d)
}

// podPeer is pods chosen by labels in namespaces chosen by labels.
type podPeer struct {
	namespaces labelSet
	pods       labelSet
}

func (p podPeer) covers(l podPeer) bool {
	return p.namespaces.contains(l.namespaces) && p.pods.contains(l.pods)
}

// namespaceNameLabel is the label the API server sets on every namespace to
// its name: a peer of "this namespace" is written as a selector on it, so
// that a rule naming the namespace and a rule implying it compare equal.
const namespaceNameLabel = "kubernetes.io/metadata.name"

func (p podPeer) String() string {
	pods := "every pod"
	if !p.pods.isEverything() {
		pods = "pods " + p.pods.String()
	}
	switch {
	case p.namespaces.isEverything():
		return pods + " in every namespace"
	case len(p.namespaces.reqs) == 1 && p.namespaces.reqs[0].Key() == namespaceNameLabel && kindOf(p.namespaces.reqs[0].Operator()) == opIn:
		return pods + " in namespace " + strings.Join(p.namespaces.reqs[0].Values().List(), ",")
	}
	return pods + " in namespaces " + p.namespaces.String()
}

// fqdnMatch is a DNS name or a pattern ("*" matches within one label).
type fqdnMatch struct {
	value   string
	pattern bool
}

func (f fqdnMatch) String() string {
	if f.pattern {
		return "hosts matching " + f.value
	}
	return "host " + f.value
}

// covers reports whether f allows every name l allows. A pattern covers
// another pattern only when it is "*" or the same pattern: proving one
// wildcard set within another is not worth the risk of proving it wrong.
func (f fqdnMatch) covers(l fqdnMatch) bool {
	fv, lv := strings.ToLower(strings.TrimSuffix(f.value, ".")), strings.ToLower(strings.TrimSuffix(l.value, "."))
	if !f.pattern {
		return !l.pattern && fv == lv
	}
	if fv == "*" || fv == lv {
		return true
	}
	return !l.pattern && globMatch(fv, lv)
}

// globMatch matches name against pattern, where "*" stands for any run of
// characters other than "." (the narrowest reading of a DNS wildcard, so a
// match here is a match for any enforcer). Dynamic programming over both
// strings: a live name, however crafted, costs at most their product.
func globMatch(pattern, name string) bool {
	// ok[j] is whether pattern[:i] matches name[:j], for the i of the loop.
	ok := make([]bool, len(name)+1)
	ok[0] = true
	for i := 0; i < len(pattern); i++ {
		next := make([]bool, len(name)+1)
		if pattern[i] == '*' {
			next[0] = ok[0]
			for j := 1; j <= len(name); j++ {
				next[j] = ok[j] || (next[j-1] && name[j-1] != '.')
			}
		} else {
			for j := 1; j <= len(name); j++ {
				next[j] = ok[j-1] && pattern[i] == name[j-1]
			}
		}
		ok = next
	}
	return ok[len(name)]
}

// peerSet is every peer a rule lets traffic come from or go to.
type peerSet struct {
	// any is every peer there is: each address, pod and entity.
	any   bool
	ips   ipSet
	pods  []podPeer
	fqdns []fqdnMatch
	// opaque are peers compared only by name: Cilium entities, services,
	// CIDR groups, and what Paddock could not read.
	opaque []string
}

func (p peerSet) empty() bool {
	return !p.any && len(p.ips) == 0 && len(p.pods) == 0 && len(p.fqdns) == 0 && len(p.opaque) == 0
}

func (p *peerSet) add(q peerSet) {
	p.any = p.any || q.any
	p.ips = p.ips.union(q.ips)
	p.pods = append(p.pods, q.pods...)
	p.fqdns = append(p.fqdns, q.fqdns...)
	p.opaque = append(p.opaque, q.opaque...)
}

// minus is what of p the peers of u do not cover.
func (p peerSet) minus(u peerSet) peerSet {
	if u.any {
		return peerSet{}
	}
	out := peerSet{any: p.any, ips: p.ips.minus(u.ips)}
	for _, pp := range p.pods {
		if !coveredBy(pp, u.pods, podPeer.covers) {
			out.pods = append(out.pods, pp)
		}
	}
	for _, f := range p.fqdns {
		if !coveredBy(f, u.fqdns, fqdnMatch.covers) {
			out.fqdns = append(out.fqdns, f)
		}
	}
	for _, o := range p.opaque {
		if !coveredBy(o, u.opaque, func(a, b string) bool { return a == b }) {
			out.opaque = append(out.opaque, o)
		}
	}
	return out
}

func coveredBy[T any](x T, by []T, covers func(by, x T) bool) bool {
	for _, b := range by {
		if covers(b, x) {
			return true
		}
	}
	return false
}

// key identifies p exactly (String shortens long address lists).
func (p peerSet) key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v|", p.any)
	for _, r := range p.ips {
		b.WriteString(r.lo.String() + "-" + r.hi.String() + ",")
	}
	b.WriteString("|")
	for _, pp := range p.pods {
		b.WriteString(pp.String() + ",")
	}
	b.WriteString("|")
	for _, f := range p.fqdns {
		b.WriteString(f.String() + ",")
	}
	return b.String() + "|" + strings.Join(p.opaque, ",")
}

func (p peerSet) String() string {
	if p.any {
		return "any peer (every address, pod and entity)"
	}
	var parts []string
	if len(p.ips) > 0 {
		s := p.ips.String()
		if p.ips.contains(model.MetadataServerAddr) {
			s += " (including the metadata server " + model.MetadataServerAddr.String() + ")"
		}
		parts = append(parts, s)
	}
	for _, pp := range p.pods {
		parts = append(parts, pp.String())
	}
	for _, f := range p.fqdns {
		parts = append(parts, f.String())
	}
	parts = append(parts, p.opaque...)
	const shown = 6 // a report line stays short, whatever the policy lists
	if len(parts) > shown {
		parts = append(parts[:shown], fmt.Sprintf("and %d more peers", len(parts)-shown))
	}
	return strings.Join(parts, "; ")
}

// portRange is an inclusive range of ports.
type portRange struct{ lo, hi int32 }

var allPorts = portRange{1, 65535}

// portSet is the ports a rule opens.
type portSet struct {
	// any is every protocol on every port (a rule without ports).
	any    bool
	ranges map[string][]portRange
	named  map[string][]string
}

func (s *portSet) addRange(proto string, r portRange) {
	if s.ranges == nil {
		s.ranges = map[string][]portRange{}
	}
	s.ranges[proto] = append(s.ranges[proto], r)
}

func (s *portSet) addNamed(proto, name string) {
	if s.named == nil {
		s.named = map[string][]string{}
	}
	s.named[proto] = append(s.named[proto], name)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// portAtom is one piece of a live rule's ports that every declared rule
// either opens whole or not at all.
type portAtom struct {
	any   bool
	proto string
	r     portRange
	name  string
}

func (a portAtom) String() string {
	switch {
	case a.any:
		return "every protocol and port"
	case a.name != "":
		return a.proto + " port named " + a.name
	case strings.HasPrefix(a.proto, "ICMP"):
		return a.proto
	case a.r == allPorts:
		return a.proto + " every port"
	case a.r.lo == a.r.hi:
		return fmt.Sprintf("%s %d", a.proto, a.r.lo)
	}
	return fmt.Sprintf("%s %d-%d", a.proto, a.r.lo, a.r.hi)
}

// opens reports whether s opens the whole of atom a.
func (s portSet) opens(a portAtom) bool {
	if s.any {
		return true
	}
	if a.any {
		return false
	}
	if a.name != "" {
		for _, n := range s.named[a.proto] {
			if n == a.name {
				return true
			}
		}
		// Every port of the protocol includes whichever a name resolves to.
		a = portAtom{proto: a.proto, r: allPorts}
	}
	for _, r := range s.ranges[a.proto] {
		if r.lo <= a.r.lo && a.r.hi <= r.hi {
			return true
		}
	}
	return false
}

// atoms splits live ports at every boundary of the declared ports, so that
// each piece is either inside or outside each declared range.
func atoms(live portSet, declared []*netRule) []portAtom {
	if live.any {
		return []portAtom{{any: true}}
	}
	var out []portAtom
	for _, proto := range sortedKeys(live.ranges) {
		cuts := map[int32]bool{}
		for _, d := range declared {
			for _, r := range d.ports.ranges[proto] {
				cuts[r.lo], cuts[r.hi+1] = true, true
			}
		}
		points := make([]int32, 0, len(cuts))
		for c := range cuts {
			points = append(points, c)
		}
		sort.Slice(points, func(i, j int) bool { return points[i] < points[j] })
		for _, r := range live.ranges[proto] {
			lo := r.lo
			for _, c := range points {
				if c > lo && c <= r.hi {
					out = append(out, portAtom{proto: proto, r: portRange{lo, c - 1}})
					lo = c
				}
			}
			out = append(out, portAtom{proto: proto, r: portRange{lo, r.hi}})
		}
	}
	for _, proto := range sortedKeys(live.named) {
		for _, n := range live.named[proto] {
			out = append(out, portAtom{proto: proto, name: n})
		}
	}
	return out
}

// netRule is one allow rule in normal form.
type netRule struct {
	dir direction
	// target are the pods of the rule's namespace it applies to.
	target labelSet
	peers  peerSet
	ports  portSet
	// where names the rule inside its object ("egress[2]").
	where string
}

// key identifies what r allows (not where it is written).
func (r *netRule) key() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s|%s|%v|", r.dir, r.target, r.peers.key(), r.ports.any)
	for _, proto := range sortedKeys(r.ports.ranges) {
		fmt.Fprintf(&b, "%s%v", proto, r.ports.ranges[proto])
	}
	for _, proto := range sortedKeys(r.ports.named) {
		fmt.Fprintf(&b, "%s%v", proto, r.ports.named[proto])
	}
	return b.String()
}

// netEffect is what one policy object does: the pods it isolates in each
// direction and the rules that then let traffic through.
type netEffect struct {
	isolates map[direction][]labelSet
	rules    []netRule
}

func (e *netEffect) isolate(d direction, target labelSet) {
	if e.isolates == nil {
		e.isolates = map[direction][]labelSet{}
	}
	e.isolates[d] = append(e.isolates[d], target)
}

// gap is what a live rule opens beyond the declared rules on some ports.
type gap struct {
	rule  *netRule
	ports []portAtom
	peers peerSet
}

func (g gap) String() string {
	const shown = 6 // a report line stays short, whatever the policy lists
	var ports []string
	for i, a := range g.ports {
		if i == shown {
			ports = append(ports, fmt.Sprintf("and %d more port ranges", len(g.ports)-shown))
			break
		}
		ports = append(ports, a.String())
	}
	target := "every pod"
	if !g.rule.target.isEverything() {
		target = "pods " + g.rule.target.String()
	}
	if g.rule.dir == ingress {
		return fmt.Sprintf("ingress to %s from %s on %s (%s)", target, g.peers, strings.Join(ports, ", "), g.rule.where)
	}
	return fmt.Sprintf("egress from %s to %s on %s (%s)", target, g.peers, strings.Join(ports, ", "), g.rule.where)
}

// uncovered is what live opens beyond the declared rules: for each piece of
// its ports, the peers that no declared rule opens there for a superset of
// its pods. Pieces whose leftover peers read the same are reported together.
func uncovered(live *netRule, declared []netRule) []gap {
	var rel []*netRule
	for i := range declared {
		d := &declared[i]
		if d.dir == live.dir && d.target.contains(live.target) {
			rel = append(rel, d)
		}
	}
	var out []gap
	index := map[string]int{}
	// Pieces opened by the same declared rules leave the same peers: each
	// such set is worked out once, so a live rule listing thousands of ports
	// costs no more than its distinct pieces.
	type leftover struct {
		rest peerSet
		key  string
	}
	memo := map[string]leftover{}
	for _, a := range atoms(live.ports, rel) {
		var which strings.Builder
		for i, d := range rel {
			if d.ports.opens(a) {
				which.WriteString(strconv.Itoa(i) + ",")
			}
		}
		lo, ok := memo[which.String()]
		if !ok {
			var allowed peerSet
			for _, d := range rel {
				if d.ports.opens(a) {
					allowed.add(d.peers)
				}
			}
			lo.rest = live.peers.minus(allowed)
			lo.key = lo.rest.key()
			memo[which.String()] = lo
		}
		rest, key := lo.rest, lo.key
		if rest.empty() {
			continue
		}
		if i, ok := index[key]; ok {
			ports := out[i].ports
			// Pieces that the declared ports split but that are open to
			// the same peers read as one range.
			if last := &ports[len(ports)-1]; !a.any && a.name == "" && last.name == "" && last.proto == a.proto && last.r.hi+1 == a.r.lo {
				last.r.hi = a.r.hi
				continue
			}
			out[i].ports = append(ports, a)
			continue
		}
		index[key] = len(out)
		out = append(out, gap{rule: live, ports: []portAtom{a}, peers: rest})
	}
	return out
}

// policyTypes are the directions a NetworkPolicy isolates: as written, or
// as the API defaults them (ingress always, egress when it has egress rules).
func policyTypes(spec networkingv1.NetworkPolicySpec) map[direction]bool {
	out := map[direction]bool{}
	for _, t := range spec.PolicyTypes {
		switch t {
		case networkingv1.PolicyTypeIngress:
			out[ingress] = true
		case networkingv1.PolicyTypeEgress:
			out[egress] = true
		}
	}
	if len(spec.PolicyTypes) == 0 {
		out[ingress] = true
		out[egress] = len(spec.Egress) > 0
	}
	return out
}

// networkPolicyEffect normalises a NetworkPolicy of namespace ns. Rules of a
// direction the policy does not isolate are not enforced, so not counted.
func networkPolicyEffect(spec networkingv1.NetworkPolicySpec, ns string, s side) netEffect {
	var e netEffect
	target := selectorOf(&spec.PodSelector, s)
	types := policyTypes(spec)
	if types[ingress] {
		e.isolate(ingress, target)
		for i, r := range spec.Ingress {
			e.rules = append(e.rules, netRule{dir: ingress, target: target, peers: npPeers(r.From, ns, s), ports: npPorts(r.Ports, s), where: fmt.Sprintf("ingress[%d]", i)})
		}
	}
	if types[egress] {
		e.isolate(egress, target)
		for i, r := range spec.Egress {
			e.rules = append(e.rules, netRule{dir: egress, target: target, peers: npPeers(r.To, ns, s), ports: npPorts(r.Ports, s), where: fmt.Sprintf("egress[%d]", i)})
		}
	}
	return e
}

// npPeers reads a rule's peers; none is every peer.
func npPeers(peers []networkingv1.NetworkPolicyPeer, ns string, s side) peerSet {
	var out peerSet
	if len(peers) == 0 {
		out.any = true
		return out
	}
	for _, p := range peers {
		read := false
		if b := p.IPBlock; b != nil {
			read = true
			set, err := parseCIDRSet(b.CIDR, b.Except)
			switch {
			case err == nil:
				out.ips = out.ips.union(set)
			case s == liveSide:
				out.opaque = append(out.opaque, fmt.Sprintf("an unreadable ipBlock (%v), which the enforcer may read as any address", err))
			}
		}
		if p.PodSelector != nil || p.NamespaceSelector != nil {
			read = true
			pp := podPeer{namespaces: requirement(namespaceNameLabel, selection.In, []string{ns}, s), pods: selectorOf(p.PodSelector, s)}
			if p.NamespaceSelector != nil {
				pp.namespaces = selectorOf(p.NamespaceSelector, s)
			}
			out.pods = append(out.pods, pp)
		}
		if !read && s == liveSide {
			// A peer with nothing in it is not valid; do not guess narrowly.
			out.any = true
		}
	}
	return out
}

// npPorts reads a rule's ports; none is every protocol on every port.
func npPorts(ports []networkingv1.NetworkPolicyPort, s side) portSet {
	var out portSet
	if len(ports) == 0 {
		out.any = true
		return out
	}
	for _, p := range ports {
		proto := "TCP"
		if p.Protocol != nil && *p.Protocol != "" {
			proto = strings.ToUpper(string(*p.Protocol))
		}
		if p.Port == nil {
			out.addRange(proto, allPorts)
			continue
		}
		n, named := p.Port.IntVal, ""
		if p.Port.Type == intstr.String {
			if v, err := strconv.Atoi(p.Port.StrVal); err == nil {
				n = int32(v)
			} else {
				named = p.Port.StrVal
			}
		}
		if named != "" {
			out.addNamed(proto, named)
			continue
		}
		end := n
		if p.EndPort != nil {
			end = *p.EndPort
		}
		r, ok := clampPorts(n, end, s)
		if ok {
			out.addRange(proto, r)
		}
	}
	return out
}

// clampPorts makes lo..hi a valid range. A range the API would refuse is
// read as every port on the live side and dropped on the declared side.
func clampPorts(lo, hi int32, s side) (portRange, bool) {
	if lo < 1 || lo > 65535 || hi < lo {
		return allPorts, s == liveSide
	}
	if hi > 65535 {
		hi = 65535
	}
	return portRange{lo, hi}, true
}
