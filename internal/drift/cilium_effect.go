package drift

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// Cilium's policies are read as unstructured objects (the CRDs may be
// absent, and Paddock does not depend on Cilium's API types) and normalised
// into the same rules as NetworkPolicies, so one analysis judges both.

// Labels Cilium gives every endpoint for its namespace: its name, and each
// namespace label under a prefix.
const (
	ciliumNamespaceKey         = "io.kubernetes.pod.namespace"
	ciliumNamespaceLabelPrefix = "io.cilium.k8s.namespace.labels."
)

// ciliumScope is where a Cilium policy is judged: the namespace a
// CiliumNetworkPolicy lives in, or for a CiliumClusterwideNetworkPolicy the
// tenant namespace whose pods it may select.
type ciliumScope struct {
	namespace   string
	clusterwide bool
	// nsLabels are the namespace's live labels (nil when not known): a
	// clusterwide policy's endpoint selector may select by them.
	nsLabels labels.Set
}

// rawReq is one requirement of a Cilium label selector, key as written.
type rawReq struct {
	key  string
	op   selection.Operator
	vals []string
}

// ciliumSelector reads matchLabels and matchExpressions; ok is false when
// the value is not a selector. An absent selector (nil) is the empty one,
// which selects everything.
func ciliumSelector(v any) (reqs []rawReq, ok bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, v == nil
	}
	ml, _ := m["matchLabels"].(map[string]any)
	for _, k := range sortedKeys(ml) {
		s, isStr := ml[k].(string)
		if !isStr {
			return nil, false
		}
		reqs = append(reqs, rawReq{k, selection.Equals, []string{s}})
	}
	for _, e := range asSlice(m["matchExpressions"]) {
		em, _ := e.(map[string]any)
		key, _ := em["key"].(string)
		var op selection.Operator
		switch em["operator"] {
		case "In":
			op = selection.In
		case "NotIn":
			op = selection.NotIn
		case "Exists":
			op = selection.Exists
		case "DoesNotExist":
			op = selection.DoesNotExist
		default:
			return nil, false
		}
		var vals []string
		for _, x := range asSlice(em["values"]) {
			s, isStr := x.(string)
			if !isStr {
				return nil, false
			}
			vals = append(vals, s)
		}
		reqs = append(reqs, rawReq{key, op, vals})
	}
	return reqs, true
}

// ciliumKey strips the label source Cilium lets a key carry. k8s and any
// both match the pod's Kubernetes labels; source is "" for those.
func ciliumKey(k string) (source, key string) {
	if i := strings.Index(k, ":"); i >= 0 {
		switch src := k[:i]; src {
		case "k8s", "any":
			return "", k[i+1:]
		default:
			return src, k[i+1:]
		}
	}
	return "", k
}

// endpointSelection is a Cilium endpoint selector split into what it asks
// of the namespace and of the pod.
type endpointSelection struct {
	namespaces, pods labelSet
	namespaced       bool     // it says something about the namespace
	entities         []string // reserved:X labels: Cilium entities, not pods
	foreign          bool     // a label source Paddock does not read
	unreadable       bool
}

func readEndpointSelector(v any, s side) endpointSelection {
	var out endpointSelection
	raw, ok := ciliumSelector(v)
	if !ok {
		out.unreadable = true
		if s == liveSide {
			return out
		}
		out.namespaces, out.pods = labelSet{none: true}, labelSet{none: true}
		return out
	}
	add := func(set *labelSet, key string, r rawReq) {
		if set.none {
			return
		}
		req, err := labels.NewRequirement(key, r.op, r.vals)
		if err != nil {
			if s == declaredSide {
				*set = labelSet{none: true}
			}
			// live: a requirement the API would refuse is ignored, which
			// only widens what the selector is taken to select.
			return
		}
		set.reqs = append(set.reqs, *req)
	}
	for _, r := range raw {
		src, key := ciliumKey(r.key)
		switch {
		case src == "reserved":
			out.entities = append(out.entities, key)
		case src != "":
			out.foreign = true
		case key == ciliumNamespaceKey:
			out.namespaced = true
			add(&out.namespaces, namespaceNameLabel, r)
		case strings.HasPrefix(key, ciliumNamespaceLabelPrefix):
			out.namespaced = true
			add(&out.namespaces, strings.TrimPrefix(key, ciliumNamespaceLabelPrefix), r)
		default:
			add(&out.pods, key, r)
		}
	}
	sortReqs(&out.namespaces)
	sortReqs(&out.pods)
	return out
}

func sortReqs(l *labelSet) {
	sort.SliceStable(l.reqs, func(i, j int) bool { return l.reqs[i].Key() < l.reqs[j].Key() })
}

// peer is the selection as a rule's peer in scope sc.
func (e endpointSelection) peer(sc ciliumScope, s side) peerSet {
	var out peerSet
	if e.unreadable && s == liveSide {
		out.opaque = append(out.opaque, "endpoints chosen by an unreadable selector")
		return out
	}
	for _, ent := range e.entities {
		out.add(entityPeer(ent))
	}
	if len(e.entities) > 0 {
		return out
	}
	if e.foreign && s == declaredSide {
		return out
	}
	pp := podPeer{namespaces: e.namespaces, pods: e.pods}
	if !e.namespaced && !sc.clusterwide {
		// A namespaced policy's endpoint selectors stay in its namespace
		// unless they name one.
		pp.namespaces = requirement(namespaceNameLabel, selection.In, []string{sc.namespace}, s)
	}
	out.pods = append(out.pods, pp)
	return out
}

// entityPeer is one Cilium entity. The world entities are address ranges
// (taking them as every address only widens them); the others are named.
func entityPeer(name string) peerSet {
	v4, v6 := prefixSet(netip.MustParsePrefix("0.0.0.0/0")), prefixSet(netip.MustParsePrefix("::/0"))
	switch name {
	case "all":
		return peerSet{any: true}
	case "world":
		return peerSet{ips: v4.union(v6)}
	case "world-ipv4":
		return peerSet{ips: v4}
	case "world-ipv6":
		return peerSet{ips: v6}
	}
	return peerSet{opaque: []string{"Cilium entity " + name}}
}

// ciliumEffect normalises one Cilium policy (spec and specs) in scope sc.
// applies is false when a clusterwide policy cannot select pods of sc's
// namespace.
func ciliumEffect(obj map[string]any, sc ciliumScope, s side) (e netEffect, applies bool) {
	var specs []any
	if sp, ok := obj["spec"].(map[string]any); ok {
		specs = append(specs, sp)
	}
	specs = append(specs, asSlice(obj["specs"])...)
	for i, v := range specs {
		sp, ok := v.(map[string]any)
		if !ok {
			continue
		}
		if _, host := sp["nodeSelector"]; host {
			continue // a host policy: it selects nodes, not the tenant's pods
		}
		sel := readEndpointSelector(sp["endpointSelector"], s)
		if sc.clusterwide && !sel.unreadable && sel.namespaced && sc.nsLabels != nil {
			if !labels.NewSelector().Add(sel.namespaces.reqs...).Matches(sc.nsLabels) {
				continue
			}
		}
		if len(sel.entities) > 0 {
			continue // selects Cilium entities (the host, ...), not pods
		}
		applies = true
		target := sel.pods
		if sel.unreadable && s == liveSide {
			target = everything
		}
		prefix := ""
		if len(specs) > 1 {
			prefix = fmt.Sprintf("specs[%d].", i)
		}
		for _, d := range []direction{ingress, egress} {
			list, present := sp[string(d)]
			deny, denied := sp[string(d)+"Deny"]
			if (present && len(asSlice(list)) > 0) || (denied && len(asSlice(deny)) > 0) {
				e.isolate(d, target)
			}
			for j, r := range asSlice(list) {
				rm, ok := r.(map[string]any)
				if !ok {
					continue
				}
				peers, ports, allows := ciliumRule(rm, d, sc, s)
				if !allows {
					continue
				}
				e.rules = append(e.rules, netRule{dir: d, target: target, peers: peers, ports: ports, where: fmt.Sprintf("%s%s[%d]", prefix, d, j)})
			}
		}
	}
	return e, applies
}

// Fields of a Cilium rule that choose peers, by direction; the others only
// narrow a rule (toRequires, authentication, L7 rules inside toPorts) or
// choose its ports.
var ciliumPeerFields = map[direction][]string{
	egress:  {"toEndpoints", "toCIDR", "toCIDRSet", "toEntities", "toServices", "toFQDNs", "toGroups", "toNodes"},
	ingress: {"fromEndpoints", "fromCIDR", "fromCIDRSet", "fromEntities", "fromGroups", "fromNodes"},
}

var ciliumNarrowingFields = map[string]bool{
	"toPorts": true, "icmps": true, "toRequires": true, "fromRequires": true, "authentication": true,
}

// ciliumRule reads one rule. A rule with no peer field and no ports allows
// nothing (Cilium's way of turning on default deny); with ports only, it
// allows every peer on them.
func ciliumRule(r map[string]any, d direction, sc ciliumScope, s side) (peers peerSet, ports portSet, allows bool) {
	known := map[string]bool{}
	l3 := false
	for _, f := range ciliumPeerFields[d] {
		known[f] = true
		items := asSlice(r[f])
		if len(items) == 0 {
			continue
		}
		l3 = true
		for _, it := range items {
			peers.add(ciliumPeer(f, it, sc, s))
		}
	}
	for _, k := range sortedKeys(r) {
		if !known[k] && !ciliumNarrowingFields[k] && s == liveSide {
			// A field of a newer Cilium: what it allows is unknown.
			peers.opaque = append(peers.opaque, "peers of field "+k+", which Paddock does not read")
			l3 = true
		}
	}
	ports, hasPorts := ciliumPorts(r, s)
	if !l3 {
		if !hasPorts {
			return peers, ports, false
		}
		peers.any = true
	}
	return peers, ports, true
}

func ciliumPeer(field string, it any, sc ciliumScope, s side) peerSet {
	switch field {
	case "toEndpoints", "fromEndpoints":
		return readEndpointSelector(it, s).peer(sc, s)
	case "toEntities", "fromEntities":
		name, _ := it.(string)
		return entityPeer(name)
	case "toCIDR", "fromCIDR":
		c, _ := it.(string)
		return cidrPeer(c, nil, s)
	case "toCIDRSet", "fromCIDRSet":
		m, _ := it.(map[string]any)
		if c, ok := m["cidr"].(string); ok {
			var except []string
			for _, e := range asSlice(m["except"]) {
				if es, ok := e.(string); ok {
					except = append(except, es)
				}
			}
			return cidrPeer(c, except, s)
		}
		if ref, ok := m["cidrGroupRef"].(string); ok {
			return opaquePeer("CIDR group "+ref, s)
		}
		return opaquePeer("CIDR groups chosen by a selector", s)
	case "toFQDNs":
		m, _ := it.(map[string]any)
		if n, ok := m["matchName"].(string); ok && n != "" {
			return peerSet{fqdns: []fqdnMatch{{value: n}}}
		}
		if p, ok := m["matchPattern"].(string); ok && p != "" {
			return peerSet{fqdns: []fqdnMatch{{value: p, pattern: strings.Contains(p, "*")}}}
		}
		return opaquePeer("an unreadable toFQDNs entry", s)
	case "toServices":
		return opaquePeer("Kubernetes services ("+describeValue(it)+")", s)
	case "toNodes", "fromNodes":
		return opaquePeer("nodes ("+describeValue(it)+")", s)
	}
	return opaquePeer(field+" ("+describeValue(it)+")", s)
}

func opaquePeer(what string, s side) peerSet {
	if s == declaredSide {
		return peerSet{}
	}
	return peerSet{opaque: []string{what}}
}

// cidrPeer reads a CIDR (or a bare address) minus excepts.
func cidrPeer(c string, except []string, s side) peerSet {
	set, err := parseCIDRSet(c, except)
	if err != nil {
		if a, aerr := netip.ParseAddr(strings.TrimSpace(c)); aerr == nil {
			set, err = parseCIDRSet(netip.PrefixFrom(a, a.BitLen()).String(), except)
		}
	}
	if err != nil {
		if s == declaredSide {
			return peerSet{}
		}
		return peerSet{opaque: []string{fmt.Sprintf("an unreadable CIDR (%v), which the enforcer may read as any address", err)}}
	}
	return peerSet{ips: set}
}

// ciliumPorts reads toPorts and icmps; has is false when the rule names no
// ports (then it allows every protocol and port).
func ciliumPorts(r map[string]any, s side) (out portSet, has bool) {
	toPorts, icmps := asSlice(r["toPorts"]), asSlice(r["icmps"])
	if len(toPorts) == 0 && len(icmps) == 0 {
		out.any = true
		return out, false
	}
	for _, pr := range toPorts {
		pm, _ := pr.(map[string]any)
		list := asSlice(pm["ports"])
		if len(list) == 0 {
			out.any = true
			continue
		}
		for _, p := range list {
			m, _ := p.(map[string]any)
			proto, _ := m["protocol"].(string)
			protos := []string{strings.ToUpper(proto)}
			if proto == "" || strings.EqualFold(proto, "ANY") {
				protos = []string{"TCP", "UDP", "SCTP"}
			}
			port := strings.TrimSpace(fmt.Sprint(orEmpty(m["port"])))
			for _, pt := range protos {
				switch n, err := strconv.Atoi(port); {
				case port == "" || (err == nil && n == 0):
					out.addRange(pt, allPorts)
				case err != nil:
					out.addNamed(pt, port)
				default:
					end := int32(n)
					if e, ok := asInt(m["endPort"]); ok && e > 0 {
						end = int32(e)
					}
					if r, ok := clampPorts(int32(n), end, s); ok {
						out.addRange(pt, r)
					}
				}
			}
		}
	}
	for _, ic := range icmps {
		fams := map[string]bool{}
		for _, f := range asSlice(asMap(ic)["fields"]) {
			fam, _ := asMap(f)["family"].(string)
			if strings.EqualFold(fam, "IPv6") {
				fams["ICMPV6"] = true
			} else {
				fams["ICMP"] = true
			}
		}
		if len(fams) == 0 {
			fams["ICMP"] = true
		}
		for _, f := range sortedKeys(fams) {
			out.addRange(f, allPorts)
		}
	}
	return out, true
}

// gkeFQDNEffect normalises GKE's FQDNNetworkPolicy (networking.gke.io):
// egress to the names matched, on the ports listed (every port when none).
func gkeFQDNEffect(obj map[string]any, s side) netEffect {
	var e netEffect
	spec := asMap(obj["spec"])
	var target labelSet
	if raw, ok := ciliumSelector(spec["podSelector"]); ok {
		for _, r := range raw {
			req, err := labels.NewRequirement(r.key, r.op, r.vals)
			if err == nil {
				target.reqs = append(target.reqs, *req)
			} else if s == declaredSide {
				target = labelSet{none: true}
				break
			}
		}
		sortReqs(&target)
	} else if s == declaredSide {
		target = labelSet{none: true}
	}
	rules := asSlice(spec["egress"])
	if len(rules) > 0 {
		e.isolate(egress, target)
	}
	for i, r := range rules {
		rm := asMap(r)
		var peers peerSet
		for _, mv := range asSlice(rm["matches"]) {
			m := asMap(mv)
			if n, ok := m["name"].(string); ok && n != "" {
				peers.fqdns = append(peers.fqdns, fqdnMatch{value: n})
			} else if p, ok := m["pattern"].(string); ok && p != "" {
				peers.fqdns = append(peers.fqdns, fqdnMatch{value: p, pattern: true})
			} else {
				peers.add(opaquePeer("an unreadable FQDN match", s))
			}
		}
		if peers.empty() {
			if s == declaredSide {
				continue
			}
			peers.any = true
		}
		var ports portSet
		if list := asSlice(rm["ports"]); len(list) == 0 {
			ports.any = true
		} else {
			for _, p := range list {
				m := asMap(p)
				proto, _ := m["protocol"].(string)
				if proto == "" {
					proto = "TCP"
				}
				if n, ok := asInt(m["port"]); ok {
					if r, ok := clampPorts(int32(n), int32(n), s); ok {
						ports.addRange(strings.ToUpper(proto), r)
					}
				} else {
					ports.addRange(strings.ToUpper(proto), allPorts)
				}
			}
		}
		e.rules = append(e.rules, netRule{dir: egress, target: target, peers: peers, ports: ports, where: fmt.Sprintf("egress[%d]", i)})
	}
	return e
}

// Reading unstructured values without trusting their shape.

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func orEmpty(v any) any {
	if v == nil {
		return ""
	}
	return v
}

func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int32:
		return int64(n), true
	case float64:
		return int64(n), n == float64(int64(n))
	case string:
		i, err := strconv.ParseInt(n, 10, 32)
		return i, err == nil
	}
	return 0, false
}

// describeValue renders a small unstructured value for a report line.
func describeValue(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}
