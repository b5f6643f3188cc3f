package manifests

import (
	"bytes"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"

	"github.com/paddock-platform/paddock/internal/gateway"
	"github.com/paddock-platform/paddock/internal/gcpinputs"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/schemas"
)

// gatewaySpec is a local platform whose tenant "t" has a gateway with two
// credentials (one Secret used twice), an allow hole and extra.
func gatewayTenant(t *testing.T, extra string) (*model.Platform, model.Tenant) {
	t.Helper()
	src := `platform { name = "demo" }
target "local" {}
agent_sandbox { version = "v0.5.6" }
runtime_class "gvisor" { handler = "runsc" }
tenant "t" {
  egress {
    allow {
      cidr  = "10.40.12.0/24"
      ports = [22]
    }
  }
  egress_gateway {
    destination "api.anthropic.com" {
      credential {
        secret = "llm-keys"
        key    = "anthropic"
        header = "x-api-key"
      }
    }
    destination "api.openai.com" {
      credential {
        secret = "llm-keys"
        key    = "openai"
      }
    }
    destination "git.example.com" {
      port = 8443
      credential { secret = "git-token" }
    }
    destination "pypi.org" {}
` + extra + `
  }
  template "x" {
    image         = "python:3.12"
    runtime_class = "gvisor"
  }
}
`
	p, diags := schemas.LoadSource("spec.hcl", []byte(src), schemas.LoadOptions{Environ: []string{}})
	if diags.HasErrors() {
		t.Fatalf("spec does not load: %s", diags.Error())
	}
	return p, p.Tenants[0]
}

func gatewayObject[T any](t *testing.T, objs []*unstructured.Unstructured, kind, name string) *T {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() == kind && u.GetName() == name {
			var out T
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &out); err != nil {
				t.Fatal(err)
			}
			return &out
		}
	}
	t.Fatalf("no %s %s", kind, name)
	return nil
}

func policiesByName(t *testing.T, p *model.Platform, tn model.Tenant) map[string]*networkingv1.NetworkPolicy {
	t.Helper()
	objs, err := EgressObjects(p, tn)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*networkingv1.NetworkPolicy{}
	for _, u := range objs {
		if u.GetKind() == "NetworkPolicy" {
			out[u.GetName()] = gatewayObject[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy", u.GetName())
		}
	}
	return out
}

func selects(t *testing.T, sel metav1.LabelSelector, l map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(&sel)
	if err != nil {
		t.Fatal(err)
	}
	return s.Matches(labels.Set(l))
}

// The fence around the gateway, policy by policy (NetworkPolicies add up, so
// each is checked for whom it selects and what it opens):
//   - the gateway pods reach DNS and public addresses on the destinations'
//     ports only, never private or link-local space;
//   - no sandbox hole (allow, the rule to the gateway) selects the gateway;
//   - sandboxes reach the gateway on its port only, through a rule that is
//     also in the template's own managed policy;
//   - nothing but a sandbox may reach the gateway.
func TestGatewayNetworkPolicies(t *testing.T) {
	p, tn := gatewayTenant(t, "")
	pols := policiesByName(t, p, tn)
	gwPod := merge(p.Labels(tn.Name), GatewayPodLabels())
	sandboxPod := merge(p.Labels(tn.Name), map[string]string{sandboxv1beta1.SandboxTemplateRefHashLabel: "abc"})
	orchestratorPod := merge(p.Labels(tn.Name), map[string]string{"app": "orchestrator"})

	// Who each policy selects.
	for name, np := range pols {
		gw, sb := selects(t, np.Spec.PodSelector, gwPod), selects(t, np.Spec.PodSelector, sandboxPod)
		switch name {
		case DefaultDenyPolicy, AllowDNSPolicy:
			if !gw || !sb {
				t.Errorf("%s does not select every pod", name)
			}
		case GatewayEgressPolicy, GatewayIngressPolicy:
			if !gw || sb || selects(t, np.Spec.PodSelector, orchestratorPod) {
				t.Errorf("%s selects gateway %v, sandbox %v: want the gateway only", name, gw, sb)
			}
		default:
			if gw || !sb {
				t.Errorf("sandbox hole %s selects gateway %v, sandbox %v: want sandboxes only", name, gw, sb)
			}
		}
	}

	// The gateway's egress: DNS, then public addresses on 443 and 8443.
	eg := pols[GatewayEgressPolicy]
	if eg == nil || len(eg.Spec.Egress) != 2 || len(eg.Spec.Ingress) != 0 {
		t.Fatalf("gateway egress policy %+v", eg)
	}
	if !reflect.DeepEqual(eg.Spec.Egress[0], DNSEgressRule()) {
		t.Errorf("first rule %+v is not the cluster DNS rule", eg.Spec.Egress[0])
	}
	out := eg.Spec.Egress[1]
	var ports []int
	for _, pt := range out.Ports {
		if string(*pt.Protocol) != "TCP" || pt.EndPort != nil {
			t.Errorf("port %+v", pt)
		}
		ports = append(ports, pt.Port.IntValue())
	}
	if !reflect.DeepEqual(ports, []int{443, 8443}) {
		t.Errorf("gateway egress ports %v, want [443 8443]", ports)
	}
	reaches := func(addr string) bool {
		a := netip.MustParseAddr(addr)
		for _, peer := range out.To {
			if peer.IPBlock == nil {
				t.Fatalf("gateway egress peer %+v is not an address block", peer)
			}
			if netip.MustParsePrefix(peer.IPBlock.CIDR).Contains(a) && !slices.ContainsFunc(peer.IPBlock.Except, func(e string) bool {
				return netip.MustParsePrefix(e).Contains(a)
			}) {
				return true
			}
		}
		return false
	}
	for _, a := range []string{"203.0.113.7", "2001:db8::1"} {
		if !reaches(a) {
			t.Errorf("the gateway cannot reach public %s", a)
		}
	}
	for _, a := range []string{"169.254.169.254", "10.40.12.5", "192.168.1.1", "172.16.0.1", "100.64.0.1", "127.0.0.1", "fe80::1", "fd00::1", "::1"} {
		if reaches(a) {
			t.Errorf("the gateway's egress reaches %s", a)
		}
	}

	// Sandboxes reach the gateway pods on its port, in the namespace policy
	// and in the template's managed policy alike.
	want := networkingv1.NetworkPolicyEgressRule{
		To:    []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: GatewayPodLabels()}}},
		Ports: []networkingv1.NetworkPolicyPort{port("TCP", model.GatewayListenPort)},
	}
	if np := pols[AllowGatewayPolicy]; np == nil || !reflect.DeepEqual(np.Spec.Egress, []networkingv1.NetworkPolicyEgressRule{want}) {
		t.Errorf("%s = %+v, want exactly %+v", AllowGatewayPolicy, np, want)
	}
	st, err := SandboxTemplate(p, tn, tn.Templates[0])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(st.Spec.NetworkPolicy.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool { return reflect.DeepEqual(r, want) }) {
		t.Errorf("the template's managed policy has no rule to the gateway: %+v", st.Spec.NetworkPolicy.Egress)
	}

	// Ingress: only the gateway's policy lets anything in, from sandboxes only.
	for name, np := range pols {
		if len(np.Spec.Ingress) > 0 && name != GatewayIngressPolicy {
			t.Errorf("%s allows ingress", name)
		}
	}
	in := pols[GatewayIngressPolicy].Spec.Ingress
	if len(in) != 1 || len(in[0].From) != 1 || in[0].From[0].NamespaceSelector != nil || in[0].From[0].IPBlock != nil ||
		len(in[0].Ports) != 1 || in[0].Ports[0].Port.IntValue() != int(model.GatewayListenPort) {
		t.Fatalf("gateway ingress %+v", in)
	}
	from := *in[0].From[0].PodSelector
	if !selects(t, from, sandboxPod) || selects(t, from, orchestratorPod) || selects(t, from, gwPod) {
		t.Errorf("gateway ingress from %+v: want sandboxes only", from)
	}
}

// Without a gateway, the tenant's policies select every pod as before.
func TestNoGatewayLeavesPoliciesAsTheyWere(t *testing.T) {
	p, tn := gatewayTenant(t, "")
	tn.EgressGateway = nil
	for name, np := range policiesByName(t, p, tn) {
		if len(np.Spec.PodSelector.MatchLabels)+len(np.Spec.PodSelector.MatchExpressions) > 0 {
			t.Errorf("%s selects %+v", name, np.Spec.PodSelector)
		}
		if strings.Contains(name, "gateway") {
			t.Errorf("%s rendered without a gateway", name)
		}
	}
	if objs, err := GatewayObjects(p, tn); err != nil || len(objs) != 0 {
		t.Errorf("gateway objects without a gateway: %d, %v", len(objs), err)
	}
}

// The Secrets: only the gateway's ServiceAccount may get them, by name; only
// the gateway pod mounts them, only the keys named, read-only; no sandbox
// sees them.
func TestGatewaySecretAccess(t *testing.T) {
	p, tn := gatewayTenant(t, "")
	objs, err := GatewayObjects(p, tn)
	if err != nil {
		t.Fatal(err)
	}
	role := gatewayObject[rbacv1.Role](t, objs, "Role", GatewayName)
	// Read on the namespace's pods and Sandboxes (to name callers), get on
	// exactly the credentials' Secrets; nothing else.
	read := []string{"get", "list", "watch"}
	wantRules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: read},
		{APIGroups: []string{"agents.x-k8s.io"}, Resources: []string{"sandboxes"}, Verbs: read},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"git-token", "llm-keys"}},
	}
	if !reflect.DeepEqual(role.Rules, wantRules) {
		t.Errorf("role rules %+v, want %+v", role.Rules, wantRules)
	}
	rb := gatewayObject[rbacv1.RoleBinding](t, objs, "RoleBinding", GatewayName)
	if !reflect.DeepEqual(rb.Subjects, []rbacv1.Subject{{Kind: "ServiceAccount", Name: GatewayName, Namespace: tn.Namespace}}) || rb.RoleRef.Name != GatewayName {
		t.Errorf("role binding %+v", rb)
	}
	dep := gatewayObject[appsv1.Deployment](t, objs, "Deployment", GatewayName)
	mounted := map[string][]string{}
	for _, v := range dep.Spec.Template.Spec.Volumes {
		if s := v.Secret; s != nil {
			if s.Optional == nil || *s.Optional || s.DefaultMode == nil || *s.DefaultMode&0o077 != 0o040 {
				t.Errorf("secret volume %s: optional %v, mode %v", v.Name, s.Optional, s.DefaultMode)
			}
			for _, it := range s.Items {
				mounted[s.SecretName] = append(mounted[s.SecretName], it.Key)
			}
		}
	}
	if want := map[string][]string{"llm-keys": {"anthropic", "openai"}, "git-token": {"key"}}; !reflect.DeepEqual(mounted, want) {
		t.Errorf("mounted secrets %v, want %v", mounted, want)
	}
	for _, m := range dep.Spec.Template.Spec.Containers[0].VolumeMounts {
		if !m.ReadOnly {
			t.Errorf("mount %s is writable", m.Name)
		}
	}
	// No sandbox mounts or reads any of them.
	st, err := SandboxTemplate(p, tn, tn.Templates[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range st.Spec.PodTemplate.Spec.Volumes {
		if v.Secret != nil {
			t.Errorf("the sandbox mounts Secret %s", v.Secret.SecretName)
		}
	}
	for _, e := range st.Spec.PodTemplate.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			t.Errorf("the sandbox reads Secret %s", e.ValueFrom.SecretKeyRef.Name)
		}
	}
}

// The gateway pod is hardened like a sandbox.
func TestGatewayPodSecurity(t *testing.T) {
	p, tn := gatewayTenant(t, "")
	objs, err := GatewayObjects(p, tn)
	if err != nil {
		t.Fatal(err)
	}
	dep := gatewayObject[appsv1.Deployment](t, objs, "Deployment", GatewayName)
	ps := dep.Spec.Template.Spec
	if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken || ps.ServiceAccountName != GatewayName {
		t.Errorf("service account %q, automount %v", ps.ServiceAccountName, ps.AutomountServiceAccountToken)
	}
	sa := gatewayObject[corev1.ServiceAccount](t, objs, "ServiceAccount", GatewayName)
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Error("the gateway's ServiceAccount mounts its token")
	}
	// Its own token is mounted explicitly: the API server's audience, an
	// hour, read-only, where in-cluster clients look.
	var tok *corev1.ProjectedVolumeSource
	for _, v := range ps.Volumes {
		if v.Projected != nil {
			tok = v.Projected
		}
	}
	if tok == nil || len(tok.Sources) != 3 || tok.Sources[0].ServiceAccountToken == nil || tok.Sources[0].ServiceAccountToken.Audience != "" ||
		tok.Sources[0].ServiceAccountToken.ExpirationSeconds == nil || *tok.Sources[0].ServiceAccountToken.ExpirationSeconds > 3600 {
		t.Errorf("the gateway's token volume: %+v", tok)
	}
	if cmd := ps.Containers[0].Command; !slices.Equal(cmd[len(cmd)-2:], []string{"-namespace", tn.Namespace}) {
		t.Errorf("the gateway is not told its namespace: %v", cmd)
	}
	if ps.RuntimeClassName == nil || *ps.RuntimeClassName != "gvisor" {
		t.Errorf("runtime class %v, want the sandboxes' gvisor", ps.RuntimeClassName)
	}
	if sc := ps.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v", sc)
	}
	if len(ps.Containers) != 1 {
		t.Fatalf("%d containers", len(ps.Containers))
	}
	c := ps.Containers[0]
	csc := c.SecurityContext
	if csc == nil || csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation || csc.Privileged == nil || *csc.Privileged ||
		csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem || csc.RunAsNonRoot == nil || !*csc.RunAsNonRoot ||
		csc.Capabilities == nil || !reflect.DeepEqual(csc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(csc.Capabilities.Add) != 0 {
		t.Errorf("container security context %+v", csc)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if _, ok := c.Resources.Limits[r]; !ok {
			t.Errorf("no %s limit", r)
		}
	}
	for name, pr := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if pr == nil || pr.TCPSocket == nil || pr.TCPSocket.Port.IntValue() != int(model.GatewayListenPort) {
			t.Errorf("%s probe %+v is not a TCP socket on the gateway's port", name, pr)
		}
	}
	if c.ImagePullPolicy != corev1.PullNever || c.Image != model.LocalGatewayImage() {
		t.Errorf("local image %s pulled %s", c.Image, c.ImagePullPolicy)
	}
	for _, u := range objs {
		l := u.GetLabels()
		if l[model.ManagedByLabel] != model.ManagedByValue || l[model.PlatformLabel] != p.Name || l[model.TenantLabel] != tn.Name {
			t.Errorf("%s %s labels %v", u.GetKind(), u.GetName(), l)
		}
	}
	// The pod passes the tenant's identity guardrail, and a sandbox or a
	// pod of another account wearing the gateway's label does not.
	podObj := pod(dep.Spec.Template.Labels, ps.ServiceAccountName)
	if !admitsAll(t, p, tn, "identity-pods", podObj) {
		t.Error("the gateway's own pod is refused")
	}
	if admitsAll(t, p, tn, "identity-pods", pod(GatewayPodLabels(), model.AgentRuntimeServiceAccount)) {
		t.Error("a pod running as agent-runtime may wear the gateway's label")
	}
	st, err := SandboxTemplate(p, tn, tn.Templates[0])
	if err != nil {
		t.Fatal(err)
	}
	st.Spec.PodTemplate.ObjectMeta.Labels = merge(st.Spec.PodTemplate.ObjectMeta.Labels, GatewayPodLabels())
	u, err := ToUnstructured(st)
	if err != nil {
		t.Fatal(err)
	}
	if admitsAll(t, p, tn, "identity-sandboxes", u.Object) {
		t.Error("a template whose sandboxes wear the gateway's label is admitted")
	}
	claim := map[string]any{"spec": map[string]any{"additionalPodMetadata": map[string]any{"labels": map[string]any{IdentityLabel: GatewayName}}}}
	if admitsAll(t, p, tn, "identity-claims", claim) {
		t.Error("a claim that labels its sandbox as the gateway is admitted")
	}
}

// The ConfigMap holds a configuration the gateway itself accepts, whose
// key files are the files the Deployment mounts.
func TestGatewayConfigRoundTrips(t *testing.T) {
	p, tn := gatewayTenant(t, `    allow_cidrs = ["10.215.0.0/24"]
    budgets { requests_per_minute = 120 }`)
	objs, err := GatewayObjects(p, tn)
	if err != nil {
		t.Fatal(err)
	}
	cm := gatewayObject[corev1.ConfigMap](t, objs, "ConfigMap", GatewayName)
	cfg, err := gateway.DecodeConfig(bytes.NewReader([]byte(cm.Data[GatewayConfigKey])))
	if err != nil {
		t.Fatalf("the gateway refuses its rendered configuration: %v", err)
	}
	if cfg.Budgets.RequestsPerMinute != 120 || cfg.Listen != ":8080" || !reflect.DeepEqual(cfg.AllowCIDRs, []string{"10.215.0.0/24"}) {
		t.Errorf("config %+v", cfg)
	}
	dep := gatewayObject[appsv1.Deployment](t, objs, "Deployment", GatewayName)
	var mountDirs []string
	for _, m := range dep.Spec.Template.Spec.Containers[0].VolumeMounts {
		mountDirs = append(mountDirs, m.MountPath)
	}
	for _, d := range cfg.Destinations {
		if d.Credential == nil {
			continue
		}
		dir := d.Credential.KeyFile[:strings.LastIndex(d.Credential.KeyFile, "/")]
		if !slices.Contains(mountDirs, dir) {
			t.Errorf("%s's key file %s is in no mounted directory (%v)", d.Host, d.Credential.KeyFile, mountDirs)
		}
	}
	if !slices.Contains(dep.Spec.Template.Spec.Containers[0].Command, GatewayConfigDir+"/"+GatewayConfigKey) {
		t.Errorf("command %v does not name the configuration", dep.Spec.Template.Spec.Containers[0].Command)
	}
	// allow_cidrs are opened to the gateway pods alone, on the destinations' ports.
	eg := policiesByName(t, p, tn)[GatewayEgressPolicy]
	if !slices.ContainsFunc(eg.Spec.Egress[1].To, func(pr networkingv1.NetworkPolicyPeer) bool {
		return pr.IPBlock != nil && pr.IPBlock.CIDR == "10.215.0.0/24"
	}) {
		t.Errorf("allow_cidrs not in the gateway's egress: %+v", eg.Spec.Egress[1].To)
	}
	// A new configuration rolls the pods.
	p2, tn2 := gatewayTenant(t, `    budgets { requests_per_minute = 60 }`)
	objs2, err := GatewayObjects(p2, tn2)
	if err != nil {
		t.Fatal(err)
	}
	dep2 := gatewayObject[appsv1.Deployment](t, objs2, "Deployment", GatewayName)
	if dep.Spec.Template.Annotations[GatewayConfigHashAnnotation] == dep2.Spec.Template.Annotations[GatewayConfigHashAnnotation] {
		t.Error("a changed configuration leaves the pod template as it was")
	}
}

// The gateway pods, and only they, reach the API server, on its ports only,
// on a Cilium target; elsewhere no such rule is rendered.
func TestGatewayAPIServerRule(t *testing.T) {
	p, tn := gatewayTenant(t, "")
	u := GatewayAPIServerRule(p, tn)
	if u == nil {
		t.Fatalf("no API server rule on target %s (FQDN policy %q)", p.Target.Kind, p.Target.FQDNPolicy)
	}
	sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "endpointSelector", "matchLabels")
	if !maps.Equal(sel, GatewayPodLabels()) {
		t.Errorf("selects %v, want the gateway pods %v", sel, GatewayPodLabels())
	}
	egress, _, _ := unstructured.NestedSlice(u.Object, "spec", "egress")
	if len(egress) != 1 {
		t.Fatalf("%d egress rules", len(egress))
	}
	rule := egress[0].(map[string]any)
	if ents, _ := rule["toEntities"].([]any); len(ents) != 1 || ents[0] != "kube-apiserver" || len(rule) != 2 {
		t.Errorf("rule %v, want toEntities [kube-apiserver] and ports only", rule)
	}
	ports, _, _ := unstructured.NestedSlice(rule, "toPorts")
	got, _ := ports[0].(map[string]any)["ports"].([]any)
	if len(got) != 2 || got[0].(map[string]any)["port"] != "443" || got[1].(map[string]any)["port"] != "6443" {
		t.Errorf("ports %v, want TCP 443 and 6443", got)
	}
	objs, err := EgressObjects(p, tn)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, o := range objs {
		found = found || (o.GetKind() == "CiliumNetworkPolicy" && o.GetName() == GatewayAPIServerPolicy)
	}
	if !found {
		t.Error("EgressObjects lacks the gateway's API server rule")
	}
	p.Target.FQDNPolicy = model.FQDNPolicyGKE
	if GatewayAPIServerRule(p, tn) != nil {
		t.Error("a CiliumNetworkPolicy rendered for a GKE target")
	}
}

// On target gke the gateway's egress policy opens the private control
// plane's endpoint (the master CIDR, 443), which its world rule excludes;
// on other targets it does not.
func TestGatewayReachesGKEsPrivateControlPlane(t *testing.T) {
	p, tn := gatewayTenant(t, "")
	hasRule := func() bool {
		pols, err := gatewayPolicies(p, tn)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range pols[0].Spec.Egress {
			for _, peer := range r.To {
				if peer.IPBlock != nil && peer.IPBlock.CIDR == gcpinputs.DefaultMasterCIDR {
					if len(r.Ports) != 1 || r.Ports[0].Port.IntVal != 443 || len(r.To) != 1 {
						t.Errorf("control plane rule %+v, want the master CIDR alone on 443", r)
					}
					return true
				}
			}
		}
		return false
	}
	if hasRule() {
		t.Errorf("target %s opens GKE's control plane CIDR", p.Target.Kind)
	}
	p.Target.Kind, p.Target.FQDNPolicy = model.TargetGKE, model.FQDNPolicyGKE
	if !hasRule() {
		t.Error("target gke: the gateway cannot reach the private control plane")
	}
}
