// Package poolstest builds the objects of a warm pool as the Agent Sandbox
// controller (v0.5.6) shapes them, for tests of the packages that read them.
package poolstest

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	sandboxv1beta1 "sigs.k8s.io/agent-sandbox/api/v1beta1"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/pools"
)

// PodLabel is on every pod the controller makes for a sandbox.
const PodLabel = "agents.x-k8s.io/sandbox-name-hash"

// Template is the SandboxTemplate Paddock applies for a template name of
// tenant "team-a" (namespace agents-team-a) running image img.
func Template(t testing.TB, name, img string) *extv1beta1.SandboxTemplate {
	t.Helper()
	p := &model.Platform{Name: "local-demo"}
	tn := model.DefaultTenant("team-a")
	tpl := model.DefaultTemplate(name)
	tpl.Image, tpl.RuntimeClass = img, "gvisor"
	tpl.Command = []string{"/bin/sh", "-c", "sleep 3600"}
	st, err := manifests.SandboxTemplate(p, tn, tpl)
	if err != nil {
		t.Fatal(err)
	}
	st.UID = types.UID("tpl-" + name)
	return st
}

// U is obj's wire form.
func U(t testing.TB, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	u, err := manifests.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// WarmPool is a pool in namespace ns of replicas sandboxes of template,
// with update strategy strategy ("" leaves it to the CRD).
func WarmPool(t testing.TB, ns, name, template, strategy string, replicas int32) *unstructured.Unstructured {
	t.Helper()
	wp := &extv1beta1.SandboxWarmPool{
		TypeMeta:   metav1.TypeMeta{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxWarmPool"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("pool-" + ns + "-" + name)},
		Spec:       extv1beta1.SandboxWarmPoolSpec{Replicas: &replicas, TemplateRef: extv1beta1.SandboxTemplateRef{Name: template}},
	}
	if strategy != "" {
		wp.Spec.UpdateStrategy = &extv1beta1.SandboxWarmPoolUpdateStrategy{Type: extv1beta1.SandboxWarmPoolUpdateStrategyType(strategy)}
	}
	return U(t, wp)
}

// Sandbox is a sandbox as the controller makes it for pool from tpl: its
// labels, annotation, owner and the template's blueprint with the
// controller's default (no service account token), Ready when ready.
func Sandbox(t testing.TB, pool *unstructured.Unstructured, tpl *extv1beta1.SandboxTemplate, name string, created time.Time, ready bool) unstructured.Unstructured {
	t.Helper()
	hash, err := pools.BlueprintHash(&tpl.Spec.SandboxBlueprint)
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{
		sandboxv1beta1.SandboxWarmPoolLabel:                  pools.NameHash(pool.GetName()),
		sandboxv1beta1.SandboxTemplateRefHashLabel:           pools.NameHash(tpl.Name),
		sandboxv1beta1.SandboxLaunchTypeLabel:                sandboxv1beta1.SandboxLaunchTypeWarm,
		sandboxv1beta1.DeprecatedSandboxPodTemplateHashLabel: "0badc0de",
		sandboxv1beta1.SandboxTemplateHashLabel:              hash,
		sandboxv1beta1.CreatedByLabel:                        "controller",
	}
	sb := &sandboxv1beta1.Sandbox{
		TypeMeta: metav1.TypeMeta{APIVersion: sandboxv1beta1.GroupVersion.String(), Kind: "Sandbox"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: pool.GetNamespace(), Labels: labels, UID: types.UID("sb-" + name),
			Annotations: map[string]string{sandboxv1beta1.SandboxTemplateRefAnnotation: tpl.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxWarmPool",
				Name: pool.GetName(), UID: pool.GetUID(), Controller: new(true), BlockOwnerDeletion: new(true)}},
		},
		Spec: sandboxv1beta1.SandboxSpec{SandboxBlueprint: *tpl.Spec.SandboxBlueprint.DeepCopy()},
	}
	pt := &sb.Spec.PodTemplate
	if pt.ObjectMeta.Labels == nil {
		pt.ObjectMeta.Labels = map[string]string{}
	}
	pt.ObjectMeta.Labels[sandboxv1beta1.SandboxWarmPoolLabel] = labels[sandboxv1beta1.SandboxWarmPoolLabel]
	pt.ObjectMeta.Labels[sandboxv1beta1.SandboxTemplateHashLabel] = hash
	if pt.Spec.AutomountServiceAccountToken == nil {
		pt.Spec.AutomountServiceAccountToken = new(false)
	}
	u := U(t, sb)
	u.SetCreationTimestamp(metav1.NewTime(created))
	if ready {
		// ToUnstructured drops the status: set it on the wire form.
		u.Object["status"] = map[string]any{"conditions": []any{map[string]any{
			"type": "Ready", "status": "True", "reason": "DependenciesReady", "lastTransitionTime": created.Format(time.RFC3339)}}}
	}
	return *u
}

// Adopt does to sb what the claim controller does when claim takes it: the
// pool's labels go, the claim becomes its controller.
func Adopt(sb unstructured.Unstructured, claim string) unstructured.Unstructured {
	l := sb.GetLabels()
	delete(l, sandboxv1beta1.SandboxWarmPoolLabel)
	delete(l, sandboxv1beta1.SandboxTemplateHashLabel)
	delete(l, sandboxv1beta1.DeprecatedSandboxPodTemplateHashLabel)
	sb.SetLabels(l)
	sb.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: extv1beta1.GroupVersion.String(), Kind: "SandboxClaim", Name: claim, UID: types.UID("claim-" + claim), Controller: new(true)}})
	return sb
}

// Claim is a claim in namespace ns on pool.
func Claim(ns, name, pool string) unstructured.Unstructured {
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": extv1beta1.GroupVersion.String(), "kind": "SandboxClaim",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"warmPoolRef": map[string]any{"name": pool}},
	}}
}

// Pod is a sandbox's pod in namespace ns, Ready or not.
func Pod(ns, name string, ready bool) corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{PodLabel: pools.NameHash(name)}},
		Status:     corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
	}
}

// Dynamic is a fake dynamic client that lists the four Agent Sandbox
// resources, holding objs (each filed under its resource: the fake's guess
// from the kind would file a Sandbox under "sandboxs").
func Dynamic(t testing.TB, objs ...*unstructured.Unstructured) *dynamicfake.FakeDynamicClient {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		agentsandbox.SandboxWarmPools: "SandboxWarmPoolList", agentsandbox.SandboxTemplates: "SandboxTemplateList",
		agentsandbox.Sandboxes: "SandboxList", agentsandbox.SandboxClaims: "SandboxClaimList",
	})
	for _, u := range objs {
		if err := dyn.Tracker().Create(Resource(u), u, u.GetNamespace()); err != nil {
			t.Fatal(err)
		}
	}
	return dyn
}

// Resource is the resource of an Agent Sandbox object.
func Resource(u *unstructured.Unstructured) schema.GroupVersionResource {
	switch u.GetKind() {
	case "Sandbox":
		return agentsandbox.Sandboxes
	case "SandboxTemplate":
		return agentsandbox.SandboxTemplates
	case "SandboxWarmPool":
		return agentsandbox.SandboxWarmPools
	}
	return agentsandbox.SandboxClaims
}
