package components

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/paddock-platform/paddock/components/internal/k8sres"
	"github.com/paddock-platform/paddock/components/internal/proppath"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/pins"
	"github.com/paddock-platform/paddock/internal/render"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// registered is one resource the program registered, as the mocks saw it.
type registered struct {
	typ, name string
	inputs    resource.PropertyMap
}

type mocks struct {
	mu  sync.Mutex
	all []registered
}

func (m *mocks) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	m.mu.Lock()
	m.all = append(m.all, registered{typ: args.TypeToken, name: args.Name, inputs: args.Inputs})
	m.mu.Unlock()
	return args.Name + "_id", args.Inputs, nil
}

func (m *mocks) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return args.Args, nil
}

func (m *mocks) find(t *testing.T, typ, name string) resource.PropertyMap {
	t.Helper()
	for _, r := range m.all {
		if r.typ == typ && r.name == name {
			return r.inputs
		}
	}
	t.Fatalf("no %s %q registered; have:\n%s", typ, name, m.list())
	return nil
}

func (m *mocks) has(typ, name string) bool {
	for _, r := range m.all {
		if r.typ == typ && r.name == name {
			return true
		}
	}
	return false
}

func (m *mocks) list() string {
	var b strings.Builder
	for _, r := range m.all {
		fmt.Fprintf(&b, "  %s %s\n", r.typ, r.name)
	}
	return b.String()
}

func testPlatform(target model.TargetKind) *model.Platform {
	tpl := model.DefaultTemplate("python")
	tpl.Image, tpl.Command, tpl.RuntimeClass = "python:3.12-slim", []string{"sleep", "infinity"}, "gvisor"
	tenant := model.DefaultTenant("team-a")
	tenant.Templates = []model.Template{tpl}
	tenant.WarmPools = []model.WarmPool{{Name: "python", Template: "python", Replicas: 2}}
	tenant.Egress.Allows = []model.EgressAllow{{CIDR: "0.0.0.0/0", Ports: []int32{443}}}
	tenant.Egress.FQDNs = []string{"api.example-llm.com"}
	return &model.Platform{
		Name:         "demo",
		Target:       model.Target{Kind: target, Kubeconfig: "/dev/null"},
		AgentSandbox: model.AgentSandboxRelease{Version: pins.AgentSandbox, Image: pins.AgentSandboxImage + ":" + pins.AgentSandbox},
		RuntimeClasses: []model.RuntimeClass{{
			Name: "gvisor", Handler: "runsc",
			NodeSelector: map[string]string{"sandbox.gke.io/runtime": "gvisor"},
			Tolerations:  []model.Toleration{{Key: "sandbox.gke.io/runtime", Operator: "Equal", Value: "gvisor", Effect: "NoSchedule"}},
		}},
		Tenants: []model.Tenant{tenant},
	}
}

func run(t *testing.T, p *model.Platform) *mocks {
	t.Helper()
	m := &mocks{}
	runWith(t, p, m)
	return m
}

// runWith runs p's program on the mock monitor m.
func runWith(t *testing.T, p *model.Platform, m pulumi.MockResourceMonitor) {
	t.Helper()
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		_, err := NewPlatform(ctx, p.Name, &PlatformArgs{Platform: p})
		return err
	}, pulumi.WithMocks("paddock", "test", m))
	if err != nil {
		t.Fatal(err)
	}
}

// get walks a property path ("metadata.labels[app.kubernetes.io/name]", "spec.containers.0.image").
func get(t *testing.T, pm resource.PropertyMap, path string) resource.PropertyValue {
	t.Helper()
	v := resource.NewObjectProperty(pm)
	for _, part := range proppath.Split(path) {
		switch {
		case v.IsObject():
			v = v.ObjectValue()[resource.PropertyKey(part)]
		case v.IsArray():
			var i int
			if _, err := fmt.Sscan(part, &i); err != nil || i >= len(v.ArrayValue()) {
				t.Fatalf("%s: no element %s", path, part)
			}
			v = v.ArrayValue()[i]
		default:
			t.Fatalf("%s: %s is not reachable", path, part)
		}
	}
	return v
}

func wantString(t *testing.T, pm resource.PropertyMap, path, want string) {
	t.Helper()
	v := get(t, pm, path)
	if !v.IsString() || v.StringValue() != want {
		t.Errorf("%s = %v, want %q", path, v, want)
	}
}

func wantBool(t *testing.T, pm resource.PropertyMap, path string, want bool) {
	t.Helper()
	v := get(t, pm, path)
	if !v.IsBool() || v.BoolValue() != want {
		t.Errorf("%s = %v, want %v", path, v, want)
	}
}

func wantNumber(t *testing.T, pm resource.PropertyMap, path string, want float64) {
	t.Helper()
	v := get(t, pm, path)
	if !v.IsNumber() || v.NumberValue() != want {
		t.Errorf("%s = %v, want %v", path, v, want)
	}
}

func TestComponentTypeTokensAndTree(t *testing.T) {
	m := run(t, testPlatform(model.TargetLocal))
	for _, want := range []struct{ typ, name string }{
		{"paddock:index:Platform", "demo"},
		{"paddock:agentsandbox:Release", "agent-sandbox"},
		{"paddock:runtime:RuntimeClass", "gvisor"},
		{"paddock:tenant:Tenant", "team-a"},
		{"paddock:sandbox:Template", "team-a/python"},
		{"paddock:sandbox:WarmPool", "team-a/python"},
		{"paddock:tenant:Identity", "team-a"},
		{"paddock:network:Egress", "team-a"},
		{"paddock:policy:Guardrails", "team-a"},
	} {
		m.find(t, want.typ, want.name)
	}
}

func TestTenantNamespaceIsRestricted(t *testing.T) {
	m := run(t, testPlatform(model.TargetLocal))
	ns := m.find(t, "kubernetes:core/v1:Namespace", "agents-team-a")
	for _, mode := range []string{"enforce", "audit", "warn"} {
		wantString(t, ns, "metadata.labels[pod-security.kubernetes.io/"+mode+"]", "restricted")
	}
	wantString(t, ns, "metadata.labels[app.kubernetes.io/managed-by]", "paddock")
	wantString(t, ns, "metadata.labels[paddock.dev/tenant]", "team-a")
}

func TestAgentRuntimeIdentityMountsNoToken(t *testing.T) {
	m := run(t, testPlatform(model.TargetLocal))
	sa := m.find(t, "kubernetes:core/v1:ServiceAccount", "agents-team-a/agent-runtime")
	wantBool(t, sa, "automountServiceAccountToken", false)
	for _, r := range m.all {
		if strings.Contains(r.typ, "RoleBinding") && strings.Contains(fmt.Sprint(r.inputs.Mappable()), "agent-runtime") {
			t.Errorf("%s %s binds agent-runtime: it must have no permissions", r.typ, r.name)
		}
	}
}

func TestRuntimeClassSchedulesOntoSandboxNodes(t *testing.T) {
	m := run(t, testPlatform(model.TargetLocal))
	rc := m.find(t, "kubernetes:node.k8s.io/v1:RuntimeClass", "gvisor")
	wantString(t, rc, "handler", "runsc")
	wantString(t, rc, "scheduling.nodeSelector[sandbox.gke.io/runtime]", "gvisor")
	wantString(t, rc, "scheduling.tolerations.0.key", "sandbox.gke.io/runtime")
	wantString(t, rc, "scheduling.tolerations.0.effect", "NoSchedule")
}

func TestSandboxTemplateIsHardened(t *testing.T) {
	m := run(t, testPlatform(model.TargetLocal))
	tpl := m.find(t, "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxTemplate", "agents-team-a/python")
	pod := "spec.podTemplate.spec."
	wantString(t, tpl, pod+"runtimeClassName", "gvisor")
	wantString(t, tpl, pod+"serviceAccountName", "agent-runtime")
	wantBool(t, tpl, pod+"automountServiceAccountToken", false)
	wantBool(t, tpl, pod+"securityContext.runAsNonRoot", true)
	wantNumber(t, tpl, pod+"securityContext.runAsUser", 10001)
	wantString(t, tpl, pod+"securityContext.seccompProfile.type", "RuntimeDefault")
	c := pod + "containers.0."
	wantBool(t, tpl, c+"securityContext.allowPrivilegeEscalation", false)
	wantBool(t, tpl, c+"securityContext.privileged", false)
	wantBool(t, tpl, c+"securityContext.readOnlyRootFilesystem", true)
	wantString(t, tpl, c+"securityContext.capabilities.drop.0", "ALL")
	for _, r := range []string{"cpu", "memory", "ephemeral-storage"} {
		if v := get(t, tpl, c+"resources.limits."+r); !v.IsString() || v.StringValue() == "" {
			t.Errorf("limit %s missing: %v", r, v)
		}
	}
	wantString(t, tpl, c+"resources.limits.ephemeral-storage", "2Gi")
	wantString(t, tpl, pod+"volumes.0.emptyDir.sizeLimit", "512Mi")
	wantString(t, tpl, "spec.networkPolicyManagement", "Managed")
}

func TestWarmPoolReferencesOwnTemplateAndWaitsReady(t *testing.T) {
	m := run(t, testPlatform(model.TargetLocal))
	wp := m.find(t, "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxWarmPool", "agents-team-a/python")
	wantNumber(t, wp, "spec.replicas", 2)
	wantString(t, wp, "spec.sandboxTemplateRef.name", "python")
	wantString(t, wp, "metadata.namespace", "agents-team-a")
	wantString(t, wp, "metadata.annotations[pulumi.com/waitFor]", "jsonpath={.status.readyReplicas}=2")
}

func TestAgentSandboxReleaseIsPinned(t *testing.T) {
	for _, tc := range []struct {
		target   model.TargetKind
		replicas float64
	}{{model.TargetLocal, 0}, {model.TargetKubeconfig, 1}} {
		t.Run(string(tc.target), func(t *testing.T) {
			m := run(t, testPlatform(tc.target))
			dep := m.find(t, "kubernetes:apps/v1:Deployment", "agent-sandbox-system/agent-sandbox-controller")
			wantString(t, dep, "spec.template.spec.containers.0.image", pins.AgentSandboxImage+":"+pins.AgentSandbox)
			wantNumber(t, dep, "spec.replicas", tc.replicas)
			for _, crd := range []string{"sandboxes.agents.x-k8s.io", "sandboxclaims.extensions.agents.x-k8s.io",
				"sandboxtemplates.extensions.agents.x-k8s.io", "sandboxwarmpools.extensions.agents.x-k8s.io"} {
				c := m.find(t, "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition", crd)
				wantString(t, c, "metadata.labels[app.kubernetes.io/managed-by]", "paddock")
			}
		})
	}
}

func TestEveryObjectCarriesOwnershipLabels(t *testing.T) {
	m := run(t, testPlatform(model.TargetLocal))
	n := 0
	for _, r := range m.all {
		if !strings.HasPrefix(r.typ, "kubernetes:") || r.typ == "pulumi:providers:kubernetes" {
			continue
		}
		n++
		wantString(t, r.inputs, "metadata.labels[app.kubernetes.io/managed-by]", "paddock")
		wantString(t, r.inputs, "metadata.labels[paddock.dev/platform]", "demo")
	}
	if n < 15 {
		t.Fatalf("only %d kubernetes objects registered", n)
	}
}

func TestTypeToken(t *testing.T) {
	for in, want := range map[[2]string]string{
		{"v1", "Namespace"}:                                       "kubernetes:core/v1:Namespace",
		{"rbac.authorization.k8s.io/v1", "Role"}:                  "kubernetes:rbac.authorization.k8s.io/v1:Role",
		{"extensions.agents.x-k8s.io/v1beta1", "SandboxWarmPool"}: "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxWarmPool",
		{"apiextensions.k8s.io/v1", "CustomResourceDefinition"}:   "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition",
	} {
		if got := k8sres.TypeToken(in[0], in[1]); got != want {
			t.Errorf("k8sres.TypeToken(%q, %q) = %q, want %q", in[0], in[1], got, want)
		}
	}
}

// normalise round-trips a value through JSON so numbers and maps compare equal
// whichever side produced them.
func normalise(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The components register exactly the objects `render` writes: same set, same
// content (render only drops Pulumi's own pulumi.com/* annotations).
func TestComponentsRegisterExactlyTheRenderedObjects(t *testing.T) {
	for _, target := range []model.TargetKind{model.TargetLocal, model.TargetKubeconfig} {
		t.Run(string(target), func(t *testing.T) {
			p := testPlatform(target)
			m := run(t, p)
			want, err := render.All(p)
			if err != nil {
				t.Fatal(err)
			}
			registered := map[string]resource.PropertyMap{}
			for _, r := range m.all {
				if strings.HasPrefix(r.typ, "kubernetes:") {
					registered[r.typ+" "+r.name] = r.inputs
				}
			}
			if len(registered) != len(want) {
				t.Errorf("components registered %d objects, render has %d", len(registered), len(want))
			}
			for _, u := range want {
				key := k8sres.TypeToken(u.GetAPIVersion(), u.GetKind()) + " " + k8sres.Name(u)
				in, ok := registered[key]
				if !ok {
					t.Errorf("render has %s, the components did not register it", key)
					continue
				}
				reg := &unstructured.Unstructured{Object: in.Mappable()}
				got, exp := normalise(t, render.Clean(reg).Object), normalise(t, render.Clean(u).Object)
				if !reflect.DeepEqual(got, exp) {
					t.Errorf("%s differs between up and render:\n up:     %v\n render: %v", key, got, exp)
				}
			}
		})
	}
}

func TestTenantFenceCapsTheFleet(t *testing.T) {
	m := run(t, testPlatform(model.TargetLocal))
	q := m.find(t, "kubernetes:core/v1:ResourceQuota", "agents-team-a/tenant-quota")
	wantString(t, q, "spec.hard.pods", "20")
	wantString(t, q, "spec.hard[limits.cpu]", "8")
	wantString(t, q, "spec.hard[limits.memory]", "16Gi")
	wantString(t, q, "spec.hard[limits.ephemeral-storage]", "20Gi")
	wantString(t, q, "spec.hard[count/persistentvolumeclaims]", "20")
	lr := m.find(t, "kubernetes:core/v1:LimitRange", "agents-team-a/tenant-defaults")
	wantString(t, lr, "spec.limits.0.type", "Container")
	wantString(t, lr, "spec.limits.0.default.ephemeral-storage", "2Gi")
	wantString(t, lr, "spec.limits.0.defaultRequest.cpu", "250m")
}

func TestOrchestratorRoleIsScopedToClaimsAndSandboxes(t *testing.T) {
	m := run(t, testPlatform(model.TargetLocal))
	role := m.find(t, "kubernetes:rbac.authorization.k8s.io/v1:Role", "agents-team-a/agent-orchestrator")
	rules := get(t, role, "rules").ArrayValue()
	if len(rules) != 2 {
		t.Fatalf("orchestrator role has %d rules, want 2", len(rules))
	}
	wantString(t, role, "rules.0.resources.0", "sandboxclaims")
	if got := len(get(t, role, "rules.0.verbs").ArrayValue()); got != 5 {
		t.Errorf("claims verbs: %d, want create/get/list/watch/delete", got)
	}
	wantString(t, role, "rules.1.resources.0", "sandboxes")
	if got := len(get(t, role, "rules.1.verbs").ArrayValue()); got != 3 {
		t.Errorf("sandbox verbs: %d, want get/list/watch", got)
	}
	rb := m.find(t, "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "agents-team-a/agent-orchestrator")
	wantString(t, rb, "subjects.0.name", "agent-orchestrator")
	wantString(t, rb, "roleRef.kind", "Role")
}

func TestNetworkFenceDeniesByDefault(t *testing.T) {
	m := run(t, testPlatform(model.TargetLocal))
	deny := m.find(t, "kubernetes:networking.k8s.io/v1:NetworkPolicy", "agents-team-a/default-deny")
	if n := len(get(t, deny, "spec.policyTypes").ArrayValue()); n != 2 {
		t.Errorf("default-deny policyTypes: %d, want Ingress and Egress", n)
	}
	if v := get(t, deny, "spec.podSelector"); !v.IsObject() || len(v.ObjectValue()) != 0 {
		t.Errorf("default-deny must select every pod: %v", v)
	}
	// The tenant lists FQDNs on a Cilium target: its DNS rule is the
	// CiliumNetworkPolicy's (below), never an L4 allow that would widen it.
	if m.has("kubernetes:networking.k8s.io/v1:NetworkPolicy", "agents-team-a/allow-dns") {
		t.Error("allow-dns NetworkPolicy registered beside the CiliumNetworkPolicy's DNS rule")
	}
	allow := m.find(t, "kubernetes:networking.k8s.io/v1:NetworkPolicy", "agents-team-a/allow-egress")
	wantString(t, allow, "spec.egress.0.to.0.ipBlock.except.0", "169.254.169.254/32")
	wantNumber(t, allow, "spec.egress.0.ports.0.port", 443)
	cnp := m.find(t, "kubernetes:cilium.io/v2:CiliumNetworkPolicy", "agents-team-a/allow-fqdn")
	wantString(t, cnp, "spec.egress.1.toEndpoints.0.matchLabels.k8s:k8s-app", "kube-dns")
	wantString(t, cnp, "spec.egress.1.toPorts.0.ports.0.port", "53")
	wantString(t, cnp, "spec.egress.0.toFQDNs.0.matchName", "api.example-llm.com")
	wantString(t, cnp, "spec.egress.0.toPorts.0.ports.0.port", "443")
	// The DNS proxy answers the listed names and the cluster domain, no other.
	wantString(t, cnp, "spec.egress.1.toPorts.0.rules.dns.0.matchName", "api.example-llm.com")
	wantString(t, cnp, "spec.egress.1.toPorts.0.rules.dns.1.matchPattern", "**.cluster.local")
	for _, r := range m.all {
		if strings.Contains(r.typ, "NetworkPolicy") && strings.Contains(fmt.Sprint(r.inputs.Mappable()), "port:80 ") {
			t.Errorf("%s %s opens port 80", r.typ, r.name)
		}
	}
}

func TestGuardrailsHoldAfterPaddockExits(t *testing.T) {
	m := run(t, testPlatform(model.TargetLocal))
	claims := m.find(t, "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", "paddock-demo-team-a-claims")
	wantString(t, claims, "spec.failurePolicy", "Fail")
	exprs := fmt.Sprint(get(t, claims, "spec.validations").Mappable())
	for _, want := range []string{"ttlSecondsAfterFinished", "shutdownPolicy == 'Delete'", "<= 14400", "variables.shutdownTime != ''", "+ duration('14400s')"} {
		if !strings.Contains(exprs, want) {
			t.Errorf("claims policy lacks %q: %s", want, exprs)
		}
	}
	// The max_ttl rules read the policy's variables: they must be registered too.
	wantString(t, claims, "spec.variables.0.name", "ttl")
	wantString(t, claims, "spec.variables.4.name", "shutdownTime")
	wantString(t, claims, "spec.variables.6.expression", "oldObject == null || variables.shutdownTime != variables.previousShutdownTime")
	// A Sandbox opened without a claim is held to max_ttl too.
	lifetime := m.find(t, "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", "paddock-demo-team-a-sandbox-lifetime")
	wantString(t, lifetime, "spec.variables.0.name", "owned")
	if exprs := fmt.Sprint(get(t, lifetime, "spec.validations").Mappable()); !strings.Contains(exprs, "+ duration('14400s')") {
		t.Errorf("sandbox-lifetime policy lacks the max_ttl bound: %s", exprs)
	}
	rt := m.find(t, "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", "paddock-demo-team-a-pod-runtime")
	wantString(t, rt, "spec.validations.0.expression", "has(object.spec.runtimeClassName) && object.spec.runtimeClassName in ['gvisor']")
	wp := m.find(t, "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", "paddock-demo-team-a-warmpools")
	wantString(t, wp, "spec.validations.0.expression", "object.spec.sandboxTemplateRef.name in ['python']")
	for _, name := range []string{"claims", "sandbox-lifetime", "pod-runtime", "sandbox-runtime", "warmpools"} {
		b := m.find(t, "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding", "paddock-demo-team-a-"+name)
		wantString(t, b, "spec.validationActions.0", "Deny")
		wantString(t, b, "spec.matchResources.namespaceSelector.matchLabels[kubernetes.io/metadata.name]", "agents-team-a")
	}
}

// On GKE the gvisor RuntimeClass is GKE's own (referenced, never created) and
// FQDN allow-lists become GKE FQDNNetworkPolicies instead of Cilium's.
func TestGKETargetAdoptsGVisorClassAndUsesGKEFQDNPolicy(t *testing.T) {
	p := testPlatform(model.TargetGKE)
	p.Target.FQDNPolicy = model.FQDNPolicyGKE
	p.RuntimeClasses = append(p.RuntimeClasses, model.RuntimeClass{Name: "kata-qemu", Handler: "kata-qemu", OverheadCPU: "250m", OverheadMemory: "320Mi"})
	m := run(t, p)
	for _, r := range m.all {
		if r.typ == "kubernetes:node.k8s.io/v1:RuntimeClass" && r.name == "gvisor" {
			t.Errorf("paddock created the gvisor RuntimeClass GKE owns")
		}
		if r.typ == "kubernetes:cilium.io/v2:CiliumNetworkPolicy" {
			t.Errorf("CiliumNetworkPolicy on a GKE target")
		}
	}
	kata := m.find(t, "kubernetes:node.k8s.io/v1:RuntimeClass", "kata-qemu")
	wantString(t, kata, "overhead.podFixed.cpu", "250m")
	wantString(t, kata, "overhead.podFixed.memory", "320Mi")
	fq := m.find(t, "kubernetes:networking.gke.io/v1alpha1:FQDNNetworkPolicy", "agents-team-a/allow-fqdn")
	wantString(t, fq, "spec.egress.0.matches.0.name", "api.example-llm.com")
	wantNumber(t, fq, "spec.egress.0.ports.0.port", 443)
	tpl := m.find(t, "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxTemplate", "agents-team-a/python")
	wantString(t, tpl, "spec.podTemplate.spec.runtimeClassName", "gvisor")
}
