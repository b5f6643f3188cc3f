package drift

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"sigs.k8s.io/yaml"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/schemas"
)

var templatesGVR = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxtemplates"}

// exampleTemplate is the SandboxTemplate Paddock builds for the local
// example's first tenant, and the release's CRD of templates.
func exampleTemplate(t *testing.T) (*unstructured.Unstructured, *unstructured.Unstructured) {
	t.Helper()
	p, diags := schemas.NewLoader().LoadDir("../../examples/local", schemas.LoadOptions{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	b, err := manifests.Build(p)
	if err != nil {
		t.Fatal(err)
	}
	tpl := b.Tenants[0].Templates[0].Object
	raw, err := os.ReadFile("../manifests/agentsandbox/release-v0.5.6.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(raw), "\n---") {
		u := &unstructured.Unstructured{}
		if yaml.Unmarshal([]byte(doc), &u.Object) == nil && u.GetName() == "sandboxtemplates.extensions.agents.x-k8s.io" {
			return tpl, u
		}
	}
	t.Fatal("no SandboxTemplate CRD in the release")
	return nil, nil
}

// storedTemplate is what the API server answers a dry-run of tpl with: the
// CRD's two defaults (read off its schema by hand, not computed), the
// server's metadata, and whatever mutate does (a webhook's patch).
func storedTemplate(t *testing.T, tpl *unstructured.Unstructured, mutate func(map[string]any)) map[string]any {
	t.Helper()
	b, _ := json.Marshal(tpl.Object)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	spec := out["spec"].(map[string]any)
	spec["envVarsInjectionPolicy"] = "Disallowed"
	spec["volumeClaimTemplatesPolicy"] = "Disallowed"
	md := out["metadata"].(map[string]any)
	md["uid"], md["resourceVersion"], md["generation"], md["creationTimestamp"] = "0b9f", "4711", int64(3), "2026-01-02T03:04:05Z"
	md["managedFields"] = []any{map[string]any{"manager": "pulumi-kubernetes-abc", "operation": "Apply"}}
	if mutate != nil {
		mutate(out)
	}
	return out
}

// injectKeys is what a webhook that hands the agent the platform's LLM keys
// patches into a template.
func injectKeys(obj map[string]any) {
	c := obj["spec"].(map[string]any)["podTemplate"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	c["envFrom"] = []any{map[string]any{"secretRef": map[string]any{"name": "llm-keys"}}}
}

const injector = "mutatingwebhookconfiguration/inject-keys"

// The CRD's defaults are the server's: a dry-run answer holding only them
// has nothing of admission's, and the reference is that answer unchanged.
func TestReferenceDefaultsAreNotAdmission(t *testing.T) {
	tpl, crd := exampleTemplate(t)
	stored := storedTemplate(t, tpl, nil)
	ref := splitAdmission(tpl.Object, stored, servedSchema(crd, "v1beta1"), []string{injector}, "sandboxtemplates.extensions.agents.x-k8s.io in agents-team-a")
	if _, ok := ref[admissionKey]; ok {
		t.Fatalf("defaults noted as admission's: %v", ref[admissionKey])
	}
	live := &unstructured.Unstructured{Object: stored}
	if d := Compare(ref, live, Options{}); len(d) != 0 {
		t.Errorf("live as stored differs from the reference: %+v", d)
	}
}

// An envFrom a webhook injects is taken out of the reference, so the live
// template that holds it differs, and the difference names the webhook.
func TestReferenceShowsWhatAdmissionAdded(t *testing.T) {
	tpl, crd := exampleTemplate(t)
	stored := storedTemplate(t, tpl, injectKeys)
	ref := splitAdmission(tpl.Object, stored, servedSchema(crd, "v1beta1"), []string{injector}, "sandboxtemplates.extensions.agents.x-k8s.io in agents-team-a")
	live := &unstructured.Unstructured{Object: stored}
	diffs := Compare(ref, live, Options{})
	if len(diffs) != 1 {
		t.Fatalf("diffs = %+v, want the envFrom alone", diffs)
	}
	f := Fields(diffs, nil)[0]
	if f.Path != "spec.podTemplate.spec.containers[name=agent].envFrom" || f.Declared != nil {
		t.Errorf("field = %s declared %v, want the envFrom, absent from what Paddock applies", f.Path, f.Declared)
	}
	want := "added by admission (mutatingwebhookconfiguration/inject-keys can rewrite sandboxtemplates.extensions.agents.x-k8s.io in agents-team-a)"
	if got := f.AdmissionText(); got != want {
		t.Errorf("admission = %q, want %q", got, want)
	}
	if !reflect.DeepEqual(f.AddedBy, []string{injector}) {
		t.Errorf("added by %v", f.AddedBy)
	}
	// The reference survives the stored-form cache (JSON, Comparable).
	b, _ := json.Marshal(Comparable(ref))
	var cached map[string]any
	if err := json.Unmarshal(b, &cached); err != nil {
		t.Fatal(err)
	}
	if d := Compare(cached, live, Options{}); len(d) != 1 || len(d[0].AddedBy) != 1 {
		t.Errorf("from the cache: %+v", d)
	}
	// Without the split (the reference is the dry-run as it was) the two
	// agree: the very blindness this closes.
	if d := Compare(stored, live, Options{}); len(d) != 0 {
		t.Errorf("the raw dry-run differs from live: %+v", d)
	}
}

// A webhook that changes a declared value, or takes one away, in a custom
// resource is admission's too: defaulting only fills what is absent.
func TestReferenceChangedAndRemovedInCustomResource(t *testing.T) {
	tpl, crd := exampleTemplate(t)
	stored := storedTemplate(t, tpl, func(o map[string]any) {
		c := o["spec"].(map[string]any)["podTemplate"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		c["image"] = "evil.example/agent:latest"
		delete(c["securityContext"].(map[string]any), "readOnlyRootFilesystem")
	})
	ref := splitAdmission(tpl.Object, stored, servedSchema(crd, "v1beta1"), []string{injector}, "sandboxtemplates")
	var paths []string
	for _, d := range Compare(ref, &unstructured.Unstructured{Object: stored}, Options{}) {
		if len(d.AddedBy) == 0 {
			t.Errorf("%s not attributed", d.Path)
		}
		paths = append(paths, d.Path.String())
	}
	want := []string{"spec.podTemplate.spec.containers[name=agent].image", "spec.podTemplate.spec.containers[name=agent].securityContext.readOnlyRootFilesystem"}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("paths = %q, want %q", paths, want)
	}
}

// A Deployment (a built-in kind, whose defaulting is compiled into the API
// server) is judged conservatively: the defaults a real server adds are
// not admission's, a sidecar and an env var are.
func TestReferenceBuiltinKindConservative(t *testing.T) {
	desired := map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "agent-sandbox-controller", "namespace": "agent-sandbox-system"},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app": "c"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "c"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "manager", "image": "c:v1",
					"resources": map[string]any{"limits": map[string]any{"cpu": "1000m"}}}}},
			},
		},
	}
	b, _ := json.Marshal(desired)
	var stored map[string]any
	_ = json.Unmarshal(b, &stored)
	spec := stored["spec"].(map[string]any)
	spec["replicas"], spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"] = int64(1), int64(10), int64(600)
	spec["strategy"] = map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": "25%", "maxUnavailable": "25%"}}
	pod := spec["template"].(map[string]any)["spec"].(map[string]any)
	pod["dnsPolicy"], pod["restartPolicy"], pod["schedulerName"] = "ClusterFirst", "Always", "default-scheduler"
	pod["securityContext"], pod["terminationGracePeriodSeconds"] = map[string]any{}, int64(30)
	c := pod["containers"].([]any)[0].(map[string]any)
	c["imagePullPolicy"], c["terminationMessagePath"], c["terminationMessagePolicy"] = "IfNotPresent", "/dev/termination-log", "File"
	c["resources"].(map[string]any)["limits"].(map[string]any)["cpu"] = "1" // canonicalised, not changed
	// What a webhook adds.
	c["env"] = []any{map[string]any{"name": "HTTPS_PROXY", "value": "http://tap:3128"}}
	pod["containers"] = append(pod["containers"].([]any), map[string]any{"name": "tap", "image": "tap:v1"})
	spec["template"].(map[string]any)["metadata"].(map[string]any)["annotations"] = map[string]any{"tap/injected": "true"}

	ref := splitAdmission(desired, stored, nil, []string{injector}, "deployments.apps in agent-sandbox-system")
	var paths []string
	for _, d := range Compare(ref, &unstructured.Unstructured{Object: stored}, Options{}) {
		if len(d.AddedBy) == 0 {
			t.Errorf("%s (%v) is a difference no admission note explains", d.Path, d.Live)
		}
		paths = append(paths, d.Path.String())
	}
	want := []string{
		"spec.template.metadata.annotations",
		"spec.template.spec.containers[name=manager].env",
		"spec.template.spec.containers[name=tap]",
	}
	if !reflect.DeepEqual(paths, want) {
		t.Errorf("paths = %q, want %q", paths, want)
	}
}

// The label the API server gives every namespace is not admission's.
func TestReferenceNamespaceServerLabel(t *testing.T) {
	desired := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "agents-a", "labels": map[string]any{"team": "a"}}}
	stored := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "agents-a", "labels": map[string]any{
		"team": "a", "kubernetes.io/metadata.name": "agents-a", "mesh/inject": "enabled"}}, "spec": map[string]any{"finalizers": []any{"kubernetes"}}}
	ref := splitAdmission(desired, stored, nil, []string{injector}, "namespaces agents-a")
	d := Compare(ref, &unstructured.Unstructured{Object: stored}, Options{})
	if len(d) != 1 || d[0].Path.String() != `metadata.labels["mesh/inject"]` {
		t.Errorf("diffs = %+v, want the mesh label alone", d)
	}
}

// Candidates are the webhooks whose rules send an UPDATE of the object and
// whose namespace selector selects its namespace's live labels; Reference
// reads them, the namespace and the CRD from the cluster.
func TestAdmissionReferenceFromCluster(t *testing.T) {
	tpl, crd := exampleTemplate(t)
	rules := func(ops ...admissionv1.OperationType) []admissionv1.RuleWithOperations {
		return []admissionv1.RuleWithOperations{{Operations: ops, Rule: admissionv1.Rule{
			APIGroups: []string{"extensions.agents.x-k8s.io"}, APIVersions: []string{"*"}, Resources: []string{"sandboxtemplates"}}}}
	}
	webhook := func(name string, sel *metav1.LabelSelector, ops ...admissionv1.OperationType) runtime.Object {
		c := &admissionv1.MutatingWebhookConfiguration{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Webhooks:   []admissionv1.MutatingWebhook{{Name: name + ".example.com", NamespaceSelector: sel, Rules: rules(ops...)}},
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
		if err != nil {
			t.Fatal(err)
		}
		return &unstructured.Unstructured{Object: m}
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{
		"name": "agents-team-a", "labels": map[string]any{"paddock.dev/tenant": "team-a"}}}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		webhooksGVR: "MutatingWebhookConfigurationList",
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicies"}:       "MutatingAdmissionPolicyList",
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicybindings"}: "MutatingAdmissionPolicyBindingList",
	},
		webhook("inject-keys", &metav1.LabelSelector{MatchLabels: map[string]string{"paddock.dev/tenant": "team-a"}}, admissionv1.Create, admissionv1.Update),
		webhook("other-tenant", &metav1.LabelSelector{MatchLabels: map[string]string{"paddock.dev/tenant": "team-b"}}, admissionv1.OperationAll),
		webhook("on-create-only", nil, admissionv1.Create),
		ns, crd)
	a := NewAdmission(dyn)
	refs, what, err := a.Candidates(context.Background(), templatesGVR, "SandboxTemplate", "agents-team-a", "agent")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(refs, []string{injector}) || what != "sandboxtemplates.extensions.agents.x-k8s.io in agents-team-a" {
		t.Errorf("candidates %q (%s), want inject-keys alone", refs, what)
	}
	ref, err := a.Reference(context.Background(), templatesGVR, tpl, storedTemplate(t, tpl, injectKeys))
	if err != nil {
		t.Fatal(err)
	}
	d := Compare(ref, &unstructured.Unstructured{Object: storedTemplate(t, tpl, injectKeys)}, Options{})
	if len(d) != 1 || d[0].Path.String() != "spec.podTemplate.spec.containers[name=agent].envFrom" {
		t.Errorf("diffs = %+v", d)
	}
	// No webhook can rewrite the template: nothing is taken out, whatever
	// the answer holds (the control broken the other way round).
	quiet := NewAdmission(dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		webhooksGVR: "MutatingWebhookConfigurationList",
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicies"}:       "MutatingAdmissionPolicyList",
		{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingadmissionpolicybindings"}: "MutatingAdmissionPolicyBindingList",
	}, ns, crd))
	stored := storedTemplate(t, tpl, injectKeys)
	if ref, err := quiet.Reference(context.Background(), templatesGVR, tpl, stored); err != nil || !reflect.DeepEqual(ref, stored) {
		t.Errorf("without a candidate the reference changed (%v)", err)
	}
}
