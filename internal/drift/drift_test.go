package drift

import (
	"unicode/utf8"

	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/termtext"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/pins"
	"github.com/paddock-platform/paddock/internal/spectest"
)

func sample() *Report {
	return &Report{
		Platform: "local-demo", Stack: "local-demo", Target: "local", Checked: 35,
		Compare: 3 * time.Second, Sweep: 100 * time.Millisecond,
		Resources: []Resource{
			{URN: "urn:b", Kind: "SandboxWarmPool", Name: "agents-team-a/python", Change: Modified, Cause: CauseCluster,
				Fields: []Field{{Path: "spec.replicas", Declared: 2.0, Live: 5.0, Cause: CauseCluster}}, Repair: "`paddock up` sets the declared values back"},
			{URN: "urn:a", Kind: "Namespace", Name: "agents-team-a", Change: Modified, Cause: CauseCluster,
				Fields: []Field{{Path: `metadata.labels["pod-security.kubernetes.io/enforce"]`, Declared: "restricted", Cause: CauseCluster}}, Repair: "x"},
			{URN: "urn:c", Kind: "NetworkPolicy", Name: "agents-team-a/allow-dns", Change: Missing, Cause: CauseCluster, Repair: "`paddock up` recreates it"},
		},
		Unmanaged: []Finding{{Rule: RuleAgentBinding, Title: RuleTitle(RuleAgentBinding), Kind: "RoleBinding", Namespace: "agents-team-a", Name: "oops|x", Reason: "grants edit", Fix: "kubectl delete rolebinding -n agents-team-a oops"}},
	}
}

func TestWriters(t *testing.T) {
	r := sample()
	r.Sort()
	if r.Resources[0].Name != "agents-team-a" || r.Resources[1].Name != "agents-team-a/allow-dns" {
		t.Fatalf("not sorted by name: %v", r.Resources)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`~  Namespace agents-team-a  (changed in the cluster)`,
		`metadata.labels["pod-security.kubernetes.io/enforce"]: "restricted" → (absent)`,
		`spec.replicas: 2 → 5`,
		`+  NetworkPolicy agents-team-a/allow-dns  (deleted from the cluster)`,
		`RoleBinding agents-team-a/oops|x  [S01 binding grants a tenant identity more than the spec does]`,
		`3 drifted resources, 1 object outside the stack weakens the platform`,
	} {
		// Lines wrap at the terminal's width: compare the words.
		if !strings.Contains(strings.Join(strings.Fields(text.String()), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	for i, line := range strings.Split(text.String(), "\n") {
		if utf8.RuneCountInString(line) > termtext.Width {
			t.Errorf("text line %d is wider than %d columns: %q", i+1, termtext.Width, line)
		}
	}
	var md bytes.Buffer
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## Paddock drift: ❌ drift — `local-demo` (stack `local-demo`)",
		"| `SandboxWarmPool agents-team-a/python` | changed in the cluster | `spec.replicas` | `2` | `5` |",
		"`RoleBinding agents-team-a/oops\\|x`", // a | in a cell is escaped
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown report lacks %q:\n%s", want, md.String())
		}
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Resources) != 3 || back.Unmanaged[0].Rule != "S01" {
		t.Fatalf("json round trip: %v %+v", err, back)
	}

	clean := &Report{Platform: "p", Stack: "s", Checked: 35}
	if clean.Drifted() {
		t.Fatal("an empty report drifted")
	}
	js.Reset()
	_ = clean.WriteJSON(&js)
	if !strings.Contains(js.String(), `"resources": []`) || !strings.Contains(js.String(), `"unmanaged": []`) {
		t.Errorf("clean JSON report should have empty lists, not null:\n%s", js.String())
	}
	md.Reset()
	_ = clean.WriteMarkdown(&md)
	if !strings.Contains(md.String(), "✅ no drift") {
		t.Errorf("clean markdown: %s", md.String())
	}
}

func platform() *model.Platform {
	tpl := model.DefaultTemplate("python")
	tpl.Image, tpl.Command, tpl.RuntimeClass = "python:3.12-slim", []string{"sleep", "infinity"}, "gvisor"
	tenant := model.DefaultTenant("team-a")
	tenant.Templates = []model.Template{tpl}
	tenant.WarmPools = []model.WarmPool{{Name: "python", Template: "python", Replicas: 2}}
	return &model.Platform{
		Name:           "demo",
		Target:         model.Target{Kind: model.TargetLocal},
		AgentSandbox:   model.AgentSandboxRelease{Version: pins.AgentSandbox, Image: pins.AgentSandboxImage + ":" + pins.AgentSandbox},
		RuntimeClasses: []model.RuntimeClass{{Name: "gvisor", Handler: "runsc"}},
		Tenants:        []model.Tenant{tenant},
	}
}

func om(ns, name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}
}

func ptr(s string) *string { return &s }

// The API server's own default bindings of every authenticated user and
// every service account, as a v1.35 API server creates them (labelled
// kubernetes.io/bootstrapping=rbac-defaults, which the sweep ignores).
func apiServerDefaults() []runtime.Object {
	boot := map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}
	var out []runtime.Object
	for _, d := range []struct {
		name  string
		group string
		rules []rbacv1.PolicyRule
	}{
		{"system:discovery", "system:authenticated", []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{
			"/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"}}}},
		{"system:basic-user", "system:authenticated", []rbacv1.PolicyRule{
			{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"selfsubjectaccessreviews", "selfsubjectrulesreviews"}},
			{Verbs: []string{"create"}, APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"selfsubjectreviews"}},
		}},
		{"system:public-info-viewer", "system:authenticated", []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{
			"/healthz", "/livez", "/readyz", "/version", "/version/"}}}},
		{"system:service-account-issuer-discovery", "system:serviceaccounts", []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{
			"/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/"}}}},
	} {
		out = append(out,
			&rbacv1.ClusterRole{ObjectMeta: om("", d.name, boot), Rules: d.rules},
			&rbacv1.ClusterRoleBinding{ObjectMeta: om("", d.name, boot),
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: d.name},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: d.group}, {Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:unauthenticated"}}},
		)
	}
	// Roles that come with every cluster, which the bad bindings below bind.
	all := []string{"*"}
	out = append(out,
		&rbacv1.ClusterRole{ObjectMeta: om("", "cluster-admin", boot), Rules: []rbacv1.PolicyRule{
			{Verbs: all, APIGroups: all, Resources: all}, {Verbs: all, NonResourceURLs: all}}},
		&rbacv1.ClusterRole{ObjectMeta: om("", "edit", boot), Rules: []rbacv1.PolicyRule{
			{Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}, APIGroups: []string{""}, Resources: []string{"pods", "secrets", "configmaps"}},
			{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"pods/exec"}}}},
		&rbacv1.ClusterRole{ObjectMeta: om("", "view", boot), Rules: []rbacv1.PolicyRule{
			{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods", "configmaps"}}}},
		&rbacv1.ClusterRole{ObjectMeta: om("", "admin", boot), Rules: []rbacv1.PolicyRule{
			{Verbs: all, APIGroups: []string{"", "rbac.authorization.k8s.io"}, Resources: all}}},
	)
	return out
}

// templateHash stands in for the Agent Sandbox controller's hash of a
// template name; the sweep never computes it.
func templateHash(name string) string { return "h" + name }

// derivedPolicy is what the Agent Sandbox controller makes of a template:
// its networkPolicy (or the controller's default) over the template's pods.
func derivedPolicy(t testing.TB, u *unstructured.Unstructured) *networkingv1.NetworkPolicy {
	t.Helper()
	var st extv1beta1.SandboxTemplate
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &st); err != nil {
		t.Fatal(err)
	}
	yes := true
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: om(st.Namespace, manifests.TemplateNetworkPolicyName(st.Name), nil),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{sandboxv1beta1.SandboxTemplateRefHashLabel: templateHash(st.Name)}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
	np.OwnerReferences = []metav1.OwnerReference{{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxTemplate", Name: st.Name, Controller: &yes}}
	if st.Spec.NetworkPolicy != nil {
		np.Spec.Ingress, np.Spec.Egress = st.Spec.NetworkPolicy.Ingress, st.Spec.NetworkPolicy.Egress
	} else {
		np.Spec.Ingress, np.Spec.Egress = manifests.ControllerDefaultIngress(), manifests.ControllerDefaultEgress()
	}
	return np
}

// cluster is a fake cluster's objects: typed for the clientset, unstructured
// for the dynamic client.
type cluster struct {
	typed   []runtime.Object
	dynamic []runtime.Object
}

// afterUp is the cluster right after `paddock up` of p: every object
// Paddock builds, the policies the Agent Sandbox controller derives from
// the templates, and the API server's defaults.
func afterUp(t testing.TB, p *model.Platform) *cluster {
	t.Helper()
	built, err := manifests.Build(p)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{typed: apiServerDefaults()}
	objs := allObjects(built)
	for _, rc := range built.RuntimeClasses {
		objs = append(objs, rc.Object)
	}
	for _, u := range objs {
		switch u.GetKind() {
		case "CiliumNetworkPolicy", "FQDNNetworkPolicy":
			c.dynamic = append(c.dynamic, u.DeepCopy())
			continue
		case "SandboxTemplate":
			c.typed = append(c.typed, derivedPolicy(t, u))
			continue
		}
		gvk := u.GroupVersionKind()
		if !scheme.Scheme.Recognizes(gvk) {
			continue // CRDs and the Agent Sandbox kinds: the sweep does not read them
		}
		obj, err := scheme.Scheme.New(gvk)
		if err != nil {
			t.Fatal(err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
			t.Fatalf("%s %s: %v", gvk.Kind, u.GetName(), err)
		}
		if ns, ok := obj.(*corev1.Namespace); ok {
			// The API server labels every namespace with its name.
			if ns.Labels == nil {
				ns.Labels = map[string]string{}
			}
			ns.Labels["kubernetes.io/metadata.name"] = ns.Name
		}
		c.typed = append(c.typed, obj)
	}
	return c
}

// find returns the typed object of that kind and name, to edit in place.
func (c *cluster) find(t testing.TB, kind, ns, name string) runtime.Object {
	t.Helper()
	for _, o := range c.typed {
		m, err := meta.Accessor(o)
		if err == nil && typedKind(o) == kind && m.GetNamespace() == ns && m.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s/%s in the cluster", kind, ns, name)
	return nil
}

func (c *cluster) remove(t testing.TB, kind, ns, name string) {
	t.Helper()
	o := c.find(t, kind, ns, name)
	for i := range c.typed {
		if c.typed[i] == o {
			c.typed = append(c.typed[:i], c.typed[i+1:]...)
			return
		}
	}
}

func typedKind(o runtime.Object) string {
	gvks, _, err := scheme.Scheme.ObjectKinds(o)
	if err != nil || len(gvks) == 0 {
		return ""
	}
	return gvks[0].Kind
}

var testListKinds = map[schema.GroupVersionResource]string{
	ciliumPolicies:             "CiliumNetworkPolicyList",
	ciliumClusterwidePolicies:  "CiliumClusterwideNetworkPolicyList",
	gkeFQDNPolicies:            "FQDNNetworkPolicyList",
	agentsandbox.SandboxClaims: "SandboxClaimList",
	agentsandbox.Sandboxes:     "SandboxList",
}

// sweep runs Sweep on fakes holding c, with Cilium's and GKE's CRDs served.
func (c *cluster) sweep(t testing.TB, p *model.Platform) []Finding {
	t.Helper()
	kube := fake.NewClientset(c.typed...)
	kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{
		{GroupVersion: "cilium.io/v2", APIResources: []metav1.APIResource{
			{Name: "ciliumnetworkpolicies", Namespaced: true, Kind: "CiliumNetworkPolicy"},
			{Name: "ciliumclusterwidenetworkpolicies", Kind: "CiliumClusterwideNetworkPolicy"},
		}},
		{GroupVersion: "networking.gke.io/v1alpha1", APIResources: []metav1.APIResource{{Name: "fqdnnetworkpolicies", Namespaced: true, Kind: "FQDNNetworkPolicy"}}},
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), testListKinds, c.dynamic...)
	got, err := Sweep(context.Background(), p, kube, dyn)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range got {
		if f.Reason == "" || f.Fix == "" || f.Title == "" {
			t.Errorf("%s: empty reason, fix or title: %+v", f.Object(), f)
		}
		if strings.Contains(f.Reason, "\n") {
			t.Errorf("%s: the reason is not one line: %q", f.Object(), f.Reason)
		}
	}
	return got
}

func describe(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("\n  " + f.Rule + " " + f.Object() + ": " + f.Reason)
	}
	return b.String()
}

func unstructuredOf(obj map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: obj}
}

func ciliumPolicy(ns, name string, spec map[string]any) *unstructured.Unstructured {
	md := map[string]any{"name": name}
	kind := "CiliumClusterwideNetworkPolicy"
	if ns != "" {
		md["namespace"] = ns
		kind = "CiliumNetworkPolicy"
	}
	return unstructuredOf(map[string]any{"apiVersion": "cilium.io/v2", "kind": kind, "metadata": md, "spec": spec})
}

func TestSweep(t *testing.T) {
	p := platform()
	ns := p.Tenants[0].Namespace
	c := afterUp(t, p)
	c.typed = append(c.typed,
		&corev1.Pod{ObjectMeta: om(ns, "sandbox-1", nil), Spec: corev1.PodSpec{RuntimeClassName: ptr("gvisor")}},
		&corev1.Pod{ObjectMeta: om(ns, "done", nil), Status: corev1.PodStatus{Phase: corev1.PodSucceeded}},
	)
	if got := c.sweep(t, p); len(got) != 0 {
		t.Fatalf("an untouched platform has findings:%s", describe(got))
	}

	// What weakens it.
	sa := func(name string) []rbacv1.Subject {
		return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name}} // the namespace defaults to the binding's
	}
	ref := func(kind, name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
	}
	group := func(name string) []rbacv1.Subject { return []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: name}} }
	policy := func(name string, labels map[string]string, spec networkingv1.NetworkPolicySpec) *networkingv1.NetworkPolicy {
		return &networkingv1.NetworkPolicy{ObjectMeta: om(ns, name, labels), Spec: spec}
	}
	orchestratorRole := &rbacv1.ClusterRole{ObjectMeta: om("", "orchestrator-everywhere", nil), Rules: manifests.OrchestratorRules()}
	c.typed = append(c.typed,
		&rbacv1.RoleBinding{ObjectMeta: om(ns, "oops", nil), RoleRef: ref("ClusterRole", "edit"), Subjects: sa("agent-runtime")},
		&rbacv1.RoleBinding{ObjectMeta: om("default", "elsewhere", nil), RoleRef: ref("ClusterRole", "view"), Subjects: group("system:serviceaccounts:" + ns)},
		&rbacv1.ClusterRoleBinding{ObjectMeta: om("", "all-sa", nil), RoleRef: ref("ClusterRole", "view"), Subjects: group("system:serviceaccounts")},
		&rbacv1.ClusterRoleBinding{ObjectMeta: om("", "by-user", nil), RoleRef: ref("ClusterRole", "admin"),
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "system:serviceaccount:" + ns + ":agent-runtime"}}},
		// Labelled as the API server's own: the label exempts nothing.
		&rbacv1.ClusterRoleBinding{ObjectMeta: om("", "system:sneaky", map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}),
			RoleRef: ref("ClusterRole", "cluster-admin"), Subjects: group("system:authenticated")},
		// The orchestrator: one more right in its namespace, and its own
		// rights cluster-wide, are both more than the spec grants.
		&rbacv1.Role{ObjectMeta: om(ns, "peek", nil), Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"secrets"}}}},
		&rbacv1.RoleBinding{ObjectMeta: om(ns, "peek", nil), RoleRef: ref("Role", "peek"), Subjects: sa("agent-orchestrator")},
		orchestratorRole,
		&rbacv1.ClusterRoleBinding{ObjectMeta: om("", "orchestrator-everywhere", nil), RoleRef: ref("ClusterRole", orchestratorRole.Name),
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "agent-orchestrator", Namespace: ns}}},
		// The orchestrator's declared rights, bound again in its namespace: nothing more.
		&rbacv1.RoleBinding{ObjectMeta: om(ns, "orchestrator-again", nil), RoleRef: ref("ClusterRole", orchestratorRole.Name), Subjects: sa("agent-orchestrator")},
		// Self-reviews are every identity's anyway.
		&rbacv1.ClusterRole{ObjectMeta: om("", "self-review", nil), Rules: []rbacv1.PolicyRule{{Verbs: []string{"create"}, APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"selfsubjectaccessreviews"}}}},
		&rbacv1.RoleBinding{ObjectMeta: om(ns, "self-review", nil), RoleRef: ref("ClusterRole", "self-review"), Subjects: sa("agent-runtime")},
		// A role that does not exist yet.
		&rbacv1.RoleBinding{ObjectMeta: om(ns, "ghost", nil), RoleRef: ref("Role", "ghost"), Subjects: sa("agent-runtime")},

		policy("open", nil, egressPolicy("", networkingv1.NetworkPolicyEgressRule{})),
		policy("internet", nil, networkingv1.NetworkPolicySpec{Egress: []networkingv1.NetworkPolicyEgressRule{egressTo(nil, cidr("0.0.0.0/0", "10.0.0.0/8"))}}),
		policy("db", nil, egressPolicy("", egressTo(nil, cidr("10.1.0.0/16")))),
		policy("half-a", nil, egressPolicy("", egressTo([]networkingv1.NetworkPolicyPort{tcp(443)}, cidr("0.0.0.0/1")))),
		policy("half-b", nil, egressPolicy("", egressTo([]networkingv1.NetworkPolicyPort{tcp(443)}, cidr("128.0.0.0/1")))),
		policy("ingress-any", nil, networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{}}}),
		policy("narrow-all", nil, egressPolicy("app=x", networkingv1.NetworkPolicyEgressRule{})),
		// Policies that open nothing the spec does not: not findings,
		// whoever made them and whatever their labels say.
		policy("allow-extra", p.Labels("team-a"), networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}),
		policy("dns-too", nil, egressPolicy("app=x", manifests.DNSEgressRule())),

		&corev1.Pod{ObjectMeta: om(ns, "host-kernel", nil)},
		&corev1.Pod{ObjectMeta: om(ns, "runc", nil), Spec: corev1.PodSpec{RuntimeClassName: ptr("runc")}},
	)
	// Paddock's default-deny edited in place to open egress: a field
	// Paddock never sets, so the stack diff cannot see it; the sweep does.
	dd := c.find(t, "NetworkPolicy", ns, manifests.DefaultDenyPolicy).(*networkingv1.NetworkPolicy)
	dd.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}}
	// The template's derived policy edited to reach the metadata server.
	derived := c.find(t, "NetworkPolicy", ns, manifests.TemplateNetworkPolicyName("python")).(*networkingv1.NetworkPolicy)
	derived.Spec.Egress = append(derived.Spec.Egress, egressTo([]networkingv1.NetworkPolicyPort{tcp(80)}, cidr("169.254.169.254/32")))
	// Guardrails: a binding whose namespaceSelector no longer selects the
	// tenant, a policy that skips requests, a binding gone.
	claims := c.find(t, "ValidatingAdmissionPolicyBinding", "", manifests.GuardrailName(p, p.Tenants[0], "claims")).(*admissionv1.ValidatingAdmissionPolicyBinding)
	claims.Spec.MatchResources.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "agents-team-a-old"}}
	pods := c.find(t, "ValidatingAdmissionPolicy", "", manifests.GuardrailName(p, p.Tenants[0], "pod-runtime")).(*admissionv1.ValidatingAdmissionPolicy)
	pods.Spec.MatchConditions = []admissionv1.MatchCondition{{Name: "not-mine", Expression: "!('skip' in object.metadata.labels)"}}
	c.remove(t, "ValidatingAdmissionPolicyBinding", "", manifests.GuardrailName(p, p.Tenants[0], "warmpools"))
	// Cilium: the world on 443 from a namespaced policy, and everything from
	// a clusterwide one; one that selects another namespace is not ours.
	c.dynamic = append(c.dynamic,
		ciliumPolicy(ns, "world", map[string]any{"endpointSelector": map[string]any{}, "egress": []any{map[string]any{
			"toEntities": []any{"world"}, "toPorts": []any{map[string]any{"ports": []any{map[string]any{"port": "443", "protocol": "TCP"}}}}}}}),
		ciliumPolicy(ns, "dns", map[string]any{"endpointSelector": map[string]any{}, "egress": []any{map[string]any{
			"toEndpoints": []any{map[string]any{"matchLabels": map[string]any{"k8s:io.kubernetes.pod.namespace": "kube-system", "k8s:k8s-app": "kube-dns"}}},
			"toPorts":     []any{map[string]any{"ports": []any{map[string]any{"port": "53", "protocol": "UDP"}}}}}}}),
		ciliumPolicy("", "everything", map[string]any{"endpointSelector": map[string]any{}, "egress": []any{map[string]any{"toEntities": []any{"all"}}}}),
		ciliumPolicy("", "not-ours", map[string]any{"endpointSelector": map[string]any{"matchLabels": map[string]any{"k8s:io.kubernetes.pod.namespace": "kube-system"}},
			"egress": []any{map[string]any{"toEntities": []any{"all"}}}}),
	)

	got := c.sweep(t, p)
	want := map[string]string{
		"RoleBinding agents-team-a/oops":                                 RuleAgentBinding,
		"RoleBinding default/elsewhere":                                  RuleAgentBinding,
		"ClusterRoleBinding all-sa":                                      RuleAgentBinding,
		"ClusterRoleBinding by-user":                                     RuleAgentBinding,
		"ClusterRoleBinding system:sneaky":                               RuleAgentBinding,
		"RoleBinding agents-team-a/peek":                                 RuleAgentBinding,
		"ClusterRoleBinding orchestrator-everywhere":                     RuleAgentBinding,
		"RoleBinding agents-team-a/ghost":                                RuleDanglingBinding,
		"NetworkPolicy agents-team-a/open":                               RuleNetworkOpen,
		"NetworkPolicy agents-team-a/internet":                           RuleNetworkOpen,
		"NetworkPolicy agents-team-a/db":                                 RuleNetworkOpen,
		"NetworkPolicy agents-team-a/half-a":                             RuleNetworkOpen,
		"NetworkPolicy agents-team-a/half-b":                             RuleNetworkOpen,
		"NetworkPolicy agents-team-a/ingress-any":                        RuleNetworkOpen,
		"NetworkPolicy agents-team-a/narrow-all":                         RuleNetworkOpen,
		"NetworkPolicy agents-team-a/" + dd.Name:                         RuleNetworkOpen,
		"NetworkPolicy agents-team-a/" + derived.Name:                    RuleNetworkOpen,
		"CiliumNetworkPolicy agents-team-a/world":                        RuleNetworkOpen,
		"CiliumClusterwideNetworkPolicy everything":                      RuleNetworkOpen,
		"ValidatingAdmissionPolicyBinding " + claims.Name:                RuleGuardrail,
		"ValidatingAdmissionPolicy " + pods.Name:                         RuleGuardrail,
		"ValidatingAdmissionPolicyBinding paddock-demo-team-a-warmpools": RuleGuardrail,
		"Pod agents-team-a/host-kernel":                                  RuleRuntimeMissing,
		"Pod agents-team-a/runc":                                         RuleRuntimeMissing,
	}
	have := map[string]Finding{}
	for _, f := range got {
		if _, dup := have[f.Object()]; dup {
			t.Errorf("%s reported twice", f.Object())
		}
		have[f.Object()] = f
	}
	for obj, rule := range want {
		if have[obj].Rule != rule {
			t.Errorf("%s: rule %q, want %q", obj, have[obj].Rule, rule)
		}
	}
	for obj, f := range have {
		if _, ok := want[obj]; !ok {
			t.Errorf("unexpected finding %s %s: %s", f.Rule, obj, f.Reason)
		}
	}
	// Each says what it opens.
	for obj, parts := range map[string][]string{
		"ClusterRoleBinding system:sneaky":                {"ClusterRole cluster-admin", "cluster-wide", "every verb on every resource of every group", "every verb on every non-resource URL", "system:authenticated"},
		"RoleBinding agents-team-a/peek":                  {"agent-orchestrator of tenant team-a {get secrets}", "in namespace agents-team-a"},
		"ClusterRoleBinding orchestrator-everywhere":      {"cluster-wide", "sandboxclaims.extensions.agents.x-k8s.io"},
		"RoleBinding agents-team-a/oops":                  {"agent-runtime of tenant team-a", "create pods/exec", "get", "secrets"},
		"RoleBinding agents-team-a/ghost":                 {"Role ghost, which does not exist", "agent-runtime of tenant team-a"},
		"NetworkPolicy agents-team-a/half-a":              {"egress from every pod to 0.0.0.0/1 on TCP 443"},
		"NetworkPolicy agents-team-a/half-b":              {"128.0.0.0/1 (including the metadata server 169.254.169.254) on TCP 443"},
		"NetworkPolicy agents-team-a/ingress-any":         {"ingress to every pod from any peer"},
		"NetworkPolicy agents-team-a/narrow-all":          {"egress from pods app=x to any peer"},
		"NetworkPolicy agents-team-a/" + derived.Name:     {"169.254.169.254/32", "TCP 80", "pods agents.x-k8s.io/sandbox-template-ref-hash=hpython"},
		"CiliumNetworkPolicy agents-team-a/world":         {"0.0.0.0/0", "::/0", "TCP 443"},
		"ValidatingAdmissionPolicyBinding " + claims.Name: {"namespaceSelector", "does not select namespace agents-team-a"},
		"ValidatingAdmissionPolicy " + pods.Name:          {"matchCondition not-mine"},
	} {
		for _, part := range parts {
			if !strings.Contains(have[obj].Reason, part) {
				t.Errorf("%s: reason lacks %q: %s", obj, part, have[obj].Reason)
			}
		}
	}
	if f := have["NetworkPolicy agents-team-a/"+derived.Name]; !strings.Contains(f.Fix, "Agent Sandbox controller recreates it from template python") {
		t.Errorf("derived policy fix: %s", f.Fix)
	}
	if f := have["NetworkPolicy agents-team-a/"+dd.Name]; !strings.Contains(f.Fix, "`paddock up` puts it back as declared") {
		t.Errorf("Paddock's own policy fix: %s", f.Fix)
	}
}

// Without Cilium's CRDs the sweep never lists their kinds (the dynamic fake
// would panic if it did) and says nothing about them.
func TestSweepWithoutCiliumCRDs(t *testing.T) {
	p := platform()
	c := afterUp(t, p)
	kube := fake.NewClientset(c.typed...)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		agentsandbox.SandboxClaims: "SandboxClaimList",
		agentsandbox.Sandboxes:     "SandboxList",
	})
	got, err := Sweep(context.Background(), p, kube, dyn)
	if err != nil || len(got) != 0 {
		t.Fatalf("sweep without Cilium: %v%s", err, describe(got))
	}
	if got, err := Sweep(context.Background(), p, kube, nil); err != nil || len(got) != 0 {
		t.Fatalf("sweep without a dynamic client: %v%s", err, describe(got))
	}
}

// A tenant that waives default deny leaves every pod but its sandboxes
// open: a policy over other pods takes nothing from the spec, one that
// opens the sandboxes does.
func TestSweepUnrestrictedTenant(t *testing.T) {
	p := platform()
	p.Tenants[0].Egress.Unrestricted = true
	ns := p.Tenants[0].Namespace
	c := afterUp(t, p)
	if got := c.sweep(t, p); len(got) != 0 {
		t.Fatalf("an untouched unrestricted tenant has findings:%s", describe(got))
	}
	notSandboxes := metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: sandboxv1beta1.SandboxTemplateRefHashLabel, Operator: metav1.LabelSelectorOpDoesNotExist}}}
	c.typed = append(c.typed,
		&networkingv1.NetworkPolicy{ObjectMeta: om(ns, "web", nil), Spec: networkingv1.NetworkPolicySpec{PodSelector: notSandboxes, Ingress: []networkingv1.NetworkPolicyIngressRule{{}}}},
		&networkingv1.NetworkPolicy{ObjectMeta: om(ns, "sandboxes-in", nil), Spec: networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{}}}},
		&networkingv1.NetworkPolicy{ObjectMeta: om(ns, "sandboxes-lan", nil), Spec: egressPolicy(sandboxv1beta1.SandboxTemplateRefHashLabel+"=hpython", egressTo(nil, cidr("10.0.0.0/8")))},
	)
	got := c.sweep(t, p)
	var names []string
	for _, f := range got {
		names = append(names, f.Name)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "sandboxes-in,sandboxes-lan" {
		t.Errorf("findings %v, want sandboxes-in and sandboxes-lan:%s", names, describe(got))
	}
}

// exampleSpecs are the example specs that decode, each a directory.
func exampleSpecs(t testing.TB) []string {
	dirs, err := filepath.Glob("../../examples/*")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range dirs {
		if hcl, _ := filepath.Glob(filepath.Join(d, "*.hcl")); len(hcl) > 0 {
			out = append(out, d)
		}
	}
	if len(out) < 5 {
		t.Fatalf("only %d example specs found: %v", len(out), out)
	}
	return out
}

func loadSpec(t testing.TB, dir string) *model.Platform { return spectest.Load(t, dir) }

// What Paddock declares never produces a finding: every example, the
// GKE ones with the orchestrator's metadata server hole and FQDN policies,
// the Cilium one, and the insecure one, whose waivers open the most.
func TestSweepExamplesDeclareNoFindings(t *testing.T) {
	sawOrchestratorHole := false
	kinds := map[string]int{}
	for _, dir := range exampleSpecs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			p := loadSpec(t, dir)
			for _, tn := range p.Tenants {
				sawOrchestratorHole = sawOrchestratorHole || p.OrchestratorNeedsMetadataServer(tn)
			}
			c := afterUp(t, p)
			for _, u := range c.dynamic {
				kinds[u.GetObjectKind().GroupVersionKind().Kind]++
			}
			if got := c.sweep(t, p); len(got) != 0 {
				t.Errorf("findings on the example as applied:%s", describe(got))
			}
			// The same cluster with one policy that opens egress: the
			// sweep does read this example's tenants.
			c.typed = append(c.typed, &networkingv1.NetworkPolicy{ObjectMeta: om(p.Tenants[0].Namespace, "extra", nil),
				Spec: egressPolicy("", egressTo(nil, cidr("192.0.2.0/24")))})
			if got := c.sweep(t, p); len(got) != 1 || got[0].Name != "extra" {
				t.Errorf("an extra policy opening 192.0.2.0/24 was not the one finding:%s", describe(got))
			}
		})
	}
	if !sawOrchestratorHole {
		t.Error("no example gives the orchestrator a workload identity: its metadata server hole went untested")
	}
	if kinds["CiliumNetworkPolicy"] == 0 || kinds["FQDNNetworkPolicy"] == 0 {
		t.Errorf("the examples declare FQDN policies of kinds %v; want Cilium's and GKE's judged", kinds)
	}
}

// The network analysis of a large platform: 100 tenants, 10 live policies
// each (the declared ones, the derived one, and foreign ones that open and
// that do not), judged against references built from manifests.Build.
func BenchmarkNetworkAnalysis(b *testing.B) {
	tpl := model.DefaultTemplate("python")
	tpl.Image, tpl.Command, tpl.RuntimeClass = "python:3.12-slim", []string{"sleep", "infinity"}, "gvisor"
	p := platform()
	p.Tenants = nil
	for i := range 100 {
		tn := model.DefaultTenant("team-" + string(rune('a'+i/26)) + string(rune('a'+i%26)))
		tn.Templates = []model.Template{tpl}
		tn.Egress.Allows = []model.EgressAllow{{CIDR: "0.0.0.0/0", Ports: []int32{443}}, {CIDR: "10.20.0.0/16", Ports: []int32{5432, 6379}}}
		p.Tenants = append(p.Tenants, tn)
	}
	built, err := manifests.Build(p)
	if err != nil {
		b.Fatal(err)
	}
	type live struct {
		ns       string
		policies []networkingv1.NetworkPolicySpec
	}
	var lives []live
	for _, tp := range built.Tenants {
		l := live{ns: tp.Tenant.Namespace}
		for _, u := range tp.Egress {
			var np networkingv1.NetworkPolicy
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &np); err != nil {
				b.Fatal(err)
			}
			l.policies = append(l.policies, np.Spec)
		}
		l.policies = append(l.policies, derivedPolicy(b, tp.Templates[0].Object).Spec,
			egressPolicy("", egressTo([]networkingv1.NetworkPolicyPort{tcp(443)}, cidr("0.0.0.0/1")), egressTo([]networkingv1.NetworkPolicyPort{tcp(443)}, cidr("128.0.0.0/1"))),
			egressPolicy("app=x", egressTo([]networkingv1.NetworkPolicyPort{tcpRange(5000, 7000)}, cidr("10.20.0.0/16"))),
			networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{}}},
			egressPolicy("app=y", manifests.DNSEgressRule()),
		)
		for len(l.policies) < 10 {
			l.policies = append(l.policies, egressPolicy("app=z", egressTo([]networkingv1.NetworkPolicyPort{tcp(443)}, cidr("203.0.113.0/24"))))
		}
		lives = append(lives, l)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		gaps := 0
		for i, tp := range built.Tenants {
			declared, err := declaredNetwork(tp)
			if err != nil {
				b.Fatal(err)
			}
			tn := &tenantNetwork{tenant: tp.Tenant, declared: declared}
			for _, spec := range lives[i].policies {
				gaps += len(tn.gaps(networkPolicyEffect(spec, lives[i].ns, liveSide)))
			}
		}
		if gaps == 0 {
			b.Fatal("nothing found")
		}
	}
}
