package manifests

import (
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/paddock-platform/paddock/internal/model"
)

const orchestratorIdentity = `  identity {
    workload_identity "orchestrator" { roles = ["roles/storage.objectViewer"] }
  }`

// admits evaluates a ValidatingAdmissionPolicy expression on object the way
// the API server does (CEL over the object as JSON; an evaluation error
// denies, the policies being failurePolicy Fail).
func admits(t *testing.T, expr string, object map[string]any) bool {
	t.Helper()
	env, err := cel.NewEnv(cel.Variable("object", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		t.Fatalf("%q does not compile: %v", expr, iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := prg.Eval(map[string]any{"object": object})
	if err != nil {
		return false
	}
	v, ok := out.Value().(bool)
	return ok && v
}

// admitsAll is true when every validation of the guardrail named what admits
// object.
func admitsAll(t *testing.T, p *model.Platform, tn model.Tenant, what string, object map[string]any) bool {
	t.Helper()
	for _, g := range Guardrails(p, tn) {
		if g.Policy.Name != GuardrailName(p, tn, what) {
			continue
		}
		for _, v := range g.Policy.Spec.Validations {
			if !admits(t, v.Expression, object) {
				return false
			}
		}
		return true
	}
	t.Fatalf("no guardrail %s", what)
	return false
}

func pod(lbls map[string]string, sa string) map[string]any {
	md := map[string]any{"name": "p", "namespace": "agents-t"}
	if lbls != nil {
		l := map[string]any{}
		for k, v := range lbls {
			l[k] = v
		}
		md["labels"] = l
	}
	spec := map[string]any{"containers": []any{map[string]any{"name": "c", "image": "x"}}}
	if sa != "" {
		spec["serviceAccountName"] = sa
	}
	return map[string]any{"metadata": md, "spec": spec}
}

// The orchestrator's pods get exactly the metadata server hole (TCP 80 to
// 169.254.169.254/32) when the orchestrator has a workload identity, and no
// sandbox pod is ever selected by it: Paddock's templates do not carry the
// label, and the guardrails refuse it on every path by which a sandbox pod
// could get it (the pod itself, a Sandbox or SandboxTemplate, a claim's
// additionalPodMetadata, which the orchestrator writes) and on every pod that
// does not run as the orchestrator.
func TestOrchestratorMetadataHoleSelectsNoSandbox(t *testing.T) {
	p := loadGKE(t, orchestratorIdentity, "")
	tn := p.Tenants[0]
	pols, err := NetworkPolicies(p, tn)
	if err != nil {
		t.Fatal(err)
	}
	var np *networkingv1.NetworkPolicy
	for _, pol := range pols {
		if pol.Name == AllowOrchestratorMetadataServerPolicy {
			np = pol
		}
		if pol.Name == AllowMetadataServerPolicy {
			t.Errorf("the sandboxes' metadata hole is open, though only the orchestrator has a workload identity")
		}
	}
	if np == nil {
		t.Fatalf("no %s among %d policies", AllowOrchestratorMetadataServerPolicy, len(pols))
	}
	eg := np.Spec.Egress
	if len(eg) != 1 || len(eg[0].To) != 1 || eg[0].To[0].IPBlock == nil || eg[0].To[0].IPBlock.CIDR != "169.254.169.254/32" ||
		len(eg[0].To[0].IPBlock.Except) != 0 || eg[0].To[0].PodSelector != nil || eg[0].To[0].NamespaceSelector != nil ||
		len(eg[0].Ports) != 1 || string(*eg[0].Ports[0].Protocol) != "TCP" || eg[0].Ports[0].Port.IntValue() != 80 || eg[0].Ports[0].EndPort != nil {
		t.Errorf("egress %+v, want exactly TCP 80 to 169.254.169.254/32", eg)
	}
	if len(np.Spec.Ingress) != 0 || len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeEgress {
		t.Errorf("policy types %v, ingress %v", np.Spec.PolicyTypes, np.Spec.Ingress)
	}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil || sel.Empty() {
		t.Fatalf("pod selector %v (%v) selects every pod", np.Spec.PodSelector, err)
	}
	orchestrator := labels.Set{"app": "orchestrator"}
	for k, v := range OrchestratorPodLabels() {
		orchestrator[k] = v
	}
	if !sel.Matches(orchestrator) {
		t.Errorf("the orchestrator's pods (%v) are not selected", orchestrator)
	}

	// Every sandbox pod starts from one of Paddock's templates: none is selected.
	for _, tpl := range tn.Templates {
		st, err := SandboxTemplate(p, tn, tpl)
		if err != nil {
			t.Fatal(err)
		}
		if l := labels.Set(st.Spec.PodTemplate.ObjectMeta.Labels); sel.Matches(l) {
			t.Errorf("template %s's pods (%v) are selected", tpl.Name, l)
		}
		u, err := ToUnstructured(st)
		if err != nil {
			t.Fatal(err)
		}
		if !admitsAll(t, p, tn, "orchestrator-sandboxes", u.Object) {
			t.Errorf("Paddock's own template %s is refused", tpl.Name)
		}
	}

	// Pods: the label only with the orchestrator's account.
	label := OrchestratorPodLabels()
	for _, c := range []struct {
		name   string
		labels map[string]string
		sa     string
		want   bool
	}{
		{"orchestrator", label, model.AgentOrchestratorServiceAccount, true},
		{"sandbox pod", label, model.AgentRuntimeServiceAccount, false},
		{"no account", label, "", false},
		{"other value", map[string]string{IdentityLabel: "x"}, model.AgentOrchestratorServiceAccount, false},
		{"unlabelled sandbox", map[string]string{"app": "s"}, model.AgentRuntimeServiceAccount, true},
		{"no labels", nil, model.AgentRuntimeServiceAccount, true},
	} {
		if got := admitsAll(t, p, tn, "orchestrator-pods", pod(c.labels, c.sa)); got != c.want {
			t.Errorf("pod %s: admitted %v, want %v", c.name, got, c.want)
		}
	}

	// Sandboxes and templates: never the label, never the orchestrator's account.
	sandbox := func(lbls map[string]any, sa string) map[string]any {
		pt := map[string]any{"spec": map[string]any{"containers": []any{}}}
		if lbls != nil {
			pt["metadata"] = map[string]any{"labels": lbls}
		}
		if sa != "" {
			pt["spec"].(map[string]any)["serviceAccountName"] = sa
		}
		return map[string]any{"metadata": map[string]any{"name": "s"}, "spec": map[string]any{"podTemplate": pt}}
	}
	for _, c := range []struct {
		name string
		obj  map[string]any
		want bool
	}{
		{"labelled", sandbox(map[string]any{IdentityLabel: model.AgentOrchestratorServiceAccount}, model.AgentRuntimeServiceAccount), false},
		{"as orchestrator", sandbox(nil, model.AgentOrchestratorServiceAccount), false},
		{"plain", sandbox(map[string]any{"a": "b"}, model.AgentRuntimeServiceAccount), true},
		{"no metadata", sandbox(nil, ""), true},
	} {
		if got := admitsAll(t, p, tn, "orchestrator-sandboxes", c.obj); got != c.want {
			t.Errorf("sandbox %s: admitted %v, want %v", c.name, got, c.want)
		}
	}

	// Claims: the orchestrator may not label its sandbox into the hole.
	claim := func(apm map[string]any) map[string]any {
		spec := map[string]any{"sandboxTemplateRef": map[string]any{"name": "x"}}
		if apm != nil {
			spec["additionalPodMetadata"] = apm
		}
		return map[string]any{"metadata": map[string]any{"name": "c"}, "spec": spec}
	}
	for _, c := range []struct {
		name string
		obj  map[string]any
		want bool
	}{
		{"labelled", claim(map[string]any{"labels": map[string]any{IdentityLabel: model.AgentOrchestratorServiceAccount}}), false},
		{"other labels", claim(map[string]any{"labels": map[string]any{"session": "42"}}), true},
		{"annotations only", claim(map[string]any{"annotations": map[string]any{"a": "b"}}), true},
		{"none", claim(nil), true},
	} {
		if got := admitsAll(t, p, tn, "orchestrator-claims", c.obj); got != c.want {
			t.Errorf("claim %s: admitted %v, want %v", c.name, got, c.want)
		}
	}
}

// Without a workload identity of the orchestrator, or without Dataplane V2
// or Workload Identity on the cluster, there is no orchestrator hole and no
// guardrail for it.
func TestOrchestratorMetadataHoleOnlyWithItsIdentity(t *testing.T) {
	for name, p := range map[string]*model.Platform{
		"no identity": loadGKE(t, "", ""),
		"agent identity only": loadGKE(t, `  identity {
    workload_identity "agent" { roles = ["roles/aiplatform.user"] }
  }`, ""),
		"no workload identity": loadGKE(t, orchestratorIdentity, "workload_identity = false"),
		"no dataplane v2":      loadGKE(t, orchestratorIdentity, "dataplane_v2 = false"),
	} {
		tn := p.Tenants[0]
		pols, err := NetworkPolicies(p, tn)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, pol := range pols {
			if pol.Name == AllowOrchestratorMetadataServerPolicy {
				t.Errorf("%s: the orchestrator's metadata hole is open", name)
			}
		}
		for _, g := range Guardrails(p, tn) {
			if strings.Contains(g.Policy.Name, "orchestrator-") {
				t.Errorf("%s: guardrail %s", name, g.Policy.Name)
			}
		}
	}
}
