package manifests

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
)

// auditLevel is the level the policy gives a request, as the API server
// decides it: the first rule that matches its verb and resource.
func auditLevel(p AuditPolicy, verb string, r schema.GroupResource) string {
	for _, rule := range p.Rules {
		if len(rule.Verbs) > 0 && !slices.Contains(rule.Verbs, verb) {
			continue
		}
		if len(rule.Resources) > 0 && !slices.ContainsFunc(rule.Resources, func(g AuditGroupResources) bool {
			return g.Group == r.Group && (len(g.Resources) == 0 || slices.Contains(g.Resources, r.Resource))
		}) {
			continue
		}
		return rule.Level
	}
	return AuditLevelNone // the API server's default for a request no rule matches
}

var allVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

func TestAuditPolicyRecordsChangesOfEveryKind(t *testing.T) {
	p := Audit()
	kinds := []schema.GroupResource{
		agentsandbox.Sandboxes.GroupResource(), agentsandbox.SandboxClaims.GroupResource(),
		agentsandbox.SandboxTemplates.GroupResource(), agentsandbox.SandboxWarmPools.GroupResource(),
		{Group: "rbac.authorization.k8s.io", Resource: "roles"}, {Group: "rbac.authorization.k8s.io", Resource: "rolebindings"},
		{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}, {Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
		{Group: "networking.k8s.io", Resource: "networkpolicies"},
		{Group: "cilium.io", Resource: "ciliumnetworkpolicies"}, {Group: "cilium.io", Resource: "ciliumclusterwidenetworkpolicies"},
		{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"},
		{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicybindings"},
		{Resource: "namespaces"}, {Resource: "resourcequotas"}, {Resource: "limitranges"},
	}
	for _, r := range kinds {
		for _, verb := range allVerbs {
			want := AuditLevelNone
			if slices.Contains(AuditWriteVerbs, verb) {
				want = AuditLevelMetadata
			}
			if got := auditLevel(p, verb, r); got != want {
				t.Errorf("%s %s: level %s, want %s", verb, r, got, want)
			}
		}
		// A controller's status update is not someone changing the object.
		if got := auditLevel(p, "update", schema.GroupResource{Group: r.Group, Resource: r.Resource + "/status"}); got != AuditLevelNone {
			t.Errorf("update %s/status: level %s, want None", r, got)
		}
	}
}

func TestAuditPolicyNeverRecordsSecretContents(t *testing.T) {
	p := Audit()
	for _, res := range []string{"secrets", "configmaps"} {
		for _, verb := range allVerbs {
			got := auditLevel(p, verb, schema.GroupResource{Resource: res})
			if got != AuditLevelNone && got != AuditLevelMetadata {
				t.Errorf("%s %s: level %s, above Metadata", verb, res, got)
			}
		}
	}
	// No rule records more than Metadata, whatever it matches.
	for i, rule := range p.Rules {
		if rule.Level != AuditLevelNone && rule.Level != AuditLevelMetadata {
			t.Errorf("rule %d: level %s", i, rule.Level)
		}
	}
}

func TestAuditPolicyCatchAllIsNone(t *testing.T) {
	p := Audit()
	last := p.Rules[len(p.Rules)-1]
	if last.Level != AuditLevelNone || len(last.Verbs) > 0 || len(last.Resources) > 0 {
		t.Errorf("last rule %+v, want level None for everything", last)
	}
	for _, r := range []schema.GroupResource{{Resource: "pods"}, {Resource: "pods/exec"}, {Group: "apps", Resource: "deployments"}, {Group: "coordination.k8s.io", Resource: "leases"}} {
		if got := auditLevel(p, "create", r); got != AuditLevelNone {
			t.Errorf("create %s: level %s, want None", r, got)
		}
	}
	if !slices.Equal(p.OmitStages, []string{"RequestReceived"}) {
		t.Errorf("omitStages %v, want RequestReceived", p.OmitStages)
	}
}

// The file parses into the shape of the API server's audit.k8s.io/v1 Policy:
// only fields it knows, levels and stages it accepts, and every rule as built.
func TestAuditPolicyYAMLParses(t *testing.T) {
	b, err := AuditPolicyYAML()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	known := func(where string, m map[string]any, fields ...string) {
		for k := range m {
			if !slices.Contains(fields, k) {
				t.Errorf("%s: field %q is not in audit.k8s.io/v1", where, k)
			}
		}
	}
	known("Policy", doc, "apiVersion", "kind", "metadata", "rules", "omitStages", "omitManagedFields")
	if doc["apiVersion"] != "audit.k8s.io/v1" || doc["kind"] != "Policy" {
		t.Errorf("apiVersion %v, kind %v", doc["apiVersion"], doc["kind"])
	}
	stages := []string{"RequestReceived", "ResponseStarted", "ResponseComplete", "Panic"}
	for _, s := range doc["omitStages"].([]any) {
		if !slices.Contains(stages, s.(string)) {
			t.Errorf("omitStages: unknown stage %v", s)
		}
	}
	rules, _ := doc["rules"].([]any)
	if len(rules) != len(Audit().Rules) {
		t.Fatalf("%d rules in the file, %d built", len(rules), len(Audit().Rules))
	}
	for i, r := range rules {
		rule := r.(map[string]any)
		known("rule", rule, "level", "users", "userGroups", "verbs", "resources", "namespaces", "nonResourceURLs", "omitStages", "omitManagedFields")
		if !slices.Contains([]string{"None", "Metadata", "Request", "RequestResponse"}, rule["level"].(string)) {
			t.Errorf("rule %d: level %v", i, rule["level"])
		}
		res, _ := rule["resources"].([]any)
		for _, g := range res {
			known("resources", g.(map[string]any), "group", "resources", "resourceNames")
		}
	}
	var back AuditPolicy
	if err := yaml.UnmarshalStrict(b, &back); err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(back.Rules, Audit().Rules, func(a, b AuditRule) bool {
		return a.Level == b.Level && slices.Equal(a.Verbs, b.Verbs) && slices.EqualFunc(a.Resources, b.Resources, func(x, y AuditGroupResources) bool {
			return x.Group == y.Group && slices.Equal(x.Resources, y.Resources)
		})
	}) {
		t.Errorf("the file does not read back as the policy:\n%s", b)
	}
}
