package drift

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/paddock-platform/paddock/internal/model"
)

// This file judges RBAC by what a binding grants, not by who labelled it:
// the rules of the bound role, in the binding's scope, set against what the
// spec grants the identity and what every identity holds anyway.

// defaultGrants are what the API server's own default bindings give every
// authenticated user (system:discovery, system:basic-user,
// system:public-info-viewer) and every service account
// (system:service-account-issuer-discovery): discovery and health URLs, the
// service-account issuer's public documents, and reviews of one's own
// rights. Every tenant identity holds them whatever Paddock does, so a
// binding that grants no more than these opens nothing. This is the one
// place that set is written.
var defaultGrants = []rbacv1.PolicyRule{
	{Verbs: []string{"get"}, NonResourceURLs: []string{
		"/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*",
		"/healthz", "/livez", "/readyz", "/version", "/version/",
	}},
	{Verbs: []string{"get"}, NonResourceURLs: []string{
		"/.well-known/openid-configuration", "/.well-known/openid-configuration/",
		"/openid/v1/jwks", "/openid/v1/jwks/",
	}},
	{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews"}},
	{Verbs: []string{"create"}, APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"selfsubjectreviews"}},
}

// identity is one tenant service account the sweep guards.
type identity struct {
	tenant    string
	namespace string
	account   string
}

func (i identity) user() string {
	return "system:serviceaccount:" + i.namespace + ":" + i.account
}

// tenantIdentities are the identities of every tenant: agent-runtime, and
// agent-orchestrator whether or not the spec creates it (an account of that
// name made by hand holds whatever is bound to it).
func tenantIdentities(p *model.Platform) []identity {
	out := make([]identity, 0, 2*len(p.Tenants))
	for _, t := range p.Tenants {
		for _, sa := range []string{model.AgentRuntimeServiceAccount, model.AgentOrchestratorServiceAccount} {
			out = append(out, identity{tenant: t.Name, namespace: t.Namespace, account: sa})
		}
	}
	return out
}

// boundIdentities are the identities among ids that subjects include, each
// with how; bindingNS is the namespace a ServiceAccount subject without one
// defaults to.
func boundIdentities(ids []identity, bindingNS string, subjects []rbacv1.Subject) (bound []identity, how []string) {
	seen := map[identity]bool{}
	var ways []string
	for _, s := range subjects {
		var match func(identity) bool
		var way string
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = bindingNS
			}
			match = func(i identity) bool { return i.account == s.Name && i.namespace == ns }
			way = "names service account " + ns + "/" + s.Name
		case rbacv1.UserKind:
			match = func(i identity) bool { return i.user() == s.Name }
			way = "names user " + s.Name
		case rbacv1.GroupKind:
			switch {
			case s.Name == "system:serviceaccounts" || s.Name == "system:authenticated":
				match = func(identity) bool { return true }
				way = "binds group " + s.Name + " (every tenant's service accounts)"
			case strings.HasPrefix(s.Name, "system:serviceaccounts:"):
				ns := strings.TrimPrefix(s.Name, "system:serviceaccounts:")
				match = func(i identity) bool { return i.namespace == ns }
				way = "binds group " + s.Name + " (every service account of " + ns + ")"
			}
		}
		if match == nil {
			continue
		}
		hit := false
		for _, i := range ids {
			if match(i) {
				hit = true
				if !seen[i] {
					seen[i] = true
					bound = append(bound, i)
				}
			}
		}
		if hit {
			ways = append(ways, way)
		}
	}
	return bound, ways
}

// scopedRules are rules granted in one namespace, or cluster-wide ("").
type scopedRules struct {
	namespace string
	rules     []rbacv1.PolicyRule
}

// has reports whether list holds x or the wildcard.
func has(list []string, x string) bool {
	for _, v := range list {
		if v == x || v == rbacv1.VerbAll {
			return true
		}
	}
	return false
}

// resourceMatches reports whether a rule's resources hold r ("pods",
// "pods/exec", "*/scale", "*"): "*" is every resource and subresource.
func resourceMatches(list []string, r string) bool {
	for _, v := range list {
		if v == r || v == rbacv1.ResourceAll {
			return true
		}
		if sub, ok := strings.CutPrefix(v, "*/"); ok {
			if i := strings.Index(r, "/"); i >= 0 && r[i+1:] == sub {
				return true
			}
		}
	}
	return false
}

// urlMatches reports whether a rule's non-resource URLs hold u; a trailing
// "*" is a prefix, so "/api/*" holds "/api/v1" and "/api/v1/*".
func urlMatches(list []string, u string) bool {
	for _, v := range list {
		if v == u || v == "*" {
			return true
		}
		if prefix, ok := strings.CutSuffix(v, "*"); ok && strings.HasPrefix(u, prefix) {
			return true
		}
	}
	return false
}

// permission is one verb on one resource (of one group, one object name or
// all) or on one non-resource URL.
type permission struct {
	verb, group, resource, name, url string
}

// permissions expands a rule; a wildcard stays one permission that only a
// wildcard covers.
func permissions(r rbacv1.PolicyRule) []permission {
	var out []permission
	for _, v := range r.Verbs {
		for _, u := range r.NonResourceURLs {
			out = append(out, permission{verb: v, url: u})
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				if len(r.ResourceNames) == 0 {
					out = append(out, permission{verb: v, group: g, resource: res})
				}
				for _, n := range r.ResourceNames {
					out = append(out, permission{verb: v, group: g, resource: res, name: n})
				}
			}
		}
	}
	return out
}

func (p permission) coveredBy(rules []rbacv1.PolicyRule) bool {
	for _, r := range rules {
		if !has(r.Verbs, p.verb) {
			continue
		}
		if p.url != "" {
			if urlMatches(r.NonResourceURLs, p.url) {
				return true
			}
			continue
		}
		if has(r.APIGroups, p.group) && resourceMatches(r.Resources, p.resource) &&
			(len(r.ResourceNames) == 0 || (p.name != "" && slices.Contains(r.ResourceNames, p.name))) {
			return true
		}
	}
	return false
}

// maxPermissions bounds how many single permissions excess expands a
// binding's rules into. A role can list hundreds of verbs, groups, resources
// and names, whose product would not fit in memory; past the bound each rule
// is judged whole instead (covered only by one allowed rule that holds all
// of it), which can only report more.
const maxPermissions = 20000

// excess is what rules, granted in scope (a namespace, or "" cluster-wide),
// give beyond the default grants and the declared ones: each uncovered
// permission, grouped for reading. A RoleBinding's non-resource URLs grant
// nothing (the API server honours them only cluster-wide), so they are
// left out of a namespaced scope.
func excess(rules []rbacv1.PolicyRule, scope string, declared []scopedRules) []string {
	allowed := append([]rbacv1.PolicyRule(nil), defaultGrants...)
	for _, d := range declared {
		if d.namespace == "" || (scope != "" && d.namespace == scope) {
			allowed = append(allowed, d.rules...)
		}
	}
	total := 0
	for _, r := range rules {
		total += size(r)
		if total > maxPermissions {
			return excessWhole(rules, scope, allowed)
		}
	}
	verbs := map[string][]string{}
	var order []string
	seen := map[permission]bool{}
	for _, r := range rules {
		for _, p := range permissions(r) {
			if seen[p] || (p.url != "" && scope != "") || p.coveredBy(allowed) {
				continue
			}
			seen[p] = true
			what := p.what()
			if _, ok := verbs[what]; !ok {
				order = append(order, what)
			}
			verbs[what] = append(verbs[what], p.verb)
		}
	}
	out := make([]string, 0, len(order))
	for _, w := range order {
		vs := verbs[w]
		sort.Strings(vs)
		verb := strings.Join(vs, ",")
		if slices.Contains(vs, rbacv1.VerbAll) {
			verb = "every verb on"
		}
		out = append(out, verb+" "+w)
	}
	return out
}

// size is how many permissions a rule expands into.
func size(r rbacv1.PolicyRule) int {
	names := max(len(r.ResourceNames), 1)
	// Saturating: four lists of a few thousand entries overflow nothing.
	n := len(r.Verbs) * (len(r.NonResourceURLs) + min(len(r.APIGroups)*len(r.Resources), maxPermissions+1)*min(names, maxPermissions+1))
	return min(n, maxPermissions+1)
}

// excessWhole judges each rule whole: covered when one allowed rule holds
// every verb, group, resource, name and URL of it.
func excessWhole(rules []rbacv1.PolicyRule, scope string, allowed []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		if scope != "" {
			r.NonResourceURLs = nil
		}
		if len(r.Verbs) == 0 || (len(r.NonResourceURLs) == 0 && (len(r.APIGroups) == 0 || len(r.Resources) == 0)) {
			continue
		}
		if !slices.ContainsFunc(allowed, func(a rbacv1.PolicyRule) bool { return holdsWhole(a, r) }) {
			out = append(out, fmt.Sprintf("%d verbs on %d resources of %d groups (%d names) and %d URLs",
				len(r.Verbs), len(r.Resources), len(r.APIGroups), len(r.ResourceNames), len(r.NonResourceURLs)))
		}
	}
	return out
}

func holdsWhole(a, r rbacv1.PolicyRule) bool {
	for _, v := range r.Verbs {
		if !has(a.Verbs, v) {
			return false
		}
	}
	for _, u := range r.NonResourceURLs {
		if !urlMatches(a.NonResourceURLs, u) {
			return false
		}
	}
	if len(r.Resources) == 0 {
		return true
	}
	for _, g := range r.APIGroups {
		if !has(a.APIGroups, g) {
			return false
		}
	}
	for _, res := range r.Resources {
		if !resourceMatches(a.Resources, res) {
			return false
		}
	}
	if len(a.ResourceNames) == 0 {
		return true
	}
	if len(r.ResourceNames) == 0 {
		return false
	}
	for _, n := range r.ResourceNames {
		if !slices.Contains(a.ResourceNames, n) {
			return false
		}
	}
	return true
}

// what names the object of a permission: "secrets",
// "sandboxes.agents.x-k8s.io", "every resource of every group",
// "configmaps [kube-root-ca.crt]", "URL /metrics".
func (p permission) what() string {
	if p.url != "" {
		if p.url == "*" {
			return "every non-resource URL"
		}
		return "URL " + p.url
	}
	s := p.resource
	switch {
	case p.resource == "*" && p.group == "*":
		s = "every resource of every group"
	case p.resource == "*" && p.group == "":
		s = "every resource of the core group"
	case p.resource == "*":
		s = "every resource of " + p.group
	case p.group == "*":
		s += " of every group"
	case p.group != "":
		s += "." + p.group
	}
	if p.name != "" {
		s += " [" + p.name + "]"
	}
	return s
}

// describeIdentities names a group of identities for a report line: the
// accounts, then the tenants ("every tenant" when that is what it is).
func describeIdentities(ids []identity, tenants int) string {
	accounts := map[string]bool{}
	names := map[string]bool{}
	var order []string
	for _, i := range ids {
		accounts[i.account] = true
		if !names[i.tenant] {
			names[i.tenant] = true
			order = append(order, i.tenant)
		}
	}
	who := strings.Join(sortedKeys(accounts), " and ")
	switch {
	case len(order) == tenants && tenants > 1:
		return who + " of every tenant"
	case len(order) == 1:
		return who + " of tenant " + order[0]
	}
	return fmt.Sprintf("%s of tenants %s", who, listSome(order, 3))
}
