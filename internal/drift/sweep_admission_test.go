package drift

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
)

// servedForTest is the discovery a cluster after `paddock up` answers with,
// for the kinds S09 maps to resources.
func servedForTest() []*metav1.APIResourceList {
	return []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "namespaces", Kind: "Namespace"},
			{Name: "pods", Namespaced: true, Kind: "Pod"},
			{Name: "serviceaccounts", Namespaced: true, Kind: "ServiceAccount"},
			{Name: "services", Namespaced: true, Kind: "Service"},
			{Name: "resourcequotas", Namespaced: true, Kind: "ResourceQuota"},
			{Name: "limitranges", Namespaced: true, Kind: "LimitRange"},
			{Name: "pods/status", Namespaced: true, Kind: "Pod"},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Namespaced: true, Kind: "Deployment"}}},
		{GroupVersion: "node.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "runtimeclasses", Kind: "RuntimeClass"}}},
		{GroupVersion: "networking.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "networkpolicies", Namespaced: true, Kind: "NetworkPolicy"}}},
		{GroupVersion: "agents.x-k8s.io/v1beta1", APIResources: []metav1.APIResource{{Name: "sandboxes", Namespaced: true, Kind: "Sandbox"}}},
		{GroupVersion: "extensions.agents.x-k8s.io/v1beta1", APIResources: []metav1.APIResource{
			{Name: "sandboxclaims", Namespaced: true, Kind: "SandboxClaim"},
			{Name: "sandboxtemplates", Namespaced: true, Kind: "SandboxTemplate"},
			{Name: "sandboxwarmpools", Namespaced: true, Kind: "SandboxWarmPool"},
		}},
	}
}

func mutating(name string, hooks ...admissionv1.MutatingWebhook) *admissionv1.MutatingWebhookConfiguration {
	return &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks}
}

func hook(name string, nsSel *metav1.LabelSelector, rules ...admissionv1.RuleWithOperations) admissionv1.MutatingWebhook {
	svc := &admissionv1.ServiceReference{Namespace: "mesh", Name: name}
	return admissionv1.MutatingWebhook{Name: name + ".example.com", ClientConfig: admissionv1.WebhookClientConfig{Service: svc}, NamespaceSelector: nsSel, Rules: rules}
}

func writes(group, resource string, ops ...admissionv1.OperationType) admissionv1.RuleWithOperations {
	if len(ops) == 0 {
		ops = []admissionv1.OperationType{admissionv1.Create, admissionv1.Update}
	}
	return admissionv1.RuleWithOperations{Operations: ops, Rule: admissionv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}}}
}

// Every mutating webhook that can rewrite what Paddock applies, or the pods,
// sandboxes and claims that run from it, is reported by what it reaches in
// the namespaces as they are labelled; one that selects none of them, or
// only deletes, is not; an objectSelector or matchConditions exempt nothing.
func TestSweepMutatingAdmission(t *testing.T) {
	p := platform()
	ns := p.Tenants[0].Namespace
	injectPods := hook("sidecar", &metav1.LabelSelector{MatchLabels: map[string]string{"mesh-injection": "enabled"}}, writes("", "pods", admissionv1.Create))
	notTenants := hook("not-tenants", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{ns, "agent-sandbox-system"}},
	}}, admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{admissionv1.OperationAll},
		Rule: admissionv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}, Scope: ptrTo(admissionv1.NamespacedScope)}})
	withObjectSelector := hook("labelled", nil, writes("", "pods", admissionv1.OperationAll))
	withObjectSelector.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"inject": "yes"}}
	withObjectSelector.MatchConditions = []admissionv1.MatchCondition{{Name: "x", Expression: "true"}}
	clusterWide := hook("cluster", nil, admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{admissionv1.Update},
		Rule: admissionv1.Rule{APIGroups: []string{"node.k8s.io"}, APIVersions: []string{"v1"}, Resources: []string{"*"}, Scope: ptrTo(admissionv1.ClusterScope)}})

	run := func(t *testing.T, nsLabels map[string]string, objs ...runtime.Object) map[string]Finding {
		c := afterUp(t, p)
		typed := append([]runtime.Object{}, c.typed...)
		for i, o := range typed {
			if n, ok := o.(interface{ GetName() string }); ok && n.GetName() == ns {
				if m, ok := o.(metav1.Object); ok && nsLabels != nil {
					l := m.GetLabels()
					for k, v := range nsLabels {
						l[k] = v
					}
					m.SetLabels(l)
					typed[i] = o
				}
			}
		}
		kube := fake.NewClientset(append(typed, objs...)...)
		kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = servedForTest()
		got, err := Sweep(context.Background(), p, kube, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]Finding{}
		for _, f := range got {
			if f.Rule == RuleMutatingAdmission {
				out[f.Name+" "+strings.SplitN(f.Reason, " ", 3)[1]] = f
			}
		}
		return out
	}
	objs := []runtime.Object{
		mutating("templates", hook("envfrom", nil, writes("extensions.agents.x-k8s.io", "sandboxtemplates"))),
		mutating("mesh", injectPods, notTenants),
		mutating("deletes-only", hook("audit", nil, writes("*", "*", admissionv1.Delete))),
		mutating("labelled", withObjectSelector),
		mutating("cluster", clusterWide),
	}
	got := run(t, nil, objs...)
	want := map[string][]string{
		"templates envfrom.example.com": {"service mesh/envfrom", "create, update sandboxtemplates.extensions.agents.x-k8s.io in " + ns, "no comparison with the API server's answer can see it"},
		"labelled labelled.example.com": {"create, update pods in agent-sandbox-system, " + ns, "objectSelector reads labels the object's writer chooses", "matchConditions"},
		"cluster cluster.example.com":   {"update runtimeclasses.node.k8s.io"},
	}
	for key, parts := range want {
		f, ok := got[key]
		if !ok {
			t.Errorf("%s not reported; got %v", key, got)
			continue
		}
		for _, part := range parts {
			if !strings.Contains(f.Reason, part) {
				t.Errorf("%s: reason lacks %q:\n%s", key, part, f.Reason)
			}
		}
		if !strings.Contains(f.Fix, "kubectl delete mutatingwebhookconfiguration "+strings.Fields(key)[0]) {
			t.Errorf("%s: fix %q", key, f.Fix)
		}
	}
	for key, f := range got {
		if _, ok := want[key]; !ok {
			t.Errorf("reported %s: %s", key, f.Reason)
		}
	}

	// The same injector selects the tenant once its namespace carries the label.
	got = run(t, map[string]string{"mesh-injection": "enabled"}, objs...)
	if f, ok := got["mesh sidecar.example.com"]; !ok || !strings.Contains(f.Reason, "create pods in "+ns) {
		t.Errorf("a pod injector selecting the labelled tenant namespace: %+v", f)
	}
}

func ptrTo[T any](v T) *T { return &v }

// A MutatingAdmissionPolicy acts through its bindings, on what both the
// policy's constraints and the binding's match resources send it; where the
// API server serves none, nothing is listed.
func TestSweepMutatingAdmissionPolicies(t *testing.T) {
	p := platform()
	ns := p.Tenants[0].Namespace
	policy := func(name string, rules ...admissionv1.NamedRuleWithOperations) *admissionv1.MutatingAdmissionPolicy {
		return &admissionv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionv1.MutatingAdmissionPolicySpec{MatchConstraints: &admissionv1.MatchResources{ResourceRules: rules}}}
	}
	binding := func(name, policy string, m *admissionv1.MatchResources) *admissionv1.MutatingAdmissionPolicyBinding {
		return &admissionv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionv1.MutatingAdmissionPolicyBindingSpec{PolicyName: policy, MatchResources: m}}
	}
	named := func(r admissionv1.RuleWithOperations) admissionv1.NamedRuleWithOperations {
		return admissionv1.NamedRuleWithOperations{RuleWithOperations: r}
	}
	objs := []runtime.Object{
		policy("inject-env", named(writes("extensions.agents.x-k8s.io", "sandboxtemplates"))),
		binding("inject-env-everywhere", "inject-env", nil),
		policy("unbound", named(writes("", "pods"))),
		policy("sidecars", named(writes("", "pods"))),
		binding("sidecars-elsewhere", "sidecars", &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "web"}}}),
		binding("sidecars-but-not-pods", "sidecars", &admissionv1.MatchResources{ExcludeResourceRules: []admissionv1.NamedRuleWithOperations{named(writes("", "pods"))}}),
	}
	served := append(servedForTest(), &metav1.APIResourceList{GroupVersion: "admissionregistration.k8s.io/v1", APIResources: []metav1.APIResource{
		{Name: "mutatingadmissionpolicies", Kind: "MutatingAdmissionPolicy"},
		{Name: "mutatingadmissionpolicybindings", Kind: "MutatingAdmissionPolicyBinding"},
	}})
	sweep := func(resources []*metav1.APIResourceList) []Finding {
		c := afterUp(t, p)
		kube := fake.NewClientset(append(append([]runtime.Object{}, c.typed...), objs...)...)
		kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = resources
		got, err := Sweep(context.Background(), p, kube, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []Finding
		for _, f := range got {
			if f.Rule == RuleMutatingAdmission {
				out = append(out, f)
			}
		}
		return out
	}
	got := sweep(served)
	if len(got) != 1 || got[0].Kind != "MutatingAdmissionPolicy" || got[0].Name != "inject-env" ||
		!strings.Contains(got[0].Reason, "bound by inject-env-everywhere, it can rewrite create, update sandboxtemplates.extensions.agents.x-k8s.io in "+ns) ||
		!strings.Contains(got[0].Fix, "kubectl delete mutatingadmissionpolicybinding inject-env-everywhere") {
		t.Errorf("want inject-env alone, through its binding:%s", describe(got))
	}
	if got := sweep(servedForTest()); len(got) != 0 {
		t.Errorf("policies read where the API server serves none:%s", describe(got))
	}
}

// The fingerprint changes when a mutating webhook appears, changes or goes,
// and only then.
func TestAdmissionFingerprint(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset()
	print := func() string {
		f, err := AdmissionFingerprint(ctx, kube)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	none := print()
	if again := print(); again != none {
		t.Fatalf("fingerprint of one cluster changed: %s, %s", none, again)
	}
	c := mutating("templates", hook("envfrom", nil, writes("extensions.agents.x-k8s.io", "sandboxtemplates")))
	if _, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, c, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	one := print()
	if one == none {
		t.Error("a new webhook left the fingerprint as it was")
	}
	c.Webhooks[0].Rules = append(c.Webhooks[0].Rules, writes("", "pods"))
	if _, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if changed := print(); changed == one || changed == none {
		t.Error("a webhook's new rule left the fingerprint as it was")
	}
	if err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, "templates", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if gone := print(); gone != none {
		t.Error("with the webhook gone the fingerprint is not the empty cluster's")
	}
}
