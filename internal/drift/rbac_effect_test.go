package drift

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/paddock-platform/paddock/internal/manifests"
)

func TestExcess(t *testing.T) {
	orchestrator := []scopedRules{{namespace: "agents-a", rules: manifests.OrchestratorRules()}}
	rule := func(verbs, groups, resources []string, names ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources, ResourceNames: names}
	}
	urls := func(verbs []string, u ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{Verbs: verbs, NonResourceURLs: u}
	}
	get, core, all := []string{"get"}, []string{""}, []string{"*"}
	for _, c := range []struct {
		name     string
		rules    []rbacv1.PolicyRule
		scope    string
		declared []scopedRules
		want     string
	}{
		{"nothing declared, one right", []rbacv1.PolicyRule{rule(get, core, []string{"secrets"})}, "agents-a", nil, "get secrets"},
		{"the declared rules in their namespace", manifests.OrchestratorRules(), "agents-a", orchestrator, ""},
		{"the declared rules in another namespace", manifests.OrchestratorRules()[1:], "default", orchestrator, "get,list,watch sandboxes.agents.x-k8s.io"},
		{"the declared rules cluster-wide", manifests.OrchestratorRules()[1:], "", orchestrator, "get,list,watch sandboxes.agents.x-k8s.io"},
		{"fewer verbs and named objects of a declared rule", []rbacv1.PolicyRule{rule(get, []string{"agents.x-k8s.io"}, []string{"sandboxes"}, "one")}, "agents-a", orchestrator, ""},
		{"a subresource is not its resource", []rbacv1.PolicyRule{rule(get, []string{"agents.x-k8s.io"}, []string{"sandboxes/status"})}, "agents-a", orchestrator, "get sandboxes/status.agents.x-k8s.io"},
		{"wildcards are only covered by wildcards", []rbacv1.PolicyRule{rule(all, all, all)}, "agents-a",
			[]scopedRules{{rules: []rbacv1.PolicyRule{rule([]string{"get", "list"}, all, all)}}}, "every verb on every resource of every group"},
		{"a wildcard declared cluster-wide covers everything", []rbacv1.PolicyRule{rule(get, core, []string{"secrets"}, "x"), urls(get, "/metrics")}, "",
			[]scopedRules{{rules: []rbacv1.PolicyRule{rule(all, all, all), urls(all, "*")}}}, ""},
		{"named objects are not every object", []rbacv1.PolicyRule{rule(get, core, []string{"configmaps"})}, "agents-a",
			[]scopedRules{{namespace: "agents-a", rules: []rbacv1.PolicyRule{rule(get, core, []string{"configmaps"}, "a")}}}, "get configmaps"},
		{"a named object of a named grant", []rbacv1.PolicyRule{rule(get, core, []string{"configmaps"}, "a", "b")}, "agents-a",
			[]scopedRules{{namespace: "agents-a", rules: []rbacv1.PolicyRule{rule(get, core, []string{"configmaps"}, "a")}}}, "get configmaps [b]"},
		{"*/scale covers every scale subresource", []rbacv1.PolicyRule{rule(get, []string{"apps"}, []string{"deployments/scale"})}, "agents-a",
			[]scopedRules{{namespace: "agents-a", rules: []rbacv1.PolicyRule{rule(get, []string{"apps"}, []string{"*/scale"})}}}, ""},
		{"the API server's defaults, exactly", []rbacv1.PolicyRule{
			urls(get, "/api", "/apis/apps/v1", "/version/", "/openid/v1/jwks", "/openapi/v3"),
			rule([]string{"create"}, []string{"authorization.k8s.io"}, []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews"}),
			rule([]string{"create"}, []string{"authentication.k8s.io"}, []string{"selfsubjectreviews"}),
		}, "", nil, ""},
		{"and nothing past them", []rbacv1.PolicyRule{
			urls(get, "/metrics", "/logs/*"), urls([]string{"post"}, "/api"),
			rule([]string{"create"}, []string{"authorization.k8s.io"}, []string{"subjectaccessreviews"}),
			rule([]string{"get"}, []string{"authentication.k8s.io"}, []string{"selfsubjectreviews"}),
		}, "", nil, "get URL /metrics; get URL /logs/*; post URL /api; create subjectaccessreviews.authorization.k8s.io; get selfsubjectreviews.authentication.k8s.io"},
		{"non-resource URLs through a RoleBinding grant nothing", []rbacv1.PolicyRule{urls(all, "*")}, "agents-a", nil, ""},
		{"empty and nil rules", []rbacv1.PolicyRule{{}, {Verbs: get}, {APIGroups: core, Resources: []string{"pods"}}}, "", nil, ""},
	} {
		if got := strings.Join(excess(c.rules, c.scope, c.declared), "; "); got != c.want {
			t.Errorf("%s: excess %q, want %q", c.name, got, c.want)
		}
	}
}

func TestBoundIdentitiesAndWording(t *testing.T) {
	p := platform()
	b := p.Tenants[0]
	b.Name, b.Namespace = "team-b", "agents-team-b"
	p.Tenants = append(p.Tenants, b)
	ids := tenantIdentities(p)
	for _, c := range []struct {
		subjects []rbacv1.Subject
		want     int
	}{
		{[]rbacv1.Subject{{Kind: "Group", Name: "system:authenticated"}}, 4},
		{[]rbacv1.Subject{{Kind: "Group", Name: "system:serviceaccounts"}, {Kind: "Group", Name: "system:serviceaccounts:agents-team-b"}}, 4},
		{[]rbacv1.Subject{{Kind: "Group", Name: "system:serviceaccounts:agents-team-b"}}, 2},
		{[]rbacv1.Subject{{Kind: "Group", Name: "system:unauthenticated"}, {Kind: "Group", Name: "system:masters"}}, 0},
		{[]rbacv1.Subject{{Kind: "ServiceAccount", Name: "agent-runtime"}}, 1}, // the binding's namespace
		{[]rbacv1.Subject{{Kind: "ServiceAccount", Name: "agent-runtime", Namespace: "default"}}, 0},
		{[]rbacv1.Subject{{Kind: "User", Name: "system:serviceaccount:agents-team-b:agent-orchestrator"}}, 1},
		{[]rbacv1.Subject{{Kind: "User", Name: "agent-orchestrator"}}, 0},
		{nil, 0},
	} {
		if got, _ := boundIdentities(ids, "agents-team-a", c.subjects); len(got) != c.want {
			t.Errorf("%v binds %d identities, want %d", c.subjects, len(got), c.want)
		}
	}

	// A cluster-wide grant to everyone names every tenant, and belongs to
	// no one tenant.
	bound, how := boundIdentities(ids, "", []rbacv1.Subject{{Kind: "Group", Name: "system:authenticated"}})
	c := bindingCandidate{kind: "ClusterRoleBinding", meta: metav1.ObjectMeta{Name: "x"}, ref: rbacv1.RoleRef{Kind: "ClusterRole", Name: "reader"}, bound: bound, how: how}
	live := rbacReference{clusterRoles: map[string][]rbacv1.PolicyRule{"reader": {{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}}}
	f, ok := judgeBinding(c, live, rbacReference{}, len(p.Tenants))
	if !ok || f.Tenant != "" || !strings.Contains(f.Reason, "agent-orchestrator and agent-runtime of every tenant {list secrets}") {
		t.Errorf("finding %v %+v", ok, f)
	}
	// A role that is missing live but that Paddock declares is judged by
	// its declared rules: `up` brings exactly those back.
	declared := rbacReference{clusterRoles: map[string][]rbacv1.PolicyRule{"reader": manifests.OrchestratorRules()}}
	c.bound, c.ref.Name = bound[1:2], "reader"
	declared.grants = map[identity][]scopedRules{bound[1]: {{rules: manifests.OrchestratorRules()}}}
	if f, ok := judgeBinding(c, rbacReference{}, declared, len(p.Tenants)); ok {
		t.Errorf("a declared role missing live was reported: %+v", f)
	}
	c.ref.Name = "nobody"
	if f, ok := judgeBinding(c, rbacReference{}, declared, len(p.Tenants)); !ok || f.Rule != RuleDanglingBinding {
		t.Errorf("a binding of a role no one declares: %v %+v", ok, f)
	}
}

// A role with lists long enough that their product would not fit in memory
// is judged rule by rule, quickly, and still reported.
func TestExcessHugeRole(t *testing.T) {
	long := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = prefix + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + string(rune('a'+i/26%26))
		}
		return out
	}
	huge := rbacv1.PolicyRule{Verbs: long("v", 300), APIGroups: long("g", 300), Resources: long("r", 300), ResourceNames: long("n", 300)}
	got := excess([]rbacv1.PolicyRule{huge}, "agents-a", nil)
	if len(got) != 1 || !strings.Contains(got[0], "300 verbs on 300 resources of 300 groups (300 names)") {
		t.Errorf("excess = %v", got)
	}
	all := []string{"*"}
	if got := excess([]rbacv1.PolicyRule{huge}, "agents-a", []scopedRules{{rules: []rbacv1.PolicyRule{{Verbs: all, APIGroups: all, Resources: all}}}}); len(got) != 0 {
		t.Errorf("a wildcard grant did not cover the huge rule: %v", got)
	}
}
