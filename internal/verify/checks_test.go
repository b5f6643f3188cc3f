package verify

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/pins"
	"github.com/paddock-platform/paddock/internal/vaptest"
	"github.com/paddock-platform/paddock/schemas"
)

// localPlatform is examples/local as the loader models it: one tenant
// (agents-team-a) with the orchestrator identity, runtime class gvisor and a
// warm pool "agent" of 2.
func localPlatform(t *testing.T) *model.Platform {
	t.Helper()
	p, diags := schemas.NewLoader().LoadDir("../../examples/local", schemas.LoadOptions{})
	if diags.HasErrors() {
		t.Fatalf("examples/local: %v", diags)
	}
	if len(p.Tenants) != 1 || len(p.Tenants[0].WarmPools) != 1 || len(p.RuntimeClasses) != 1 {
		t.Fatalf("examples/local changed shape: %d tenants, %d runtime classes", len(p.Tenants), len(p.RuntimeClasses))
	}
	return p
}

var listKinds = map[schema.GroupVersionResource]string{
	networkPoliciesGVR: "NetworkPolicyList",
	warmPoolsGVR:       "SandboxWarmPoolList",
	sandboxesGVR:       "SandboxList",
	claimsGVR:          "SandboxClaimList",
}

// fakeVerifier runs checks against fabricated objects.
func fakeVerifier(t *testing.T, p *model.Platform, kubeObjs []runtime.Object, dynObjs ...*unstructured.Unstructured) (*Verifier, *fake.Clientset, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	kube := fake.NewClientset(kubeObjs...)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds)
	// Created through the client: the tracker would guess "sandboxs" for
	// a Sandbox given to the constructor.
	for _, u := range dynObjs {
		var gvr schema.GroupVersionResource
		for r, list := range listKinds {
			if list == u.GetKind()+"List" {
				gvr = r
			}
		}
		if _, err := dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The API server stores no dry run: a Sandbox sent as one (V08's direct
	// sandbox probe) is judged by its tenant's sandbox-lifetime guardrail,
	// evaluated as the API server would, and never stored.
	dyn.PrependReactor("create", "sandboxes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		create := a.(k8stesting.CreateActionImpl)
		if !slices.Equal(create.GetCreateOptions().DryRun, []string{metav1.DryRunAll}) {
			return false, nil, nil
		}
		u := create.GetObject().(*unstructured.Unstructured).DeepCopy()
		u.SetCreationTimestamp(metav1.NewTime(time.Now()))
		for _, tn := range p.Tenants {
			for _, g := range manifests.Guardrails(p, tn) {
				if tn.Namespace != u.GetNamespace() || g.Policy.Name != manifests.GuardrailName(p, tn, "sandbox-lifetime") {
					continue
				}
				r, err := vaptest.Admit(g.Policy, u.Object, nil)
				if err != nil {
					t.Errorf("the sandbox-lifetime guardrail does not evaluate: %v", err)
					return true, nil, err
				}
				if r != nil {
					return true, nil, policyDenial(u.GetName(), g.Policy.Name, g.Binding.Name, r.Message)
				}
			}
		}
		return true, u, nil
	})
	// NetworkPolicies are read both ways (V09 compares whole objects
	// through the dynamic client): they are in both fakes.
	for _, o := range kubeObjs {
		np, ok := o.(*networkingv1.NetworkPolicy)
		if !ok {
			continue
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(np)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: m}
		u.SetAPIVersion("networking.k8s.io/v1")
		u.SetKind("NetworkPolicy")
		if _, err := dyn.Resource(networkPoliciesGVR).Namespace(np.Namespace).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A dry-run update answers as the API server would store the object:
	// a port's protocol defaults to TCP.
	dyn.PrependReactor("update", "networkpolicies", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ua := a.(k8stesting.UpdateActionImpl)
		u := ua.GetObject().(*unstructured.Unstructured).DeepCopy()
		var np networkingv1.NetworkPolicy
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &np); err != nil {
			return true, nil, err
		}
		tcp := corev1.ProtocolTCP
		for i := range np.Spec.Egress {
			for j := range np.Spec.Egress[i].Ports {
				if np.Spec.Egress[i].Ports[j].Protocol == nil {
					np.Spec.Egress[i].Ports[j].Protocol = &tcp
				}
			}
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&np)
		if err != nil {
			return true, nil, err
		}
		out := &unstructured.Unstructured{Object: m}
		out.SetAPIVersion("networking.k8s.io/v1")
		out.SetKind("NetworkPolicy")
		return true, out, nil
	})
	// The runtime checks have fakes of their own (runtime_test.go).
	return &Verifier{p: p, kube: kube, dyn: dyn, opts: Options{NoProbes: true}}, kube, dyn
}

// only runs one check and returns its results.
func only(t *testing.T, v *Verifier, id string) []Result {
	t.Helper()
	for _, c := range checks {
		if c.id == id {
			return c.run(context.Background(), v)
		}
	}
	t.Fatalf("no check %s", id)
	return nil
}

// wantStatus asserts one result with status want whose reason mentions each of words.
func wantStatus(t *testing.T, got []Result, want Status, words ...string) {
	t.Helper()
	if len(got) != 1 {
		t.Fatalf("%d results, want 1: %+v", len(got), got)
	}
	if got[0].Status != want {
		t.Fatalf("status %s (%s), want %s", got[0].Status, got[0].Reason, want)
	}
	for _, w := range words {
		if !strings.Contains(got[0].Reason, w) {
			t.Errorf("reason %q does not mention %q", got[0].Reason, w)
		}
	}
}

func TestV01NamespaceLabels(t *testing.T) {
	p := localPlatform(t)
	ns := manifests.Namespace(p, p.Tenants[0])
	v, _, _ := fakeVerifier(t, p, []runtime.Object{ns})
	wantStatus(t, only(t, v, "V01"), Pass)

	loose := ns.DeepCopy()
	loose.Labels["pod-security.kubernetes.io/enforce"] = "privileged"
	v, _, _ = fakeVerifier(t, p, []runtime.Object{loose})
	wantStatus(t, only(t, v, "V01"), Fail, "enforce")

	v, _, _ = fakeVerifier(t, p, nil)
	wantStatus(t, only(t, v, "V01"), Fail, "not found")
}

// podSecurityRefusal is the API server's answer to a pod Pod Security refuses.
func podSecurityRefusal(name string) error {
	return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, name,
		errors.New(`violates PodSecurity "restricted:latest": privileged (container "probe" must not set securityContext.privileged=true)`))
}

func TestV02PrivilegedPodRefusedByPodSecurityOnly(t *testing.T) {
	p := localPlatform(t)
	for _, tc := range []struct {
		name   string
		answer func(pod *corev1.Pod) error
		want   Status
	}{
		{"pod security refuses", func(pod *corev1.Pod) error { return podSecurityRefusal(pod.Name) }, Pass},
		{"accepted", func(*corev1.Pod) error { return nil }, Fail},
		{"RBAC refuses verify itself", func(pod *corev1.Pod) error {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, pod.Name, errors.New(`User "auditor" cannot create resource "pods" in API group "" in the namespace "agents-team-a"`))
		}, Fail},
		// With Pod Security off, the runtime-class guardrail would refuse a
		// pod without a runtime class: the probe must carry an allowed one,
		// so only Pod Security stands between it and the cluster.
		{"only the runtime-class guardrail would refuse", func(pod *corev1.Pod) error {
			if pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName != "gvisor" {
				return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, pod.Name, nil)
			}
			return nil
		}, Fail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, kube, _ := fakeVerifier(t, p, nil)
			var seen *corev1.Pod
			kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				seen = a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
				return true, seen, tc.answer(seen)
			})
			wantStatus(t, only(t, v, "V02"), tc.want)
			if seen == nil || seen.Spec.RuntimeClassName == nil || *seen.Spec.RuntimeClassName != "gvisor" {
				t.Errorf("the probe pod does not carry the tenant's runtime class: %+v", seen)
			}
		})
	}
}

// rbac answers SubjectAccessReviews: allowed says what a user may do, err
// (when it returns one) fails the review.
func rbac(kube *fake.Clientset, allowed func(user string, ra authzv1.ResourceAttributes) bool, fault func(ra authzv1.ResourceAttributes) (error, string)) {
	kube.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authzv1.SubjectAccessReview).DeepCopy()
		ra := *sar.Spec.ResourceAttributes
		if fault != nil {
			if err, evalErr := fault(ra); err != nil {
				return true, nil, err
			} else if evalErr != "" {
				sar.Status.EvaluationError = evalErr
				return true, sar, nil
			}
		}
		sar.Status.Allowed = allowed(sar.Spec.User, ra)
		return true, sar, nil
	})
}

func denyAll(string, authzv1.ResourceAttributes) bool { return false }

func TestV03AgentRuntimeMayDoNothing(t *testing.T) {
	p := localPlatform(t)

	v, kube, _ := fakeVerifier(t, p, nil)
	rbac(kube, denyAll, nil)
	wantStatus(t, only(t, v, "V03"), Pass, fmt.Sprint(len(probedResources)*len(allVerbs)+len(clusterWideProbes)))

	v, kube, _ = fakeVerifier(t, p, nil)
	rbac(kube, func(_ string, ra authzv1.ResourceAttributes) bool {
		return ra.Resource == "secrets" && ra.Verb == "get" && ra.Namespace == ""
	}, nil)
	wantStatus(t, only(t, v, "V03"), Fail, "get secrets (cluster-wide)")

	// A review that errors is not a "no": before, the cluster-wide probes
	// dropped the error and counted it as denied.
	v, kube, _ = fakeVerifier(t, p, nil)
	rbac(kube, denyAll, func(ra authzv1.ResourceAttributes) (error, string) {
		if ra.Namespace == "" {
			return apierrors.NewServiceUnavailable("authorizer webhook down"), ""
		}
		return nil, ""
	})
	wantStatus(t, only(t, v, "V03"), Fail, "authorizer webhook down")

	// Nor is a review the authorizer could not complete.
	v, kube, _ = fakeVerifier(t, p, nil)
	rbac(kube, denyAll, func(ra authzv1.ResourceAttributes) (error, string) {
		if ra.Resource == "pods" && ra.Subresource == "exec" {
			return nil, `clusterrole.rbac.authorization.k8s.io "sandbox-exec" not found`
		}
		return nil, ""
	})
	wantStatus(t, only(t, v, "V03"), Fail, "did not complete")
}

func TestV04OrchestratorHasExactlyItsVerbs(t *testing.T) {
	p := localPlatform(t)
	ns := p.Tenants[0].Namespace
	grants := func(_ string, ra authzv1.ResourceAttributes) bool {
		return ra.Namespace == ns && orchestratorGrants[access{ra.Verb, ra.Group, ra.Resource, ra.Subresource}.String()]
	}
	v, kube, _ := fakeVerifier(t, p, nil)
	rbac(kube, grants, nil)
	wantStatus(t, only(t, v, "V04"), Pass)

	v, kube, _ = fakeVerifier(t, p, nil)
	rbac(kube, func(u string, ra authzv1.ResourceAttributes) bool {
		return grants(u, ra) || (ra.Resource == "secrets" && ra.Verb == "list")
	}, nil)
	wantStatus(t, only(t, v, "V04"), Fail, "list secrets")

	v, kube, _ = fakeVerifier(t, p, nil)
	rbac(kube, func(u string, ra authzv1.ResourceAttributes) bool {
		return grants(u, ra) && ra.Verb != "delete"
	}, nil)
	wantStatus(t, only(t, v, "V04"), Fail, "cannot delete sandboxclaims")

	// The probe outside its namespace erroring is not "denied" either.
	v, kube, _ = fakeVerifier(t, p, nil)
	rbac(kube, grants, func(ra authzv1.ResourceAttributes) (error, string) {
		if ra.Namespace == "default" {
			return apierrors.NewTooManyRequests("slow down", 1), ""
		}
		return nil, ""
	})
	wantStatus(t, only(t, v, "V04"), Fail, "slow down")
}

func sandboxNode(name string, lbls map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}}
}

func TestV05RuntimeClassMatchesTheSpec(t *testing.T) {
	p := localPlatform(t)
	rc := p.RuntimeClasses[0]
	node := sandboxNode("n1", rc.NodeSelector)
	want := manifests.RuntimeClass(p, rc)

	v, _, _ := fakeVerifier(t, p, []runtime.Object{want.DeepCopy(), node})
	wantStatus(t, only(t, v, "V05"), Pass, "1 node")

	for _, tc := range []struct {
		name  string
		edit  func(*nodev1.RuntimeClass)
		words []string
	}{
		// Before, a class without scheduling passed: every node "matched".
		{"nodeSelector removed", func(r *nodev1.RuntimeClass) { r.Scheduling.NodeSelector = nil }, []string{"nodeSelector lacks sandbox.gke.io/runtime=gvisor"}},
		{"scheduling removed", func(r *nodev1.RuntimeClass) { r.Scheduling = nil }, []string{"nodeSelector lacks", "toleration"}},
		{"toleration removed", func(r *nodev1.RuntimeClass) { r.Scheduling.Tolerations = nil }, []string{"toleration sandbox.gke.io/runtime Equal gvisor:NoSchedule missing"}},
		{"selector widened", func(r *nodev1.RuntimeClass) { r.Scheduling.NodeSelector["pool"] = "any" }, []string{"pool=any, not in the spec"}},
		{"extra toleration", func(r *nodev1.RuntimeClass) {
			r.Scheduling.Tolerations = append(r.Scheduling.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists})
		}, []string{"not in the spec"}},
		{"other handler", func(r *nodev1.RuntimeClass) { r.Handler = "runc" }, []string{`handler "runc"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := want.DeepCopy()
			tc.edit(live)
			v, _, _ := fakeVerifier(t, p, []runtime.Object{live, node})
			wantStatus(t, only(t, v, "V05"), Fail, tc.words...)
		})
	}

	t.Run("no node carries the selector", func(t *testing.T) {
		v, _, _ := fakeVerifier(t, p, []runtime.Object{want.DeepCopy(), sandboxNode("n1", nil)})
		wantStatus(t, only(t, v, "V05"), Fail, "no node matches")
	})

	// GKE's own gvisor class may carry more than the spec, never less.
	t.Run("target-provided class", func(t *testing.T) {
		gke := *p
		gke.Target.Kind = model.TargetGKE
		live := want.DeepCopy()
		live.Scheduling.NodeSelector["cloud.google.com/gke-nodepool"] = "sandbox"
		v, _, _ := fakeVerifier(t, &gke, []runtime.Object{live, sandboxNode("n1", live.Scheduling.NodeSelector)})
		wantStatus(t, only(t, v, "V05"), Pass)
		live.Scheduling.Tolerations = nil
		v, _, _ = fakeVerifier(t, &gke, []runtime.Object{live, sandboxNode("n1", live.Scheduling.NodeSelector)})
		wantStatus(t, only(t, v, "V05"), Fail, "missing")
	})
}

func sandboxPod(ns, name, class, node string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: corev1.PodSpec{NodeName: node}}
	if class != "" {
		pod.Spec.RuntimeClassName = &class
	}
	return pod
}

func TestV06SandboxPlacement(t *testing.T) {
	p := localPlatform(t)
	ns := p.Tenants[0].Namespace
	sandbox := sandboxNode("sandbox-node", p.RuntimeClasses[0].NodeSelector)
	plain := sandboxNode("plain-node", map[string]string{"kubernetes.io/os": "linux"})
	for _, tc := range []struct {
		name  string
		pods  []runtime.Object
		want  Status
		words []string
	}{
		{"on a sandbox node", []runtime.Object{sandboxPod(ns, "a", "gvisor", "sandbox-node")}, Pass, []string{"1 pod"}},
		{"not scheduled yet", []runtime.Object{sandboxPod(ns, "a", "gvisor", "")}, NotVerifiable, nil},
		{"on a plain node", []runtime.Object{sandboxPod(ns, "a", "gvisor", "sandbox-node"), sandboxPod(ns, "b", "gvisor", "plain-node")}, Fail, []string{"b on plain-node, which lacks sandbox.gke.io/runtime=gvisor"}},
		{"no runtime class", []runtime.Object{sandboxPod(ns, "a", "", "sandbox-node")}, Fail, []string{"no runtime class"}},
		// Before, a class the model does not know had no selector to
		// check, so its pods passed wherever they ran.
		{"unknown runtime class", []runtime.Object{sandboxPod(ns, "a", "runc", "plain-node")}, Fail, []string{`runtime class "runc", which the spec does not declare`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, _, _ := fakeVerifier(t, p, append(tc.pods, sandbox, plain))
			wantStatus(t, only(t, v, "V06"), tc.want, tc.words...)
		})
	}
}

// pool is the live SandboxWarmPool of examples/local as the controller
// last wrote its status.
func pool(ns string, replicas, generation, observed, readyReplicas int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": warmPoolsGVR.GroupVersion().String(), "kind": "SandboxWarmPool",
		"metadata": map[string]any{"name": "agent", "namespace": ns, "uid": "pool-uid", "generation": generation},
		"spec":     map[string]any{"replicas": replicas, "sandboxTemplateRef": map[string]any{"name": "agent"}},
		"status":   map[string]any{"readyReplicas": readyReplicas, "replicas": readyReplicas, "observedGeneration": observed},
	}}
	return u
}

func poolSandbox(ns, name string, ready bool) *unstructured.Unstructured {
	status := "False"
	if ready {
		status = "True"
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": sandboxesGVR.GroupVersion().String(), "kind": "Sandbox",
		"metadata": map[string]any{"name": name, "namespace": ns, "ownerReferences": []any{
			map[string]any{"apiVersion": warmPoolsGVR.GroupVersion().String(), "kind": "SandboxWarmPool", "name": "agent", "uid": "pool-uid", "controller": true},
		}},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": status}}},
	}}
}

func readyPod(ns, name string, ready bool) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	pod := sandboxPod(ns, name, "gvisor", "n1")
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
	return pod
}

func TestV07CountsReadySandboxesNotTheStatus(t *testing.T) {
	p := localPlatform(t)
	ns := p.Tenants[0].Namespace
	for _, tc := range []struct {
		name  string
		kube  []runtime.Object
		dyn   []*unstructured.Unstructured
		want  Status
		words []string
	}{
		{"two ready sandboxes", []runtime.Object{readyPod(ns, "sb-1", true), readyPod(ns, "sb-2", true)},
			[]*unstructured.Unstructured{pool(ns, 2, 1, 1, 2), poolSandbox(ns, "sb-1", true), poolSandbox(ns, "sb-2", true)}, Pass, []string{"2/2"}},
		// The controller died, then a sandbox went: the status still says
		// 2 ready. Before, that read as ready.
		{"stale status, sandboxes gone", []runtime.Object{readyPod(ns, "sb-1", true)},
			[]*unstructured.Unstructured{pool(ns, 2, 1, 1, 2), poolSandbox(ns, "sb-1", true)}, Fail, []string{"1/2", "its status says 2"}},
		{"sandbox ready, pod gone", []runtime.Object{readyPod(ns, "sb-1", true)},
			[]*unstructured.Unstructured{pool(ns, 2, 1, 1, 2), poolSandbox(ns, "sb-1", true), poolSandbox(ns, "sb-2", true)}, Fail, []string{"1/2"}},
		{"pod not ready", []runtime.Object{readyPod(ns, "sb-1", true), readyPod(ns, "sb-2", false)},
			[]*unstructured.Unstructured{pool(ns, 2, 1, 1, 2), poolSandbox(ns, "sb-1", true), poolSandbox(ns, "sb-2", true)}, Fail, []string{"1/2"}},
		{"sandboxes of another pool", []runtime.Object{readyPod(ns, "sb-1", true), readyPod(ns, "sb-2", true)},
			[]*unstructured.Unstructured{pool(ns, 2, 1, 1, 2), poolSandbox(ns, "sb-1", true), func() *unstructured.Unstructured {
				s := poolSandbox(ns, "sb-2", true)
				refs := s.GetOwnerReferences()
				refs[0].Name = "other"
				s.SetOwnerReferences(refs)
				return s
			}()}, Fail, []string{"1/2"}},
		{"generation not observed", []runtime.Object{readyPod(ns, "sb-1", true), readyPod(ns, "sb-2", true)},
			[]*unstructured.Unstructured{pool(ns, 2, 3, 2, 2), poolSandbox(ns, "sb-1", true), poolSandbox(ns, "sb-2", true)}, Fail, []string{"generation 3"}},
		{"replicas edited", []runtime.Object{readyPod(ns, "sb-1", true)},
			[]*unstructured.Unstructured{pool(ns, 1, 2, 2, 1), poolSandbox(ns, "sb-1", true)}, Fail, []string{"spec.replicas is 1"}},
		{"pool missing", nil, nil, Fail, []string{"not found"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, _, _ := fakeVerifier(t, p, tc.kube, tc.dyn...)
			wantStatus(t, only(t, v, "V07"), tc.want, tc.words...)
		})
	}
	// The previous release's pools never report status.observedGeneration
	// (its CRD has no such field): a full pool of its passes.
	t.Run("previous release, no observedGeneration", func(t *testing.T) {
		prev := localPlatform(t)
		prev.AgentSandbox.Version = pins.AgentSandboxPrevious
		unobserved := pool(ns, 2, 1, 0, 2)
		unstructured.RemoveNestedField(unobserved.Object, "status", "observedGeneration")
		v, _, _ := fakeVerifier(t, prev, []runtime.Object{readyPod(ns, "sb-1", true), readyPod(ns, "sb-2", true)},
			unobserved, poolSandbox(ns, "sb-1", true), poolSandbox(ns, "sb-2", true))
		wantStatus(t, only(t, v, "V07"), Pass, "2/2")
	})
}

// admission answers claim creates the way the API server does with the
// tenant's claims guardrail installed, minus the validations whose messages
// drop names: it stamps the claim with a creationTimestamp from the server's
// clock (this machine's plus skew), evaluates the guardrail's CEL on it and
// refuses with the first failing rule's message, as the policy's Invalid
// status. It records every claim sent, and fails the test on one not sent as
// a dry run.
func admission(t *testing.T, dyn *dynamicfake.FakeDynamicClient, g manifests.Guardrail, skew time.Duration, drop ...string) *[]map[string]any {
	t.Helper()
	policy := g.Policy.DeepCopy()
	policy.Spec.Validations = slices.DeleteFunc(policy.Spec.Validations, func(v admissionv1.Validation) bool {
		return slices.Contains(drop, v.Message)
	})
	if want := len(g.Policy.Spec.Validations) - len(drop); len(policy.Spec.Validations) != want {
		t.Fatalf("%d validations left of %d after dropping %q", len(policy.Spec.Validations), len(g.Policy.Spec.Validations), drop)
	}
	var seen []map[string]any
	dyn.PrependReactor("create", "sandboxclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		create := a.(k8stesting.CreateActionImpl)
		if !slices.Equal(create.GetCreateOptions().DryRun, []string{metav1.DryRunAll}) {
			t.Errorf("claim created with dry run %v: verify must never persist one", create.GetCreateOptions().DryRun)
		}
		u := create.GetObject().(*unstructured.Unstructured).DeepCopy()
		seen = append(seen, u.Object)
		u.SetCreationTimestamp(metav1.NewTime(time.Now().Add(skew)))
		r, err := vaptest.Admit(policy, u.Object, nil)
		if err != nil {
			t.Errorf("the guardrail does not evaluate: %v", err)
			return true, nil, err
		}
		if r != nil {
			return true, nil, policyDenial(u.GetName(), g.Policy.Name, g.Binding.Name, r.Message)
		}
		return true, u, nil
	})
	return &seen
}

// policyDenial is the status the API server returns when a
// ValidatingAdmissionPolicy without a reason denies a request.
func policyDenial(name, policy, binding, msg string) error {
	cause := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", policy, binding, msg)
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 422, Reason: metav1.StatusReasonInvalid,
		Message: fmt.Sprintf("sandboxclaims.extensions.agents.x-k8s.io %q is forbidden: %s", name, cause),
		Details: &metav1.StatusDetails{Group: "extensions.agents.x-k8s.io", Kind: "sandboxclaims", Name: name, Causes: []metav1.StatusCause{{Message: cause}}},
	}}
}

// lifecycleOf is a claim's spec.lifecycle.
func lifecycleOf(t *testing.T, claim map[string]any) map[string]any {
	t.Helper()
	l, found, err := unstructured.NestedMap(claim, "spec", "lifecycle")
	if !found || err != nil {
		t.Fatalf("claim without lifecycle (%v): %v", err, claim)
	}
	return l
}

func TestV08ClaimLifecycleRefusedByEachRule(t *testing.T) {
	p := localPlatform(t)
	tn := p.Tenants[0]
	if tn.Claims.MaxTTL != model.DefaultClaimMaxTTL {
		t.Fatalf("examples/local's max_ttl is %s, the tests assume the default", tn.Claims.MaxTTL)
	}
	g, ok := claimsGuardrail(p, tn)
	if !ok {
		t.Fatal("no claims guardrail")
	}
	msg := manifests.ClaimsGuardrailMessages(tn)

	// Admission holds only new claims: live ones made before the guardrail (no
	// shutdownTime, or one beyond max_ttl) fail V08 by name; one within passes.
	t.Run("live claims that outlive max_ttl", func(t *testing.T) {
		created := time.Now().Add(-time.Hour)
		liveClaim := func(name, shutdownTime string) *unstructured.Unstructured {
			u := probeClaim(tn, name, created)
			u.SetCreationTimestamp(metav1.NewTime(created))
			if shutdownTime == "" {
				unstructured.RemoveNestedField(u.Object, "spec", "lifecycle", "shutdownTime")
			} else {
				_ = unstructured.SetNestedField(u.Object, shutdownTime, "spec", "lifecycle", "shutdownTime")
			}
			return u
		}
		v, _, dyn := fakeVerifier(t, p, nil,
			liveClaim("old-unbounded", ""),
			liveClaim("old-month", created.Add(30*24*time.Hour).UTC().Format(time.RFC3339)),
			liveClaim("fine", created.Add(3*time.Hour).UTC().Format(time.RFC3339)))
		admission(t, dyn, g, 0)
		res := only(t, v, "V08")
		wantStatus(t, res, Fail, "SandboxClaim old-month: its spec.lifecycle.shutdownTime is 716h0m0s beyond max_ttl (4h0m0s)",
			"SandboxClaim old-unbounded: it has no spec.lifecycle.shutdownTime, so nothing ends it")
		if strings.Contains(fmt.Sprint(res), "fine:") {
			t.Errorf("a claim within max_ttl is reported: %v", res)
		}
	})

	t.Run("the guardrail as the spec builds it", func(t *testing.T) {
		v, _, dyn := fakeVerifier(t, p, nil)
		seen := admission(t, dyn, g, 0)
		start := time.Now()
		wantStatus(t, only(t, v, "V08"), Pass, g.Policy.Name, "ttlSecondsAfterFinished", "without spec.lifecycle.shutdownTime",
			"shutdownTime 1h0m0s past max_ttl (4h0m0s)", "admitted with a shutdownTime within max_ttl",
			manifests.GuardrailName(p, tn, "sandbox-lifetime")+": a Sandbox created directly with no shutdownTime", "no live claim or sandbox outlives its end")
		if len(*seen) != 4 {
			t.Fatalf("%d claims sent, want the valid one and three probes", len(*seen))
		}
		// The valid claim's shutdownTime is half of max_ttl away.
		valid := lifecycleOf(t, (*seen)[0])
		at, err := time.Parse(time.RFC3339, fmt.Sprint(valid["shutdownTime"]))
		if err != nil || at.Before(start.Add(2*time.Hour-time.Second)) || at.After(time.Now().Add(2*time.Hour)) {
			t.Errorf("valid claim's shutdownTime %v (%v), want 2h from now", valid["shutdownTime"], err)
		}
		// Each probe differs from the valid claim in its one field.
		for i, c := range []struct {
			field string
			want  any // nil: absent
		}{
			{"ttlSecondsAfterFinished", nil},
			{"shutdownTime", nil},
			{"shutdownTime", at.Add(-2 * time.Hour).Add(5 * time.Hour).Format(time.RFC3339)},
		} {
			probe := lifecycleOf(t, (*seen)[i+1])
			want := maps.Clone(valid)
			delete(want, c.field)
			if c.want != nil {
				want[c.field] = c.want
			}
			if fmt.Sprint(probe) != fmt.Sprint(want) {
				t.Errorf("probe %d lifecycle %v, want %v", i+1, probe, want)
			}
			if fmt.Sprint((*seen)[i+1]["spec"].(map[string]any)["warmPoolRef"]) != fmt.Sprint((*seen)[0]["spec"].(map[string]any)["warmPoolRef"]) {
				t.Errorf("probe %d claims another pool", i+1)
			}
		}
	})

	// Within its margins (the API server's clock up to half of max_ttl behind
	// this machine's, up to an hour ahead) a difference of clocks changes
	// nothing; beyond them, V08 fails and says which claim the server judged
	// otherwise.
	for _, c := range []struct {
		skew  time.Duration
		want  Status
		words string
	}{
		{-50 * time.Minute, Pass, g.Policy.Name},
		{50 * time.Minute, Pass, g.Policy.Name},
		{-130 * time.Minute, Fail, "valid claim"},
		{70 * time.Minute, Fail, "past max_ttl (4h0m0s) was accepted"},
	} {
		t.Run(fmt.Sprintf("the API server's clock %s off", c.skew), func(t *testing.T) {
			v, _, dyn := fakeVerifier(t, p, nil)
			admission(t, dyn, g, c.skew)
			wantStatus(t, only(t, v, "V08"), c.want, c.words)
		})
	}

	// Without one rule the claim that breaks it only is accepted. Before,
	// the TTL probe lacked the shutdown policy too, so the shutdown rule
	// refused it and V08 passed with the TTL rule gone.
	for _, c := range []struct {
		name, rule, words string
	}{
		{"TTL", msg.TTLRequired, "a claim without lifecycle TTL (spec.lifecycle.ttlSecondsAfterFinished) was accepted"},
		{"shutdownTime", msg.ShutdownTimeRequired, "a claim without spec.lifecycle.shutdownTime was accepted"},
		{"max_ttl", msg.ShutdownTimeMax, "a claim with spec.lifecycle.shutdownTime 1h0m0s past max_ttl (4h0m0s) was accepted"},
	} {
		t.Run("without the "+c.name+" rule", func(t *testing.T) {
			v, _, dyn := fakeVerifier(t, p, nil)
			admission(t, dyn, g, 0, c.rule)
			wantStatus(t, only(t, v, "V08"), Fail, c.words)
		})
	}

	// The API server enforces a policy put back by `up` a moment after it is
	// written. A probe answered the old way is asked again within the settle
	// window: a guardrail back in force passes; one still off fails when the
	// window ends, and without a window the first answer is the verdict.
	t.Run("a guardrail that takes effect a moment late", func(t *testing.T) {
		for _, c := range []struct {
			name     string
			settle   time.Duration
			laxFirst int // claims admitted before the guardrail holds; -1: never holds
			want     Status
			words    string
		}{
			{"back in force within the window", 3 * time.Second, 5, Pass, g.Policy.Name},
			{"no window: the first answer stands", 0, 5, Fail, "was accepted"},
			{"still off when the window ends", time.Second, -1, Fail, "a claim without spec.lifecycle.shutdownTime was accepted"},
		} {
			t.Run(c.name, func(t *testing.T) {
				v, _, dyn := fakeVerifier(t, p, nil)
				v.admissionSettle = c.settle
				admission(t, dyn, g, 0)
				sent := 0
				dyn.PrependReactor("create", "sandboxclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
					sent++
					if c.laxFirst < 0 || sent <= c.laxFirst {
						return true, a.(k8stesting.CreateAction).GetObject(), nil
					}
					return false, nil, nil
				})
				start := time.Now()
				wantStatus(t, only(t, v, "V08"), c.want, c.words)
				if c.laxFirst < 0 && time.Since(start) < c.settle {
					t.Errorf("a guardrail still off was reported after %s, before the %s window ended", time.Since(start), c.settle)
				}
				if c.settle == 0 && sent != 4 {
					t.Errorf("%d claims sent without a window, want one asking (4)", sent)
				}
			})
		}
	})

	// A session opened without a claim: the direct Sandbox probe must be
	// refused by the sandbox-lifetime rule, and a live one past its end (the
	// controller down) fails V08 by name with how long it is over.
	t.Run("a direct Sandbox", func(t *testing.T) {
		v, _, dyn := fakeVerifier(t, p, nil)
		admission(t, dyn, g, 0)
		dyn.PrependReactor("create", "sandboxes", func(a k8stesting.Action) (bool, runtime.Object, error) {
			return true, a.(k8stesting.CreateAction).GetObject(), nil
		})
		wantStatus(t, only(t, v, "V08"), Fail, "a Sandbox created directly, with no claim and no shutdownTime, was accepted")

		created := time.Now().Add(-3 * time.Hour)
		sb := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": sandboxesGVR.GroupVersion().String(), "kind": "Sandbox",
			"spec": map[string]any{"shutdownTime": created.Add(time.Hour).UTC().Format(time.RFC3339)},
		}}
		sb.SetNamespace(tn.Namespace)
		sb.SetName("opened-by-hand")
		sb.SetCreationTimestamp(metav1.NewTime(created))
		v, _, dyn = fakeVerifier(t, p, nil, sb)
		admission(t, dyn, g, 0)
		wantStatus(t, only(t, v, "V08"), Fail, "Sandbox opened-by-hand: a session opened without a claim: it still exists",
			"past its end (its spec.shutdownTime "+created.Add(time.Hour).UTC().Format(time.RFC3339)+")")
	})

	t.Run("a probe refused by another rule", func(t *testing.T) {
		v, _, dyn := fakeVerifier(t, p, nil)
		admission(t, dyn, g, 0)
		dyn.PrependReactor("create", "sandboxclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
			u := a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured)
			if u.GetName() != "paddock-verify-beyond-max-ttl" {
				return false, nil, nil
			}
			return true, nil, policyDenial(u.GetName(), g.Policy.Name, g.Binding.Name, msg.ShutdownTimeFormat)
		})
		wantStatus(t, only(t, v, "V08"), Fail, "past max_ttl (4h0m0s) was refused by another rule", "its own is unproven")
	})

	t.Run("verify may not create claims (RBAC)", func(t *testing.T) {
		v, _, dyn := fakeVerifier(t, p, nil)
		dyn.PrependReactor("create", "sandboxclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "extensions.agents.x-k8s.io", Resource: "sandboxclaims"}, "x",
				errors.New(`User "auditor" cannot create resource "sandboxclaims"`))
		})
		wantStatus(t, only(t, v, "V08"), Fail, "cannot create")
	})

	t.Run("refused by another policy", func(t *testing.T) {
		v, _, dyn := fakeVerifier(t, p, nil)
		admission(t, dyn, g, 0)
		dyn.PrependReactor("create", "sandboxclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
			u := a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured)
			if u.GetName() != "paddock-verify-no-ttl" {
				return false, nil, nil
			}
			return true, nil, policyDenial(u.GetName(), "someone-elses-policy", "someone-elses-policy", msg.TTLRequired)
		})
		wantStatus(t, only(t, v, "V08"), Fail, "lifecycle TTL (spec.lifecycle.ttlSecondsAfterFinished) was refused, but not by the claims guardrail")
	})

	t.Run("the policy refuses every claim", func(t *testing.T) {
		v, _, dyn := fakeVerifier(t, p, nil)
		dyn.PrependReactor("create", "sandboxclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
			u := a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured)
			return true, nil, policyDenial(u.GetName(), g.Policy.Name, g.Binding.Name, msg.TTLRequired)
		})
		wantStatus(t, only(t, v, "V08"), Fail, "valid claim")
	})

	t.Run("the policy's message is not the spec's", func(t *testing.T) {
		v, _, dyn := fakeVerifier(t, p, nil)
		admission(t, dyn, g, 0)
		dyn.PrependReactor("create", "sandboxclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
			u := a.(k8stesting.CreateAction).GetObject().(*unstructured.Unstructured)
			if u.GetName() != "paddock-verify-no-shutdown-time" {
				return false, nil, nil
			}
			return true, nil, policyDenial(u.GetName(), g.Policy.Name, g.Binding.Name, "rewritten by hand")
		})
		wantStatus(t, only(t, v, "V08"), Fail, "without spec.lifecycle.shutdownTime was refused, but not by the claims guardrail")
	})
}

// With max_ttl = "none" V08 proves the TTL rule and says that no lifetime is
// enforced; a claim without shutdownTime is admitted.
func TestV08WithoutMaxTTL(t *testing.T) {
	p := localPlatform(t)
	p.Tenants[0].Claims.MaxTTL = 0
	g, ok := claimsGuardrail(p, p.Tenants[0])
	if !ok {
		t.Fatal("no claims guardrail")
	}
	v, _, dyn := fakeVerifier(t, p, nil)
	seen := admission(t, dyn, g, 0)
	wantStatus(t, only(t, v, "V08"), Pass, "ttlSecondsAfterFinished", "max_ttl is none", "no maximum lifetime")
	if len(*seen) != 2 {
		t.Fatalf("%d claims sent, want the valid one and the TTL probe", len(*seen))
	}
	if _, has := lifecycleOf(t, (*seen)[0])["shutdownTime"]; has {
		t.Errorf("the valid claim carries a shutdownTime without max_ttl: %v", (*seen)[0])
	}
}

func TestV09DefaultDenyPresent(t *testing.T) {
	p := localPlatform(t)
	pols, err := manifests.NetworkPolicies(p, p.Tenants[0])
	if err != nil {
		t.Fatal(err)
	}
	var all, withoutDeny []runtime.Object
	for _, np := range pols {
		all = append(all, np)
		if len(np.Spec.Ingress) > 0 || len(np.Spec.Egress) > 0 {
			withoutDeny = append(withoutDeny, np)
		}
	}
	v, _, _ := fakeVerifier(t, p, all)
	wantStatus(t, only(t, v, "V09"), Pass, "default-deny")
	v, _, _ = fakeVerifier(t, p, withoutDeny)
	wantStatus(t, only(t, v, "V09"), Fail, "no default-deny")

	// A policy that selects some pods only is no default-deny.
	narrow := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "default-deny", Namespace: p.Tenants[0].Namespace},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}}}
	v, _, _ = fakeVerifier(t, p, append(withoutDeny, narrow))
	wantStatus(t, only(t, v, "V09"), Fail, "no default-deny")

	waived := *p
	waived.Tenants = append([]model.Tenant(nil), p.Tenants...)
	waived.Tenants[0].Egress.Unrestricted = true
	v, _, _ = fakeVerifier(t, &waived, all)
	wantStatus(t, only(t, v, "V09"), Fail, "waived")
}

// V09 compares the live policies whole with the ones the spec declares: a
// missing or changed policy fails, and so does a rule the spec never spells
// (ingress added to a policy); a stored default (TCP) does not.
func TestV09ComparesWithTheSpec(t *testing.T) {
	p := localPlatform(t)
	pols, err := manifests.NetworkPolicies(p, p.Tenants[0])
	if err != nil {
		t.Fatal(err)
	}
	var withPorts *networkingv1.NetworkPolicy
	for _, np := range pols {
		for _, r := range np.Spec.Egress {
			if len(r.Ports) > 0 && withPorts == nil {
				withPorts = np
			}
		}
	}
	if withPorts == nil {
		t.Fatal("no declared policy with ports")
	}
	with := func(change func(*networkingv1.NetworkPolicy)) []runtime.Object {
		var out []runtime.Object
		for _, np := range pols {
			np = np.DeepCopy()
			if np.Name == withPorts.Name {
				if change == nil {
					continue
				}
				change(np)
			}
			out = append(out, np)
		}
		return out
	}
	v, _, _ := fakeVerifier(t, p, with(func(*networkingv1.NetworkPolicy) {}))
	wantStatus(t, only(t, v, "V09"), Pass, "as declared")
	v, _, _ = fakeVerifier(t, p, with(nil))
	wantStatus(t, only(t, v, "V09"), Fail, "missing "+withPorts.Name)
	v, _, _ = fakeVerifier(t, p, with(func(np *networkingv1.NetworkPolicy) {
		port := intstr.FromInt32(1)
		np.Spec.Egress[0].Ports = append(np.Spec.Egress[0].Ports, networkingv1.NetworkPolicyPort{Port: &port})
	}))
	wantStatus(t, only(t, v, "V09"), Fail, withPorts.Name+": spec.egress")
	v, _, _ = fakeVerifier(t, p, with(func(np *networkingv1.NetworkPolicy) {
		np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{}}
	}))
	wantStatus(t, only(t, v, "V09"), Fail, withPorts.Name+": spec.ingress is [{}], the spec says (absent)")
}

func TestV11ControllerHealth(t *testing.T) {
	p := localPlatform(t)
	dep := func(available int32) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: agentsandbox.ControllerDeployment, Namespace: agentsandbox.Namespace},
			Status: appsv1.DeploymentStatus{AvailableReplicas: available}}
	}
	v, _, _ := fakeVerifier(t, p, []runtime.Object{dep(1)})
	wantStatus(t, only(t, v, "V11"), Pass)
	v, _, _ = fakeVerifier(t, p, []runtime.Object{dep(0)})
	wantStatus(t, only(t, v, "V11"), Fail, "no available replica")
	v, _, _ = fakeVerifier(t, p, nil)
	wantStatus(t, only(t, v, "V11"), Fail, "not found")

	// The local target's out-of-cluster controller: the supervisor's word.
	v, _, _ = fakeVerifier(t, p, []runtime.Object{dep(1)})
	v.opts.ControllerHealth = func(context.Context) (bool, string) { return false, "out-of-cluster controller exited" }
	wantStatus(t, only(t, v, "V11"), Fail, "exited")
}

// A failing check makes the report fail, and the JSON says which.
func TestReportCountsFailures(t *testing.T) {
	p := localPlatform(t)
	v, _, _ := fakeVerifier(t, p, nil)
	rep := v.Run(context.Background())
	if rep.Failed() == 0 {
		t.Fatalf("an empty cluster passed verify: %+v", rep.Results)
	}
	for _, r := range rep.Results {
		if r.Status == Pass {
			t.Errorf("%s %s passed on an empty cluster: %s", r.ID, r.Subject, r.Reason)
		}
	}
}

// Under Strict a check not verifiable here fails the run, and the JSON says
// the report was strict.
func TestStrictCountsNotVerifiable(t *testing.T) {
	p := localPlatform(t)
	v, _, _ := fakeVerifier(t, p, nil)
	rep := v.Run(context.Background())
	n := rep.Count(NotVerifiable)
	if n == 0 {
		t.Fatal("no check was not verifiable with the probes off")
	}
	if got := rep.Failing(); got != rep.Failed() {
		t.Errorf("not strict: %d failing, want the %d failures only", got, rep.Failed())
	}
	v.opts.Strict = true
	rep = v.Run(context.Background())
	if !rep.Strict || rep.Failing() != rep.Failed()+n {
		t.Errorf("strict: %d failing, want %d failed + %d not verifiable", rep.Failing(), rep.Failed(), n)
	}
	var out strings.Builder
	if err := rep.WriteJSON(&out); err != nil || !strings.Contains(out.String(), `"strict": true`) {
		t.Errorf("the JSON report does not say it is strict (%v)", err)
	}
}

// V09 fails a tenant on any policy in its namespace that opens more than the
// spec, judged by effect: an extra policy opening egress to the whole
// internet in two halves, which no field of Paddock's own policies shows.
func TestV09FailsOnAPolicyThatLoosensTheNamespace(t *testing.T) {
	p := localPlatform(t)
	pols, err := manifests.NetworkPolicies(p, p.Tenants[0])
	if err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	for _, np := range pols {
		objs = append(objs, np)
	}
	v, _, _ := fakeVerifier(t, p, objs)
	wantStatus(t, only(t, v, "V09"), Pass, "none opens more than the spec")
	open := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "temporary-debug", Namespace: p.Tenants[0].Namespace},
		Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{
				{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/1"}}, {IPBlock: &networkingv1.IPBlock{CIDR: "128.0.0.0/1"}}}}}}}
	v, _, _ = fakeVerifier(t, p, append(objs, open))
	wantStatus(t, only(t, v, "V09"), Fail, "temporary-debug")
}
