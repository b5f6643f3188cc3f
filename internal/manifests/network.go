package manifests

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/paddock-platform/paddock/internal/model"
)

// Names of the per-tenant network objects.
const (
	DefaultDenyPolicy = "default-deny"
	AllowDNSPolicy    = "allow-dns"
	AllowEgressPolicy = "allow-egress"
	AllowProxyPolicy  = "allow-egress-proxy"
	AllowFQDNPolicy   = "allow-fqdn"
	// AllowMetadataServerPolicy lets sandboxes reach the GKE metadata server,
	// only when the agent runtime has a workload identity.
	AllowMetadataServerPolicy = "allow-gke-metadata-server"
)

// The Cilium policy resources: the namespaced kind of a tenant's FQDN
// allow-list, and the cluster-wide kind that can select a tenant's pods from
// outside its namespace.
var (
	CiliumNetworkPolicies            = schema.GroupVersionResource{Group: "cilium.io", Version: "v2", Resource: "ciliumnetworkpolicies"}
	CiliumClusterwideNetworkPolicies = schema.GroupVersionResource{Group: "cilium.io", Version: "v2", Resource: "ciliumclusterwidenetworkpolicies"}
)

func netpol(p *model.Platform, t model.Tenant, name string, spec networkingv1.NetworkPolicySpec) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: meta(name, t.Namespace, p.Labels(t.Name)),
		Spec:       spec,
	}
}

func port(proto string, n int32) networkingv1.NetworkPolicyPort {
	pr := corev1.Protocol(proto)
	if pr == "" {
		pr = corev1.ProtocolTCP
	}
	v := intstr.FromInt32(n)
	return networkingv1.NetworkPolicyPort{Protocol: &pr, Port: &v}
}

// DNSEgressRule reaches the cluster resolver and nothing else in kube-system.
func DNSEgressRule() networkingv1.NetworkPolicyEgressRule {
	return networkingv1.NetworkPolicyEgressRule{
		To: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
		}},
		Ports: []networkingv1.NetworkPolicyPort{port("UDP", 53), port("TCP", 53)},
	}
}

// cidrPeer allows a CIDR but never the metadata address inside it. The
// CIDR is read by model.ParseCIDR, the parser the decoder already checked it
// with.
func cidrPeer(cidr string) (networkingv1.NetworkPolicyPeer, error) {
	pfx, err := model.ParseCIDR(cidr)
	if err != nil {
		return networkingv1.NetworkPolicyPeer{}, fmt.Errorf("egress cidr %q: %w", cidr, err)
	}
	block := &networkingv1.IPBlock{CIDR: pfx.Masked().String()}
	// The cloud instance metadata address is excluded explicitly from every
	// CIDR allow that would contain it.
	if pfx.Contains(model.MetadataServerAddr) && pfx.Bits() < 32 {
		block.Except = []string{model.GKEMetadataServerCIDR}
	}
	return networkingv1.NetworkPolicyPeer{IPBlock: block}, nil
}

// Origin is the spec argument that opened an egress rule Paddock renders, so
// that policy, which judges the rendered rules, can point a finding at where
// the loosening came from.
type Origin struct {
	// Field names the argument in the spec's terms: "egress.allow",
	// "egress.proxy", "egress.fqdns", "egress.dns", "egress.default_deny",
	// "identity.workload_identity.agent".
	Field string
	Src   model.Range
	// Ports is where the rule's ports come from, when the spec sets them
	// apart from the destination (an allow's ports, a proxy's URL); else Src.
	Ports model.Range
}

// PortsSrc is where the rule's ports are set.
func (o Origin) PortsSrc() model.Range {
	if o.Ports.Known() {
		return o.Ports
	}
	return o.Src
}

// Origin fields.
const (
	OriginAllow       = "egress.allow"
	OriginProxy       = "egress.proxy"
	OriginFQDNs       = "egress.fqdns"
	OriginDNS         = "egress.dns"
	OriginDefaultDeny = "egress.default_deny"
	OriginAgentWI     = "identity.workload_identity.agent"
	// OriginOrchestratorWI opens the metadata server hole for the
	// orchestrator's own pods only (never a sandbox's).
	OriginOrchestratorWI = "identity.workload_identity.orchestrator"
)

// RuleRef names one egress rule of a rendered object: its kind, its
// "namespace/name" and its index in the object's egress list (for a
// SandboxTemplate, spec.networkPolicy.egress, or the controller's default
// policy when the template carries none: see ControllerDefaultEgress).
type RuleRef struct {
	Kind  string
	Name  string
	Index int
}

// originRule is an egress rule and where in the spec it comes from.
type originRule struct {
	rule   networkingv1.NetworkPolicyEgressRule
	origin Origin
}

// tenantRules are the tenant's egress rules by kind, each with its origin.
type tenantRules struct {
	dns      *originRule
	holes    []originRule // allow blocks, in spec order
	proxy    *originRule
	metadata *originRule
	gateway  *originRule // the sandboxes' rule to the tenant's egress gateway
}

func egressRules(p *model.Platform, t model.Tenant) (tenantRules, error) {
	var tr tenantRules
	// Where a CiliumNetworkPolicy carries the tenant's DNS rule (it lists FQDNs
	// on a Cilium target), no NetworkPolicy may allow DNS besides: Cilium
	// merges an L4-only allow of port 53 with the L7 rule into "any name", and
	// the resolver would answer names the tenant may not reach (measured on
	// the local Cilium node: the listed name and an unlisted one both resolved).
	if t.Egress.DNS && !ciliumCarriesDNS(p, t) {
		tr.dns = &originRule{DNSEgressRule(), Origin{Field: OriginDNS, Src: t.Egress.Attrs.At("dns", orSrc(t.Egress.Src, t.Src))}}
	}
	for _, a := range t.Egress.Allows {
		peer, err := cidrPeer(a.CIDR)
		if err != nil {
			return tr, fmt.Errorf("tenant %s: %w", t.Name, err)
		}
		r := networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{peer}}
		for _, n := range a.Ports {
			r.Ports = append(r.Ports, port(a.Protocol, n))
		}
		tr.holes = append(tr.holes, originRule{r, Origin{Field: OriginAllow, Src: a.Attrs.At("cidr", a.Src), Ports: a.Attrs.At("ports", a.Src)}})
	}
	if px := t.Egress.Proxy; px != nil {
		r, err := proxyRule(px)
		if err != nil {
			return tr, fmt.Errorf("tenant %s proxy: %w", t.Name, err)
		}
		at := px.Attrs.At("namespace", px.Src)
		if px.CIDR != "" {
			at = px.Attrs.At("cidr", px.Src)
		}
		tr.proxy = &originRule{r, Origin{Field: OriginProxy, Src: at, Ports: px.Attrs.At("url", px.Src)}}
	}
	if r, ok := metadataServerRule(p, t); ok {
		wi := t.Identity.WorkloadIdentity(model.AgentRuntimeServiceAccount)
		tr.metadata = &originRule{r, Origin{Field: OriginAgentWI, Src: wi.Src}}
	}
	if r, ok := gatewayRule(t); ok {
		tr.gateway = &r
	}
	return tr, nil
}

func orSrc(r, fallback model.Range) model.Range {
	if r.Known() {
		return r
	}
	return fallback
}

// proxyRule reaches the egress proxy, by pod selector or by CIDR.
func proxyRule(px *model.EgressProxy) (networkingv1.NetworkPolicyEgressRule, error) {
	r := networkingv1.NetworkPolicyEgressRule{Ports: []networkingv1.NetworkPolicyPort{port("TCP", px.Port)}}
	switch {
	case px.CIDR != "":
		peer, err := cidrPeer(px.CIDR)
		if err != nil {
			return r, err
		}
		r.To = []networkingv1.NetworkPolicyPeer{peer}
	default:
		peer := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: px.PodLabels}}
		if px.Namespace != "" {
			peer.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": px.Namespace}}
		}
		r.To = []networkingv1.NetworkPolicyPeer{peer}
	}
	return r, nil
}

// NetworkPolicies are the namespace's own posture: default-deny ingress and
// egress for every pod, then DNS to kube-dns only, the named CIDR/port holes and
// the egress proxy. Nothing allows ingress: sandboxes are reached through the
// orchestrator, never directly. Empty when the spec waives default-deny.
func NetworkPolicies(p *model.Platform, t model.Tenant) ([]*networkingv1.NetworkPolicy, error) {
	pols, _, err := networkPolicies(p, t)
	return pols, err
}

// networkPolicies is NetworkPolicies with the origin of every egress rule.
func networkPolicies(p *model.Platform, t model.Tenant) ([]*networkingv1.NetworkPolicy, map[RuleRef]Origin, error) {
	if t.Egress.Unrestricted {
		return nil, nil, nil
	}
	tr, err := egressRules(p, t)
	if err != nil {
		return nil, nil, err
	}
	all := metav1.LabelSelector{}
	out := []*networkingv1.NetworkPolicy{netpol(p, t, DefaultDenyPolicy, networkingv1.NetworkPolicySpec{
		PodSelector: all,
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
	})}
	origins := map[RuleRef]Origin{}
	// The sandboxes' holes select every pod but the egress gateway's (see
	// gateway.go); DNS is every pod's.
	sandboxes := sandboxSelector(t)
	egress := func(name string, rules ...originRule) {
		sel := sandboxes
		if name == AllowDNSPolicy {
			sel = all
		}
		np := netpol(p, t, name, networkingv1.NetworkPolicySpec{
			PodSelector: sel, PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
		})
		for i, r := range rules {
			np.Spec.Egress = append(np.Spec.Egress, r.rule)
			origins[RuleRef{Kind: "NetworkPolicy", Name: t.Namespace + "/" + name, Index: i}] = r.origin
		}
		out = append(out, np)
	}
	if tr.dns != nil {
		egress(AllowDNSPolicy, *tr.dns)
	}
	if len(tr.holes) > 0 {
		egress(AllowEgressPolicy, tr.holes...)
	}
	if tr.proxy != nil {
		egress(AllowProxyPolicy, *tr.proxy)
	}
	if tr.metadata != nil {
		egress(AllowMetadataServerPolicy, *tr.metadata)
	}
	if tr.gateway != nil {
		egress(AllowGatewayPolicy, *tr.gateway)
	}
	if np := orchestratorMetadataServerPolicy(p, t); np != nil {
		out = append(out, np)
		wi := t.Identity.WorkloadIdentity(model.AgentOrchestratorServiceAccount)
		origins[RuleRef{Kind: "NetworkPolicy", Name: t.Namespace + "/" + np.Name, Index: 0}] = Origin{Field: OriginOrchestratorWI, Src: wi.Src}
	}
	return out, origins, nil
}

// AllowOrchestratorMetadataServerPolicy lets the orchestrator's own pods reach
// the GKE metadata server when the orchestrator has a workload identity.
const AllowOrchestratorMetadataServerPolicy = "allow-gke-metadata-server-orchestrator"

// orchestratorMetadataServerPolicy is the metadata server hole (TCP 80 to
// 169.254.169.254/32) for the pods labelled IdentityLabel=agent-orchestrator
// only, so that an orchestrator with a workload identity can get its tokens
// under the tenant's default-deny. The label is bound to the orchestrator's
// service account by the tenant's orchestrator-identity guardrail: no pod
// running as anything else, no sandbox, template or claim may carry it. nil
// unless model.Platform.OrchestratorNeedsMetadataServer.
func orchestratorMetadataServerPolicy(p *model.Platform, t model.Tenant) *networkingv1.NetworkPolicy {
	if !p.OrchestratorNeedsMetadataServer(t) {
		return nil
	}
	return netpol(p, t, AllowOrchestratorMetadataServerPolicy, networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: OrchestratorPodLabels()},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
		Egress: []networkingv1.NetworkPolicyEgressRule{{
			To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: model.GKEMetadataServerCIDR}}},
			Ports: []networkingv1.NetworkPolicyPort{port(model.GKEMetadataServerProto, model.GKEMetadataServerPort)},
		}},
	})
}

// metadataServerRule is the one hole a workload identity of the agent needs
// on GKE Dataplane V2: TCP 80 to the GKE metadata server's 169.254.169.254/32
// and nothing else of link-local space (GKE documents exactly this for
// Workload Identity with network policy on Dataplane V2). With Workload
// Identity on, that address answers with the pod's own Google service
// account's tokens, never the node's. ok is false unless
// model.Platform.AgentNeedsMetadataServer.
func metadataServerRule(p *model.Platform, t model.Tenant) (networkingv1.NetworkPolicyEgressRule, bool) {
	if !p.AgentNeedsMetadataServer(t) {
		return networkingv1.NetworkPolicyEgressRule{}, false
	}
	return networkingv1.NetworkPolicyEgressRule{
		To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: model.GKEMetadataServerCIDR}}},
		Ports: []networkingv1.NetworkPolicyPort{port(model.GKEMetadataServerProto, model.GKEMetadataServerPort)},
	}, true
}

// FQDNPolicy is the tenant's host-name allow-list in the form the target's CNI
// enforces: a GKE FQDNNetworkPolicy on GKE Dataplane V2, else a
// CiliumNetworkPolicy (see ciliumFQDNPolicy). nil when the tenant lists no FQDNs.
func FQDNPolicy(p *model.Platform, t model.Tenant) *unstructured.Unstructured {
	if len(t.Egress.FQDNs) == 0 || t.Egress.Unrestricted {
		return nil
	}
	if p.Target.FQDNPolicy == model.FQDNPolicyGKE {
		return gkeFQDNPolicy(p, t)
	}
	return ciliumFQDNPolicy(p, t)
}

// ciliumCarriesDNS says whether the tenant's DNS rule is the one in its
// CiliumNetworkPolicy (ciliumFQDNPolicy) rather than a NetworkPolicy.
func ciliumCarriesDNS(p *model.Platform, t model.Tenant) bool {
	return len(t.Egress.FQDNs) > 0 && !t.Egress.Unrestricted && p.Target.FQDNPolicy != model.FQDNPolicyGKE
}

// gkeFQDNPolicy is GKE's FQDNNetworkPolicy (Dataplane V2): TCP 443 to exactly the
// listed names, for every pod of the namespace.
func gkeFQDNPolicy(p *model.Platform, t model.Tenant) *unstructured.Unstructured {
	names := append([]string(nil), t.Egress.FQDNs...)
	sort.Strings(names)
	var matches []any
	for _, n := range names {
		if strings.Contains(n, "*") {
			matches = append(matches, map[string]any{"pattern": n})
		} else {
			matches = append(matches, map[string]any{"name": n})
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.gke.io/v1alpha1",
		"kind":       "FQDNNetworkPolicy",
		"metadata":   map[string]any{"name": AllowFQDNPolicy, "namespace": t.Namespace, "labels": labelsAny(p, t)},
		"spec": map[string]any{
			"podSelector": map[string]any{},
			"egress": []any{map[string]any{
				"matches": matches,
				"ports":   []any{map[string]any{"protocol": "TCP", "port": int64(443)}},
			}},
		},
	}}
}

func labelsAny(p *model.Platform, t model.Tenant) map[string]any {
	out := map[string]any{}
	for k, v := range p.Labels(t.Name) {
		out[k] = v
	}
	return out
}

// ClusterDomain is the cluster's DNS domain (the kubelet's clusterDomain, on
// GKE and locally).
const ClusterDomain = "cluster.local"

// fqdnsCopy copies the name selectors, so the two rules share no map.
func fqdnsCopy(in []any) []any {
	out := make([]any, 0, len(in)+1)
	for _, v := range in {
		m := map[string]any{}
		for k, x := range v.(map[string]any) {
			m[k] = x
		}
		out = append(out, m)
	}
	return out
}

// ciliumFQDNPolicy is the tenant's host-name allow-list as a CiliumNetworkPolicy:
// TCP 443 to exactly those names, plus the DNS rule through Cilium's DNS proxy
// that makes FQDN policy work at all and answers only those names. nil when the
// tenant lists no FQDNs.
func ciliumFQDNPolicy(p *model.Platform, t model.Tenant) *unstructured.Unstructured {
	names := append([]string(nil), t.Egress.FQDNs...)
	sort.Strings(names)
	var fqdns []any
	for _, n := range names {
		if strings.Contains(n, "*") {
			fqdns = append(fqdns, map[string]any{"matchPattern": n})
		} else {
			fqdns = append(fqdns, map[string]any{"matchName": n})
		}
	}
	labels := labelsAny(p, t)
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": CiliumNetworkPolicies.GroupVersion().String(),
		"kind":       "CiliumNetworkPolicy",
		"metadata":   map[string]any{"name": AllowFQDNPolicy, "namespace": t.Namespace, "labels": labels},
		"spec": map[string]any{
			"endpointSelector": map[string]any{},
			"egress": []any{
				map[string]any{
					"toFQDNs": fqdns,
					"toPorts": []any{map[string]any{"ports": []any{map[string]any{"port": "443", "protocol": "TCP"}}}},
				},
				map[string]any{
					"toEndpoints": []any{map[string]any{"matchLabels": map[string]any{
						"k8s:io.kubernetes.pod.namespace": "kube-system",
						"k8s:k8s-app":                     "kube-dns",
					}}},
					"toPorts": []any{map[string]any{
						"ports": []any{
							map[string]any{"port": "53", "protocol": "UDP"},
							map[string]any{"port": "53", "protocol": "TCP"},
						},
						// Cilium learns name->IP mappings only for lookups its DNS
						// proxy sees, and its proxy refuses every name these rules do
						// not list: the resolver answers only the names the tenant may
						// reach, and the cluster domain (the search path's
						// candidates, which the cluster resolver answers itself and
						// never forwards), so a sandbox cannot use DNS as a channel
						// out.
						"rules": map[string]any{"dns": append(fqdnsCopy(fqdns), map[string]any{"matchPattern": "**." + ClusterDomain})},
					}},
				},
			},
		},
	}}
}
