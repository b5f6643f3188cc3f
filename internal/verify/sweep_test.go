package verify

import (
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"

	"github.com/paddock-platform/paddock/internal/manifests"
)

// V14 fails where drift's sweep finds something outside the stack that
// weakens the platform: a guardrail neutered by matchConditions (which the
// whole-object comparison of NetworkPolicies never read), or a mutating
// webhook on the tenant's pods; it passes on the guardrails as declared.
func TestV14SweepFindingsFailVerify(t *testing.T) {
	p := localPlatform(t)
	tn := p.Tenants[0]
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tn.Namespace, Labels: map[string]string{
		"kubernetes.io/metadata.name": tn.Namespace, "pod-security.kubernetes.io/enforce": "restricted"}}}
	objects := func(neuter string, extra ...runtime.Object) []runtime.Object {
		out := []runtime.Object{ns}
		for _, g := range manifests.Guardrails(p, tn) {
			b := g.Binding.DeepCopy()
			if g.Policy.Name == manifests.GuardrailName(p, tn, neuter) {
				b.Spec.MatchResources.ObjectSelector = nil
				pol := g.Policy.DeepCopy()
				pol.Spec.MatchConditions = []admissionv1.MatchCondition{{Name: "never", Expression: "false"}}
				out = append(out, pol, b)
				continue
			}
			out = append(out, g.Policy.DeepCopy(), b)
		}
		return append(out, extra...)
	}

	of := func(results []Result, subject string) []Result {
		for _, r := range results {
			if r.Subject == subject {
				return []Result{r}
			}
		}
		t.Fatalf("no V14 result for %s: %+v", subject, results)
		return nil
	}
	v, kube, _ := fakeVerifier(t, p, objects(""))
	res := only(t, v, "V14")
	wantStatus(t, of(res, "cluster"), Pass, "nothing outside the stack weakens it")
	wantStatus(t, of(res, tn.Namespace), Pass, "nothing outside the stack weakens it")

	v, _, _ = fakeVerifier(t, p, objects("pod-runtime"))
	wantStatus(t, of(only(t, v, "V14"), tn.Namespace), Fail, "S07", manifests.GuardrailName(p, tn, "pod-runtime"), "its matchCondition never (false)")

	injector := &admissionv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "sidecar"}, Webhooks: []admissionv1.MutatingWebhook{{
		Name: "sidecar.example.com",
		Rules: []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create},
			Rule: admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
	}}}
	v, kube, _ = fakeVerifier(t, p, objects("", injector))
	kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Namespaced: true, Kind: "Pod"}, {Name: "namespaces", Kind: "Namespace"}}},
	}
	wantStatus(t, of(only(t, v, "V14"), "cluster"), Fail, "S09 MutatingWebhookConfiguration sidecar", "create pods in agent-sandbox-system, "+tn.Namespace)

	// No tenant namespace: nothing to judge is no pass.
	v, _, _ = fakeVerifier(t, p, nil)
	wantStatus(t, of(only(t, v, "V14"), tn.Namespace), Fail, "run `paddock up`")
}
