package converge

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"github.com/paddock-platform/paddock/internal/model"
)

// injectingCluster is a cluster with the release's SandboxTemplate CRD, a
// tenant namespace and a mutating webhook "inject-keys" on its templates:
// every write of a template (dry-run or not) comes back with the CRD's
// defaults and, while the webhook stands, an envFrom of the secret
// llm-keys.
type injectingCluster struct {
	c        *Clients
	dyn      *dynamicfake.FakeDynamicClient
	kube     *kubefake.Clientset
	template *unstructured.Unstructured
	updates  int
}

var sandboxTemplatesGVR = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxtemplates"}

func newInjectingCluster(t *testing.T) *injectingCluster {
	t.Helper()
	raw, err := os.ReadFile("../manifests/agentsandbox/release-v0.5.6.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd *unstructured.Unstructured
	for _, doc := range strings.Split(string(raw), "\n---") {
		u := &unstructured.Unstructured{}
		if yaml.Unmarshal([]byte(doc), &u.Object) == nil && u.GetName() == "sandboxtemplates.extensions.agents.x-k8s.io" {
			crd = u
		}
	}
	tpl := obj("extensions.agents.x-k8s.io/v1beta1", "SandboxTemplate", "agents-a", "python", map[string]any{"spec": map[string]any{
		"networkPolicyManagement": "Managed",
		"podTemplate": map[string]any{"spec": map[string]any{
			"automountServiceAccountToken": false,
			"containers":                   []any{map[string]any{"name": "agent", "image": "python:3.13"}},
		}},
	}})
	ns := obj("v1", "Namespace", "", "agents-a", nil)
	ns.SetLabels(map[string]string{"paddock.dev/tenant": "a"})
	webhook := &admissionv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: "inject-keys"},
		Webhooks: []admissionv1.MutatingWebhook{{
			Name:              "inject-keys.example.com",
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"paddock.dev/tenant": "a"}},
			Rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
				Rule: admissionv1.Rule{APIGroups: []string{"extensions.agents.x-k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"sandboxtemplates"}}}},
		}},
	}
	wu, err := runtime.DefaultUnstructuredConverter.ToUnstructured(webhook)
	if err != nil {
		t.Fatal(err)
	}
	ic := &injectingCluster{template: tpl}
	ic.kube = kubefake.NewSimpleClientset(webhook)
	live := ic.write(tpl.DeepCopy())
	ic.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		sandboxTemplatesGVR: "SandboxTemplateList",
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}:   "MutatingWebhookConfigurationList",
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicies"}:       "MutatingAdmissionPolicyList",
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicybindings"}: "MutatingAdmissionPolicyBindingList",
	}, live, ns, crd, &unstructured.Unstructured{Object: wu})
	ic.dyn.PrependReactor("update", "sandboxtemplates", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ua := a.(k8stesting.UpdateActionImpl)
		body := ic.write(ua.GetObject().(*unstructured.Unstructured).DeepCopy())
		if len(ua.GetUpdateOptions().DryRun) > 0 {
			return true, body, nil
		}
		ic.updates++
		return true, body, ic.dyn.Tracker().Update(ua.GetResource(), body, ua.GetNamespace())
	})
	ic.c = newClients(ic.kube, ic.dyn)
	return ic
}

// write is what the API server stores for a write of a template: the CRD's
// defaults, and the webhook's envFrom while it stands.
func (ic *injectingCluster) write(u *unstructured.Unstructured) *unstructured.Unstructured {
	_ = unstructured.SetNestedField(u.Object, "Disallowed", "spec", "envVarsInjectionPolicy")
	_ = unstructured.SetNestedField(u.Object, "Disallowed", "spec", "volumeClaimTemplatesPolicy")
	if l, _ := ic.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().List(context.Background(), metav1.ListOptions{}); l != nil && len(l.Items) > 0 {
		cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "podTemplate", "spec", "containers")
		c := cs[0].(map[string]any)
		c["envFrom"] = []any{map[string]any{"secretRef": map[string]any{"name": "llm-keys"}}}
		_ = unstructured.SetNestedSlice(u.Object, cs, "spec", "podTemplate", "spec", "containers")
	}
	return u
}

// The comparison of `up` and `drift` (CompareWhole, its stored-form cache
// keyed by the admission fingerprint) reports the envFrom the webhook adds,
// naming it; after the repair's write the envFrom is back, and `up` fails
// naming the webhook and the fix rather than calling the template
// repaired. Trusted in the spec, the envFrom is kept and said.
func TestCompareWholeSplitsAdmission(t *testing.T) {
	ic := newInjectingCluster(t)
	cache := testCache(t)
	var out bytes.Buffer
	p := &model.Platform{Name: "demo"}
	res, err := CompareWhole(context.Background(), ic.c, p, cache, []*Object{testObject(ic.template)}, FormsRecompute, nil, &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Report.Resources) != 1 || len(res.Report.Resources[0].Fields) != 1 {
		t.Fatalf("report %+v, want the template's envFrom alone", res.Report.Resources)
	}
	f := res.Report.Resources[0].Fields[0]
	if f.Path != "spec.podTemplate.spec.containers[name=agent].envFrom" ||
		f.AdmissionText() != "added by admission (mutatingwebhookconfiguration/inject-keys can rewrite sandboxtemplates.extensions.agents.x-k8s.io in agents-a)" {
		t.Errorf("field %s: %s", f.Path, f.AdmissionText())
	}

	n, err := RepairLive(context.Background(), &out, "up", res)
	if err != nil || n != 1 || ic.updates != 1 {
		t.Fatalf("repair: %d repaired, %d writes, %v", n, ic.updates, err)
	}
	if !strings.Contains(out.String(), "(added by admission (mutatingwebhookconfiguration/inject-keys") {
		t.Errorf("the repair does not say admission added it:\n%s", out.String())
	}
	err = ConfirmRepaired(context.Background(), ic.c, p, cache, res, &out)
	for _, want := range []string{"not repaired: mutating admission adds it back on every write",
		"SandboxTemplate agents-a/python: spec.podTemplate.spec.containers[name=agent].envFrom added by admission (mutatingwebhookconfiguration/inject-keys",
		"kubectl delete mutatingwebhookconfiguration inject-keys",
		`trust_admission "inject-keys" { kind = "MutatingWebhookConfiguration"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("confirm: %v\nwant it to say %q", err, want)
		}
	}

	// Trusted: the same write, and the envFrom back, is kept and said.
	out.Reset()
	p.TrustedAdmission = []model.TrustedAdmission{{Kind: model.AdmissionWebhook, Name: "inject-keys", Reason: "the gateway hands sandboxes their keys"}}
	if err := ConfirmRepaired(context.Background(), ic.c, p, cache, res, &out); err != nil {
		t.Errorf("trusted: %v", err)
	}
	if !strings.Contains(out.String(), "trusted in the spec (the gateway hands sandboxes their keys), adds it; kept") {
		t.Errorf("trusted: the kept envFrom is not said:\n%s", out.String())
	}

	// The webhook gone: the repair holds, and a fresh comparison (the
	// fingerprint changed, so no cached form is reused) is clean.
	if err := ic.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), "inject-keys", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p.TrustedAdmission = nil
	res, err = CompareWhole(context.Background(), ic.c, p, cache, []*Object{testObject(ic.template)}, FormsCached, nil, &out)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := RepairLive(context.Background(), &out, "up", res); err != nil || n != 1 {
		t.Fatalf("repair without the webhook: %d, %v", n, err)
	}
	if err := ConfirmRepaired(context.Background(), ic.c, p, cache, res, &out); err != nil {
		t.Errorf("without the webhook the repair holds, got %v", err)
	}
}

// Trusted in the spec before the repair, the envFrom only the trusted webhook
// could have added is no repair at all: up writes nothing, counts nothing
// and says it kept the field.
func TestKeepTrustedBeforeTheRepair(t *testing.T) {
	ic := newInjectingCluster(t)
	cache := testCache(t)
	var out bytes.Buffer
	p := &model.Platform{Name: "demo", TrustedAdmission: []model.TrustedAdmission{{Kind: model.AdmissionWebhook, Name: "inject-keys", Reason: "the gateway hands sandboxes their keys"}}}
	res, err := CompareWhole(context.Background(), ic.c, p, cache, []*Object{testObject(ic.template)}, FormsRecompute, nil, &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Report.Resources) != 1 {
		t.Fatalf("report %+v, want the template's envFrom before the trust is applied", res.Report.Resources)
	}
	KeepTrusted(&out, "up", p, res)
	if len(res.Report.Resources) != 0 {
		t.Errorf("after KeepTrusted: %+v, want nothing left to repair", res.Report.Resources)
	}
	n, err := RepairLive(context.Background(), &out, "up", res)
	if err != nil || n != 0 || ic.updates != 0 {
		t.Fatalf("repair: %d repaired, %d writes, %v; want none", n, ic.updates, err)
	}
	if !strings.Contains(out.String(), "paddock up: SandboxTemplate agents-a/python spec.podTemplate.spec.containers[name=agent].envFrom: added by mutatingwebhookconfiguration/inject-keys, trusted in the spec (the gateway hands sandboxes their keys); kept") {
		t.Errorf("the kept field is not said:\n%s", out.String())
	}
}
