package drift

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/paddock-platform/paddock/manifests"
	"github.com/paddock-platform/paddock/model"
	"github.com/paddock-platform/paddock/pins"
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
		`RoleBinding agents-team-a/oops|x  [S01 binding grants the agent identity rights]`,
		`3 drifted resources, 1 object outside the stack weakens the platform`,
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
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
		AgentSandbox:   model.AgentSandboxRelease{Version: pins.AgentSandbox},
		RuntimeClasses: []model.RuntimeClass{{Name: "gvisor", Handler: "runsc"}},
		Tenants:        []model.Tenant{tenant},
	}
}

func om(ns, name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}
}

func TestSweep(t *testing.T) {
	p := platform()
	ns := p.Tenants[0].Namespace
	var objs []runtime.Object
	// What the platform itself has: nothing of it is a finding.
	pols, err := manifests.NetworkPolicies(p, p.Tenants[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, np := range pols {
		objs = append(objs, np)
	}
	yes := true
	derived := &networkingv1.NetworkPolicy{ObjectMeta: om(ns, "python-network-policy", nil),
		Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{manifests.DNSEgressRule()}}}
	derived.OwnerReferences = []metav1.OwnerReference{{APIVersion: "extensions.agents.x-k8s.io/v1beta1", Kind: "SandboxTemplate", Name: "python", Controller: &yes}}
	gvisor := "gvisor"
	objs = append(objs,
		derived,
		&corev1.Pod{ObjectMeta: om(ns, "sandbox-1", nil), Spec: corev1.PodSpec{RuntimeClassName: &gvisor}},
		&corev1.Pod{ObjectMeta: om(ns, "done", nil), Status: corev1.PodStatus{Phase: corev1.PodSucceeded}},
		// The API server's own defaults bind system:authenticated: not a finding.
		&rbacv1.ClusterRoleBinding{ObjectMeta: om("", "system:basic-user", map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}),
			RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: "system:basic-user"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "system:authenticated"}}},
		// The orchestrator's binding names another account.
		&rbacv1.RoleBinding{ObjectMeta: om(ns, "agent-orchestrator", p.Labels("team-a")), RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "agent-orchestrator"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: model.AgentOrchestratorServiceAccount, Namespace: ns}}},
	)
	kube := fake.NewClientset(objs...)
	got, err := Sweep(context.Background(), p, kube)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("an untouched platform has findings: %+v", got)
	}

	// Now what weakens it.
	bad := []runtime.Object{
		&rbacv1.RoleBinding{ObjectMeta: om(ns, "oops", nil), RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "edit"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "agent-runtime"}}}, // namespace defaults to the binding's
		&rbacv1.RoleBinding{ObjectMeta: om("default", "elsewhere", nil), RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "system:serviceaccounts:" + ns}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: om("", "all-sa", nil), RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "system:serviceaccounts"}}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: om("", "by-user", nil), RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "admin"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: "system:serviceaccount:" + ns + ":agent-runtime"}}},
		&networkingv1.NetworkPolicy{ObjectMeta: om(ns, "open", nil), Spec: networkingv1.NetworkPolicySpec{
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}, Egress: []networkingv1.NetworkPolicyEgressRule{{}}}},
		&networkingv1.NetworkPolicy{ObjectMeta: om(ns, "internet", nil), Spec: networkingv1.NetworkPolicySpec{
			Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{"10.0.0.0/8"}}}}}}}},
		&networkingv1.NetworkPolicy{ObjectMeta: om(ns, "db", nil), Spec: networkingv1.NetworkPolicySpec{
			Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.1.0.0/16"}}}}}}},
		// A Paddock-looking policy the spec does not declare.
		&networkingv1.NetworkPolicy{ObjectMeta: om(ns, "allow-extra", p.Labels("team-a")), Spec: networkingv1.NetworkPolicySpec{
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}},
		&corev1.Pod{ObjectMeta: om(ns, "host-kernel", nil)},
		&corev1.Pod{ObjectMeta: om(ns, "runc", nil), Spec: corev1.PodSpec{RuntimeClassName: ptr("runc")}},
	}
	// Paddock's default-deny edited in place to open egress: a field Paddock
	// never sets, so the stack diff cannot see it; the sweep does.
	dd := pols[0].DeepCopy()
	dd.Spec.Egress = []networkingv1.NetworkPolicyEgressRule{{}}
	objs[0] = dd
	kube = fake.NewClientset(append(objs, bad...)...)
	got, err = Sweep(context.Background(), p, kube)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"RoleBinding agents-team-a/oops":          RuleAgentBinding,
		"RoleBinding default/elsewhere":           RuleAgentBinding,
		"ClusterRoleBinding all-sa":               RuleAgentBinding,
		"ClusterRoleBinding by-user":              RuleAgentBinding,
		"NetworkPolicy agents-team-a/open":        RuleEgressOpen,
		"NetworkPolicy agents-team-a/internet":    RuleEgressOpen,
		"NetworkPolicy agents-team-a/db":          RuleForeignNetpol,
		"NetworkPolicy agents-team-a/allow-extra": RuleForeignNetpol,
		"NetworkPolicy agents-team-a/" + dd.Name:  RuleEgressOpen,
		"Pod agents-team-a/host-kernel":           RuleRuntimeMissing,
		"Pod agents-team-a/runc":                  RuleRuntimeMissing,
	}
	have := map[string]string{}
	for _, f := range got {
		have[f.Object()] = f.Rule
		if f.Reason == "" || f.Fix == "" || f.Title == "" {
			t.Errorf("%s: empty reason, fix or title: %+v", f.Object(), f)
		}
	}
	for obj, rule := range want {
		if have[obj] != rule {
			t.Errorf("%s: rule %q, want %q", obj, have[obj], rule)
		}
	}
	for obj, rule := range have {
		if _, ok := want[obj]; !ok {
			t.Errorf("unexpected finding %s %s", rule, obj)
		}
	}
}

func ptr(s string) *string { return &s }
