package schemas

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/paddock-platform/paddock/internal/model"
)

// Building the tenants: quota, limits, identities, egress, claims.

// tenants builds every tenant block, stamping one tenant per for_each element.
func (b *builder) tenants(tenants []*node) {
	namespaces := map[string]hcl.Range{}
	names := map[string]hcl.Range{}
	for _, tn := range tenants {
		if tn.attr(argForEach) == nil {
			names[tn.Label] = tn.LabelRange
		}
	}
	// full reports, once, a tenant past MaxTenants at at.
	reported := false
	full := func(at hcl.Range, how string) bool {
		if len(b.p.Tenants) < MaxTenants {
			return false
		}
		if !reported {
			reported = true
			b.errorf(at, "Too many tenants",
				"%s makes tenant number %d; a platform has at most %d tenants, however they are written (tenant blocks and for_each together). Split the tenants over several platforms (each its own stack).",
				how, MaxTenants+1, MaxTenants)
		}
		return true
	}
	for _, tn := range tenants {
		fe := tn.attr(argForEach)
		if fe == nil {
			if full(tn.DefRange, fmt.Sprintf("The tenant block %q", tn.Label)) {
				continue
			}
			b.p.Tenants = append(b.p.Tenants, b.tenant(tn, tn.Label, namespaces))
			continue
		}
		for _, inst := range b.forEach(fe) {
			if full(fe.Expr.Range(), "for_each") {
				break
			}
			if problem := dnsLabelProblem(inst.key); problem != "" {
				b.errorf(fe.Expr.Range(), "Invalid tenant name",
					"The for_each key %q names a tenant, but it %s It names Kubernetes objects, so it must be a DNS-1123 label.%s",
					inst.key, problem, suggestLabelSentence(inst.key))
				continue
			}
			if first, dup := names[inst.key]; dup {
				b.errorf(fe.Expr.Range(), fmt.Sprintf("Duplicate tenant %q", inst.key),
					"for_each makes a tenant named %q, but one was already declared at %s. Names must be unique across all files of the spec: rename or remove one of them.",
					inst.key, pos(first))
				continue
			}
			names[inst.key] = fe.Expr.Range()
			outer := b.ctx
			b.ctx = outer.NewChild()
			b.ctx.Variables = map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{
				"key": cty.StringVal(inst.key), "value": inst.value,
			})}
			b.p.Tenants = append(b.p.Tenants, b.tenant(tn, inst.key, namespaces))
			b.ctx = outer
		}
	}
}

// instance is one element of a for_each.
type instance struct {
	key   string
	value cty.Value
}

// forEach evaluates a for_each: a map or object (each.key is the key), or a
// set, list or tuple of strings (each.key and each.value are the string).
func (b *builder) forEach(attr *hcl.Attribute) []instance {
	val, diags := attr.Expr.Value(b.ctx)
	b.refine(diags)
	b.diags = append(b.diags, diags...)
	if diags.HasErrors() {
		return nil
	}
	if val.HasMark(brokenMark) || val.ContainsMarked() && hasMarkDeep(val, brokenMark) {
		return nil
	}
	if hasMarkDeep(val, sensitiveMark) {
		b.errorf(attr.Expr.Range(), "Sensitive for_each",
			"for_each uses a sensitive value, but its keys name tenants, which appear in every report and object. Use a value that is not sensitive.")
		return nil
	}
	val, _ = val.UnmarkDeep()
	bad := func(why string) []instance {
		b.errorf(attr.Expr.Range(), "Invalid for_each", "%s for_each takes a map (one tenant per key) or a set or list of strings (one tenant per string), such as toset([\"team-a\", \"team-b\"]).", why)
		return nil
	}
	switch {
	case val.IsNull():
		return bad("for_each is null.")
	case !val.IsWhollyKnown():
		return bad("for_each is not known at load time.")
	}
	ty := val.Type()
	var out []instance
	switch {
	case ty.IsMapType() || ty.IsObjectType():
		for it := val.ElementIterator(); it.Next(); {
			k, v := it.Element()
			out = append(out, instance{key: k.AsString(), value: v})
		}
	case ty.IsSetType() || ty.IsListType() || ty.IsTupleType():
		seen := map[string]bool{}
		for it := val.ElementIterator(); it.Next(); {
			_, v := it.Element()
			if v.IsNull() || !v.Type().Equals(cty.String) {
				if conv, err := convertString(v); err == nil {
					v = conv
				} else {
					return bad("Every element of for_each must be a string.")
				}
			}
			s := v.AsString()
			if seen[s] {
				b.errorf(attr.Expr.Range(), "Duplicate for_each element", "%q appears twice in for_each; each element makes one tenant.", s)
				continue
			}
			seen[s] = true
			out = append(out, instance{key: s, value: v})
		}
	default:
		return bad(fmt.Sprintf("for_each is %s.", ty.FriendlyName()))
	}
	if len(out) > MaxTenants {
		b.errorf(attr.Expr.Range(), "Too many tenants", "for_each makes %d tenants; a platform has at most %d tenants, however they are written (tenant blocks and for_each together). Split the tenants over several platforms (each its own stack).", len(out), MaxTenants)
		return nil
	}
	return out
}

// convertString converts a for_each key or value to a string (strings and
// numbers only).
func convertString(v cty.Value) (cty.Value, error) {
	if v.IsNull() {
		return cty.NilVal, fmt.Errorf("null")
	}
	switch v.Type() {
	case cty.String:
		return v, nil
	case cty.Number:
		if hugeNumber(v) {
			return cty.NilVal, fmt.Errorf("number out of range")
		}
		return cty.StringVal(v.AsBigFloat().Text('f', -1)), nil
	}
	return cty.NilVal, fmt.Errorf("not a string")
}

// hasMarkDeep reports whether v or any value inside it carries mark.
func hasMarkDeep(v cty.Value, mark valueMark) bool {
	_, marks := v.UnmarkDeep()
	_, ok := marks[mark]
	return ok
}

// tenant builds a tenant block onto model.DefaultTenant: its namespace
// (unique across tenants) and its quota, limits, identity, egress, claims,
// templates and warm pools.
func (b *builder) tenant(tc *node, name string, namespaces map[string]hcl.Range) model.Tenant {
	t := model.DefaultTenant(name)
	t.Src, t.Attrs = tc.src(), tc.attrs()
	ns, st := b.str(tc.attr(argNamespace))
	nsRange := tc.LabelRange
	switch st {
	case set:
		nsRange = tc.attr(argNamespace).Expr.Range()
		b.checkLabel(tc.attr(argNamespace), ns, "namespace")
	case unset:
		ns = model.DefaultNamespacePrefix + name
		// Only worth saying when the tenant name itself is valid (otherwise
		// the name already has its own diagnostic).
		if dnsLabelProblem(name) == "" && dnsLabelProblem(ns) != "" {
			b.errorf(tc.LabelRange, "Invalid namespace",
				"The default namespace of tenant %q, %q, %s Set namespace explicitly, or shorten the tenant name.", name, ns, dnsLabelProblem(ns))
		}
	}
	if st != invalid {
		if first, dup := namespaces[ns]; dup {
			b.errorf(nsRange, "Namespace shared by two tenants",
				"Namespace %q is already used by the tenant declared at %s. A tenant is a trust boundary with a namespace of its own: set a different namespace. (Policy rule PDK-107.)",
				ns, pos(first))
		} else {
			namespaces[ns] = tc.DefRange
		}
	}
	t.Namespace = ns
	if v, st := b.str(tc.attr(argPodSecurity)); st == set && v == "privileged" {
		// Privileged enforces nothing: the namespace would lose the one fence
		// that holds whoever writes its pods.
		b.errorf(tc.attr(argPodSecurity).Expr.Range(), "Pod Security privileged refused",
			"pod_security = \"privileged\" turns Pod Security admission off for namespace %q: any pod, privileged or on the host's namespaces, would be admitted. Use \"restricted\" (the default), or \"baseline\" with a waiver of PDK-101 that says why.", t.Namespace)
	} else if v, st := b.enum(tc.attr(argPodSecurity), podSecurityLevels, "Pod Security level"); st == set {
		t.PodSecurity = v
	}
	t.Quota = b.quota(tc.one(blockQuota), t.Quota)
	t.LimitRange = b.limitRange(tc.one(blockLimitRange), t.LimitRange)
	t.Identity = b.identity(tc.one(blockIdentity), name, t.Identity)
	t.Egress = b.egress(tc.one(blockEgress), t.Egress)
	t.EgressGateway = b.egressGateway(tc.one(blockEgressGateway), name)
	t.Claims = b.claims(tc.one(blockClaims), t.Claims)

	var templates []string
	for _, tpl := range tc.all(blockTemplate) {
		templates = append(templates, tpl.Label)
		t.Templates = append(t.Templates, b.template(tpl))
	}
	for _, wp := range tc.all(blockWarmPool) {
		t.WarmPools = append(t.WarmPools, b.warmPool(tc, name, wp, templates))
	}
	return t
}

// quota builds a tenant's quota block onto the defaults q.
func (b *builder) quota(n *node, q model.Quota) model.Quota {
	if n == nil {
		return q
	}
	q.Src, q.Attrs = n.src(), n.attrs()
	if v, st := b.integer(n.attr(argPods), 0, maxCount); st == set {
		q.Pods = int32(v)
	}
	if v, st := b.integer(n.attr(argPvcs), 0, maxCount); st == set {
		q.PersistentVolumeClaims = int32(v)
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"cpu", &q.LimitsCPU}, {"memory", &q.LimitsMemory}, {"ephemeral_storage", &q.LimitsEphemeralStorage}, {"storage", &q.RequestsStorage}} {
		if s, st := b.str(n.attr(f.name)); st == set {
			if _, ok := b.quantity(n.attr(f.name).Expr.Range(), "quota "+f.name, s); ok {
				*f.dst = s
			}
		}
	}
	if v, st := b.boolean(n.attr(argEnabled)); st == set {
		q.Disabled = !v
	}
	return q
}

// limitRange builds a tenant's limit_range block onto the defaults lr.
func (b *builder) limitRange(n *node, lr model.LimitRange) model.LimitRange {
	if n == nil {
		return lr
	}
	lr.Src, lr.Attrs = n.src(), n.attrs()
	var r model.Resources
	def, dok := b.resourceMap(n.attr(argDefault), resourceKeys)
	req, rok := b.resourceMap(n.attr(argDefaultRequest), resourceKeys)
	fields := resourceFields(&r)
	for key, s := range req {
		*fields[key][0] = s.Value
	}
	for key, s := range def {
		*fields[key][1] = s.Value
	}
	r.ApplyResourceDefaults()
	if dok && rok {
		b.checkRequestsWithinLimits(req, def, fields, "default_request", "default")
	}
	lr.Defaults = r
	if v, st := b.boolean(n.attr(argEnabled)); st == set {
		lr.Disabled = !v
	}
	return lr
}

// identity builds a tenant's identity block onto the defaults id: the
// orchestrator and the workload identities.
func (b *builder) identity(n *node, tenant string, id model.Identity) model.Identity {
	if n == nil {
		return id
	}
	id.Src, id.Attrs = n.src(), n.attrs()
	if v, st := b.boolean(n.attr(argOrchestrator)); st == set {
		id.Orchestrator = v
	}
	for _, wn := range n.all(blockWorkloadIdentity) {
		if wi, ok := b.workloadIdentity(n, wn, tenant, id.Orchestrator); ok {
			id.WorkloadIdentities = append(id.WorkloadIdentities, wi)
		}
	}
	if tn := n.one(blockToolGatewayToken); tn != nil {
		tok := &model.ProjectedToken{
			Audience: model.DefaultToolGatewayAudience, Expiration: model.DefaultToolGatewayExpiration,
			MountPath: model.DefaultToolGatewayMountPath, Src: tn.src(), Attrs: tn.attrs(),
		}
		if v, st := b.str(tn.attr(argAudience)); st == set {
			if strings.TrimSpace(v) == "" {
				b.errorf(tn.attr(argAudience).Expr.Range(), "Invalid audience", "audience is empty. Name the one service that accepts the token, such as %q.", model.DefaultToolGatewayAudience)
			}
			tok.Audience = v
		}
		if d, st := b.duration(tn.attr(argExpiration), minTokenLife, maxTokenLife, false); st == set {
			tok.Expiration = d
		}
		if v, st := b.str(tn.attr(argPath)); st == set {
			b.mountPath(tn.attr(argPath), v)
			tok.MountPath = v
		}
		id.ToolGatewayToken = tok
	}
	return id
}

// workloadIdentityKSA maps a workload_identity label to the Kubernetes
// service account it binds.
var workloadIdentityKSA = map[string]string{
	wiOrchestrator: model.AgentOrchestratorServiceAccount,
	wiAgent:        model.AgentRuntimeServiceAccount,
}

var (
	// iamRoleRe is an IAM role name: predefined, or custom of a project or
	// an organization.
	iamRoleRe = regexp.MustCompile(`^(roles/[A-Za-z0-9_.]+|(projects|organizations)/[^/\s]+/roles/[A-Za-z0-9_.]+)$`)
	// basicRoles grant (or read) nearly everything in a project.
	basicRoles = []string{"roles/owner", "roles/editor", "roles/viewer"}
)

// workloadIdentity builds one workload_identity block of tenant's identity
// block idn. What GKE itself needs (the cluster's workload pool, roles that
// hand out keys or impersonation) is checked by policy (GCP-005, GCP-014).
func (b *builder) workloadIdentity(idn, wn *node, tenant string, orchestrator bool) (model.WorkloadIdentity, bool) {
	ksa, known := workloadIdentityKSA[wn.Label]
	if !known {
		return model.WorkloadIdentity{}, false // the decoder reported the label
	}
	wi := model.WorkloadIdentity{ServiceAccount: ksa, Src: wn.src(), Attrs: wn.attrs()}
	ok := true
	if kind := b.p.Target.Kind; kind != "" && kind != model.TargetGKE {
		b.errorf(wn.DefRange, "workload_identity needs target \"gke\"",
			"GKE Workload Identity binds a Kubernetes service account to a Google service account on a GKE cluster Paddock creates, but this spec's target is %q. Remove the workload_identity block and give the workload its cloud access another way (never a key file), or use target \"gke\".", kind)
		ok = false
	}
	if ksa == model.AgentOrchestratorServiceAccount && !orchestrator {
		at := idn.DefRange
		if a := idn.attr(argOrchestrator); a != nil {
			at = a.Range
		}
		b.errorf(wn.LabelRange, "No orchestrator identity to bind",
			"Tenant %q turns the agent-orchestrator service account off (orchestrator = false at %s), so there is nothing to give cloud access to. Remove this workload_identity block, or set orchestrator = true.", tenant, pos(at))
		ok = false
	}
	roles, st := b.strList(wn.attr(argRoles))
	if b.required(st, wn.attr(argRoles), wn.blockMeta, argRoles, "the roles it grants", `roles = ["roles/storage.objectViewer"]`) != set {
		return wi, false
	}
	at := wn.attr(argRoles).Expr.Range()
	if len(roles) == 0 {
		b.errorf(at, "No roles", "roles is empty. A service account that needs no cloud access needs no workload identity: remove the block, or list the roles it needs, such as [\"roles/storage.objectViewer\"].")
		ok = false
	}
	seen := map[string]bool{}
	for _, r := range roles {
		switch {
		case slices.Contains(basicRoles, r):
			b.errorf(at, "Basic role refused",
				"%s is a basic role: it grants nearly everything in the project to %s of tenant %q. List the predefined roles the workload needs instead, such as \"roles/storage.objectViewer\" or \"roles/aiplatform.user\".", r, ksa, tenant)
			ok = false
		case !iamRoleRe.MatchString(r):
			b.errorf(at, "Invalid IAM role",
				"%q is not an IAM role. Write a predefined role as \"roles/<name>\" (such as \"roles/storage.objectViewer\"), or a custom one as \"projects/<project>/roles/<name>\" or \"organizations/<org>/roles/<name>\".", r)
			ok = false
		case seen[r]:
			b.errorf(at, "Duplicate role", "%s is listed twice. List each role once.", r)
			ok = false
		}
		seen[r] = true
	}
	wi.Roles = roles
	return wi, ok
}

// mountPath reports a mount path that is not absolute and clean.
func (b *builder) mountPath(attr *hcl.Attribute, p string) bool {
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "/" {
		b.errorf(attr.Expr.Range(), "Invalid mount path",
			"%q is not a mount path: write a clean absolute directory other than \"/\", such as \"/workspace\".", p)
		return false
	}
	return true
}

var fqdnRe = regexp.MustCompile(`^(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)

// egress builds a tenant's egress block onto the defaults eg: DNS, default
// deny, FQDN allow-lists, CIDR allows and the proxy.
func (b *builder) egress(n *node, eg model.Egress) model.Egress {
	if n == nil {
		return eg
	}
	eg.Src, eg.Attrs = n.src(), n.attrs()
	if v, st := b.boolean(n.attr(argDns)); st == set {
		eg.DNS = v
	}
	if v, st := b.boolean(n.attr(argDefaultDeny)); st == set {
		eg.Unrestricted = !v
	}
	if names, st := b.strList(n.attr(argFqdns)); st == set {
		for _, name := range names {
			switch {
			case !fqdnRe.MatchString(name):
				b.errorf(n.attr(argFqdns).Expr.Range(), "Invalid host name",
					"%q is not a host name such as \"api.example.com\" or \"*.example.com\" (lower case, no scheme, port or path).", name)
			case model.PublicSuffixWildcard(name):
				b.errorf(n.attr(argFqdns).Expr.Range(), "Wildcard over a public suffix",
					"%q matches every host under %q, a public suffix where anyone can register a name (the public suffix list), so an agent could reach hosts an attacker controls. List the hosts, or a wildcard under a domain you control such as \"*.example.com\". (Policy rule PDK-504.)",
					name, strings.TrimPrefix(name, "*."))
			}
		}
		eg.FQDNs = names
		if len(names) > 0 && b.p.Target.FQDNPolicy == model.FQDNPolicyNone {
			b.errorf(n.attr(argFqdns).Expr.Range(), "FQDN egress cannot be enforced on this target",
				"target %q declares no FQDN-aware CNI, so an allow-list by host name would be a comment, not a boundary. Set fqdn_policy = \"cilium\" on the target if the cluster runs Cilium, or remove fqdns and route egress through egress { proxy { ... } }.", b.p.Target.Kind)
		}
	}
	for _, an := range n.all(blockAllow) {
		a := model.EgressAllow{Protocol: "TCP", Src: an.src(), Attrs: an.attrs()}
		cidr, st := b.str(an.attr(argCidr))
		if b.required(st, an.attr(argCidr), an.blockMeta, argCidr, "the destination range", `cidr = "10.20.0.0/16"`) == set {
			b.cidr(an.attr(argCidr), cidr)
			a.CIDR = cidr
		}
		ports, st := b.intList(an.attr(argPorts), 1, 65535)
		if b.required(st, an.attr(argPorts), an.blockMeta, argPorts, "the destination ports", `ports = [443]`) == set {
			if len(ports) == 0 {
				b.errorf(an.attr(argPorts).Expr.Range(), "Invalid ports", "ports is empty. List the destination ports, such as [443]; an allow never opens every port.")
			}
			for _, p := range ports {
				a.Ports = append(a.Ports, int32(p))
			}
		}
		if v, st := b.enum(an.attr(argProtocol), protocols, "protocol"); st == set {
			a.Protocol = v
		}
		eg.Allows = append(eg.Allows, a)
	}
	if pn := n.one(blockProxy); pn != nil {
		eg.Proxy = b.proxy(pn)
	}
	return eg
}

// proxy builds an egress proxy block: its URL (scheme, host, port only).
func (b *builder) proxy(n *node) *model.EgressProxy {
	px := &model.EgressProxy{Src: n.src(), Attrs: n.attrs()}
	raw, st := b.str(n.attr(argUrl))
	if b.required(st, n.attr(argUrl), n.blockMeta, argUrl, "the proxy URL", `url = "http://squid.egress.svc.cluster.local:3128"`) == set {
		px.URL = raw
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || (u.Path != "" && u.Path != "/") || u.User != nil {
			b.errorf(n.attr(argUrl).Expr.Range(), "Invalid proxy URL",
				"%q is not a proxy URL such as \"http://squid.egress.svc.cluster.local:3128\": scheme http or https, a host, an optional port, no path and no credentials.", raw)
		} else {
			px.Host = u.Hostname()
			port := 80
			if u.Scheme == "https" {
				port = 443
			}
			if p := u.Port(); p != "" {
				port, _ = strconv.Atoi(p)
			}
			if port < 1 || port > 65535 {
				b.errorf(n.attr(argUrl).Expr.Range(), "Invalid proxy URL", "The port of %q is not between 1 and 65535.", raw)
			}
			px.Port = int32(port)
		}
	}
	ns, nsSt := b.str(n.attr(argNamespace))
	if nsSt == set {
		b.checkLabel(n.attr(argNamespace), ns, "namespace")
		px.Namespace = ns
	}
	cidr, cSt := b.str(n.attr(argCidr))
	if cSt == set {
		b.cidr(n.attr(argCidr), cidr)
		px.CIDR = cidr
	}
	if entries, st := b.strMap(n.attr(argPodLabels)); st == set {
		px.PodLabels = b.labels(entries, "pod label")
		if nsSt == unset {
			b.errorf(n.attr(argPodLabels).Expr.Range(), "pod_labels needs namespace", "pod_labels select the proxy pods within namespace; set namespace too.")
		}
	}
	switch {
	case nsSt == unset && cSt == unset:
		b.errorf(n.DefRange, "Missing required argument",
			"The proxy block needs where the proxy runs, so the NetworkPolicy can allow exactly it: namespace = \"egress\" for a proxy in the cluster, or cidr = \"10.0.0.5/32\" for one outside.")
	case nsSt == set && cSt == set:
		b.errorf(n.attr(argCidr).Expr.Range(), "Conflicting proxy location", "Set namespace (a proxy in the cluster) or cidr (one outside it), not both.")
	}
	return px
}

// claims builds a tenant's claims block onto the defaults c: TTLs and the
// shutdown policy.
func (b *builder) claims(n *node, c model.ClaimPolicy) model.ClaimPolicy {
	if n == nil {
		return c
	}
	c.Src, c.Attrs = n.src(), n.attrs()
	if d, st := b.duration(n.attr(argTtl), minClaimTTL, maxClaimTTL, true); st == set {
		c.TTL = d
	}
	if d, st := b.duration(n.attr(argMaxTtl), minSessionTTL, maxClaimTTL, true); st == set {
		c.MaxTTL = d
	}
	if v, st := b.enum(n.attr(argShutdownPolicy), shutdownPolicies, "shutdown policy"); st == set {
		c.ShutdownPolicy = v
	}
	return c
}
