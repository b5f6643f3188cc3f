package converge

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/model"
)

// The provider's canonical quantities are the same input; a changed label,
// or a value that stopped being secret, is not.
func TestInputsEqual(t *testing.T) {
	if !inputsEqual(map[string]any{"hard": map[string]any{"cpu": "1000m"}}, map[string]any{"hard": map[string]any{"cpu": "1"}}) {
		t.Error("the provider's canonical quantity taken for a spec change")
	}
	if inputsEqual(map[string]any{"labels": map[string]any{"v": "1.0"}}, map[string]any{"labels": map[string]any{"v": "1"}}) {
		t.Error("a changed label taken for the same input")
	}
	if inputsEqual(map[string]any{"a": secret{"x"}}, map[string]any{"a": "x"}) {
		t.Error("a value that stopped being secret taken for the same input")
	}
}

// --- the live comparison, on a fake cluster ---

var (
	nsGVR      = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	npGVR      = schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}
	cmGVR      = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	testLabels = map[string]any{model.PlatformLabel: "demo"}
)

func obj(apiVersion, kind, ns, name string, extra map[string]any) *unstructured.Unstructured {
	md := map[string]any{"name": name, "labels": testLabels}
	if ns != "" {
		md["namespace"] = ns
	}
	o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md}
	for k, v := range extra {
		o[k] = v
	}
	return &unstructured.Unstructured{Object: o}
}

// testObject is u declared, with the state the provider recorded for it.
func testObject(u *unstructured.Unstructured) *Object {
	return &Object{Desired: u, GVR: GVROf(u), State: &StateResource{
		URN:  "urn:pulumi:s::paddock::" + TypeToken(u.GetAPIVersion(), u.GetKind()) + "::" + ObjectKey(u),
		Type: TypeToken(u.GetAPIVersion(), u.GetKind()), Inputs: u.Object,
		Outputs: map[string]any{"__fieldManager": "pulumi-kubernetes-abc"},
	}}
}

// fakeServer is a dynamic fake whose updates behave as the API server's: a
// dry-run persists nothing and returns the object as it would be stored
// (here with a defaulted field), a real update stores the body.
type fakeServer struct {
	dyn     *dynamicfake.FakeDynamicClient
	dryRuns []string
	updates []string
}

func newFakeServer(objects ...runtime.Object) *fakeServer {
	f := &fakeServer{dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{nsGVR: "NamespaceList", npGVR: "NetworkPolicyList", cmGVR: "ConfigMapList"}, objects...)}
	f.dyn.PrependReactor("update", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ua := a.(k8stesting.UpdateActionImpl)
		body := ua.GetObject().(*unstructured.Unstructured).DeepCopy()
		if body.GetKind() == "NetworkPolicy" {
			// A server default the desired object does not spell.
			_ = unstructured.SetNestedStringSlice(body.Object, []string{"Ingress"}, "spec", "policyTypes")
		}
		if len(ua.GetUpdateOptions().DryRun) > 0 {
			f.dryRuns = append(f.dryRuns, body.GetName())
			return true, body, nil
		}
		f.updates = append(f.updates, body.GetName())
		return true, body, f.dyn.Tracker().Update(ua.GetResource(), body, ua.GetNamespace())
	})
	return f
}

// testCache is a throwaway file for a stack's cache of stored forms.
func testCache(t *testing.T) string {
	return filepath.Join(t.TempDir(), "s.json")
}

func TestCompareLive(t *testing.T) {
	ns := obj("v1", "Namespace", "", "agents-a", nil)
	ns.SetLabels(map[string]string{model.PlatformLabel: "demo", "pod-security.kubernetes.io/enforce": "restricted"})
	deny := obj("networking.k8s.io/v1", "NetworkPolicy", "agents-a", "default-deny", map[string]any{"spec": map[string]any{"podSelector": map[string]any{}}})
	open := obj("networking.k8s.io/v1", "NetworkPolicy", "agents-a", "dns", map[string]any{"spec": map[string]any{"podSelector": map[string]any{}}})
	same := obj("v1", "ConfigMap", "agents-a", "same", map[string]any{"data": map[string]any{"k": "v"}})
	// An object the spec does not label is found by a GET.
	unlabelled := obj("v1", "ConfigMap", "agents-a", "unlabelled", map[string]any{"data": map[string]any{"k": "v"}})
	unlabelled.SetLabels(nil)
	going := obj("v1", "ConfigMap", "agents-a", "going", map[string]any{"data": map[string]any{"k": "v"}})

	liveNS := ns.DeepCopy()
	liveNS.SetLabels(map[string]string{model.PlatformLabel: "demo"}) // the PSS label removed
	liveGoing := going.DeepCopy()
	now := metav1.NewTime(time.Now())
	liveGoing.SetDeletionTimestamp(&now)
	liveGoing.SetFinalizers([]string{"example.com/hold"})
	// Stored with the server's default, and an ingress rule nobody declared.
	liveOpen := open.DeepCopy()
	_ = unstructured.SetNestedStringSlice(liveOpen.Object, []string{"Ingress"}, "spec", "policyTypes")
	_ = unstructured.SetNestedSlice(liveOpen.Object, []any{map[string]any{}}, "spec", "ingress")

	srv := newFakeServer(liveNS, liveOpen, same.DeepCopy(), unlabelled.DeepCopy(), liveGoing)
	cache := testCache(t)
	objs := []*Object{testObject(ns), testObject(deny), testObject(open), testObject(same), testObject(unlabelled), testObject(going)}
	forms := loadStoredForms(cache, "v1.35.4", false, true)
	res, err := compareLive(context.Background(), srv.dyn, "demo", objs, forms, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Lists != 3 {
		t.Errorf("%d lists, want one per kind (3)", res.Lists)
	}
	// default-deny (gone), unlabelled (found by GET); going is listed.
	if res.Gets != 2 {
		t.Errorf("%d gets, want 2 (only objects missing from their list)", res.Gets)
	}
	if res.DryRuns != 4 {
		t.Errorf("%d dry-runs (%v), want one per live object (4) on an empty cache", res.DryRuns, srv.dryRuns)
	}
	got := map[string]drift.Resource{}
	for _, r := range res.Report.Resources {
		got[r.Kind+" "+r.Name] = r
	}
	if len(got) != 4 {
		t.Fatalf("reported %+v, want the namespace, default-deny, dns and the terminating config map", res.Report.Resources)
	}
	r := got["Namespace agents-a"]
	if r.Change != drift.Modified || r.Cause != drift.CauseCluster || r.Repair == "" || len(r.Fields) != 1 ||
		r.Fields[0].Path != `metadata.labels["pod-security.kubernetes.io/enforce"]` || r.Fields[0].Declared != "restricted" || r.Fields[0].Live != nil {
		t.Errorf("namespace: %+v", r)
	}
	if r.URN == "" || r.Type != "kubernetes:core/v1:Namespace" {
		t.Errorf("namespace URN/type: %q %q", r.URN, r.Type)
	}
	// The defaulted policyTypes is no drift; the added ingress is.
	if r := got["NetworkPolicy agents-a/dns"]; r.Change != drift.Modified || len(r.Fields) != 1 || r.Fields[0].Path != "spec.ingress" || r.Fields[0].Declared != nil {
		t.Errorf("opened policy: %+v", r)
	}
	if r := got["NetworkPolicy agents-a/default-deny"]; r.Change != drift.Missing || r.Repair != "`paddock up` recreates it" {
		t.Errorf("deleted policy: %+v", r)
	}
	if r := got["ConfigMap agents-a/going"]; r.Change != drift.Missing {
		t.Errorf("terminating object: %+v", r)
	}
	if err := forms.save(); err != nil {
		t.Fatal(err)
	}

	// The next comparison answers from the cache: an object that matches
	// costs no dry-run; one that differs is confirmed with a fresh one.
	forms = loadStoredForms(cache, "v1.35.4", false, true)
	res, err = compareLive(context.Background(), srv.dyn, "demo", objs, forms, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.DryRuns != 2 || len(res.Report.Resources) != 4 {
		t.Errorf("from the cache: %d dry-runs, %d resources; want 2 (the drifted namespace and dns) and the same 4", res.DryRuns, len(res.Report.Resources))
	}
	// Another server version starts afresh.
	forms = loadStoredForms(cache, "v1.36.0", false, true)
	if res, _ = compareLive(context.Background(), srv.dyn, "demo", objs, forms, nil); res.DryRuns != 4 {
		t.Errorf("another server version reused the cache: %d dry-runs", res.DryRuns)
	}
}
