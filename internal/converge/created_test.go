package converge

import (
	"context"
	"encoding/json"
	"sort"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/paddock-platform/paddock/internal/drift"
)

// creationServer is a fake cluster for the creations of a run: lists carry
// a resourceVersion (the watch's starting point), a dry-run update answers
// the body with a NetworkPolicy's defaulted policyTypes and persists
// nothing, and every kind a run watches is served.
type creationServer struct {
	fake    *dynamicfake.FakeDynamicClient
	dryRuns []string
}

func newCreationServer(objects ...runtime.Object) *creationServer {
	kinds := map[schema.GroupVersionResource]string{nsGVR: "NamespaceList", npGVR: "NetworkPolicyList", cmGVR: "ConfigMapList"}
	for _, gvr := range admissionKinds {
		kinds[gvr] = "List"
	}
	s := &creationServer{fake: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds, objects...)}
	s.fake.PrependReactor("update", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ua := a.(k8stesting.UpdateActionImpl)
		body := ua.GetObject().(*unstructured.Unstructured).DeepCopy()
		if body.GetKind() == "NetworkPolicy" {
			_ = unstructured.SetNestedStringSlice(body.Object, []string{"Ingress"}, "spec", "policyTypes")
		}
		if len(ua.GetUpdateOptions().DryRun) > 0 {
			s.dryRuns = append(s.dryRuns, body.GetName())
			return true, body, nil
		}
		return true, body, s.fake.Tracker().Update(ua.GetResource(), body, ua.GetNamespace())
	})
	return s
}

func (s *creationServer) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return listedAt{s.fake.Resource(gvr)}
}

// listedAt gives every list the resourceVersion a real server gives it.
type listedAt struct {
	dynamic.NamespaceableResourceInterface
}

func (r listedAt) List(ctx context.Context, o metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	l, err := r.NamespaceableResourceInterface.List(ctx, o)
	if l != nil {
		l.SetResourceVersion("1")
	}
	return l, err
}

// stored is u as the server stores it: a NetworkPolicy's policyTypes
// defaulted, with uid and managedFields.
func stored(u *unstructured.Unstructured, uid string, managers ...string) *unstructured.Unstructured {
	s := u.DeepCopy()
	if s.GetKind() == "NetworkPolicy" {
		_ = unstructured.SetNestedStringSlice(s.Object, []string{"Ingress"}, "spec", "policyTypes")
	}
	s.SetUID(types.UID(uid))
	var mf []metav1.ManagedFieldsEntry
	for _, m := range managers {
		mf = append(mf, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationApply, APIVersion: s.GetAPIVersion(), FieldsType: "FieldsV1"})
	}
	s.SetManagedFields(mf)
	return s
}

// createdEvent is the engine's event of a resource created in the run from
// inputs, its provider having drawn manager.
func createdEvent(inputs *unstructured.Unstructured, manager string) events.EngineEvent {
	b, _ := json.Marshal(inputs.Object)
	var in map[string]any
	_ = json.Unmarshal(b, &in)
	typ := TypeToken(inputs.GetAPIVersion(), inputs.GetKind())
	return events.EngineEvent{EngineEvent: apitype.EngineEvent{ResOutputsEvent: &apitype.ResOutputsEvent{Metadata: apitype.StepEventMetadata{
		Op: apitype.OpCreate, URN: "urn:pulumi:s::paddock::" + typ + "::" + ObjectKey(inputs), Type: typ,
		New: &apitype.StepEventStateMetadata{Inputs: in, Outputs: map[string]any{"__fieldManager": manager}},
	}}}}
}

// sendEvents passes evs through c's tee as the engine's run would, and
// waits until the display has read them.
func sendEvents(c *Creations, evs ...events.EngineEvent) {
	in := make(chan events.EngineEvent)
	out := c.Tee(in)
	done := make(chan struct{})
	go func() {
		for range out {
		}
		close(done)
	}()
	for _, ev := range evs {
		in <- ev
	}
	close(in)
	<-done
}

func netpol(name string, spec map[string]any) *unstructured.Unstructured {
	return obj("networking.k8s.io/v1", "NetworkPolicy", "agents-a", name, map[string]any{"spec": spec})
}

// After an up, the objects the run itself created are compared with their
// creations, with no dry-run; whatever is not provably the run's own
// creation of the desired object is asked as before, and every change made
// after a creation is still found.
func TestRepairTakesTheRunsOwnCreations(t *testing.T) {
	ctx := context.Background()
	ns := obj("v1", "Namespace", "", "agents-a", nil)
	deny := netpol("default-deny", map[string]any{"podSelector": map[string]any{}})
	dns := netpol("dns", map[string]any{"podSelector": map[string]any{"matchLabels": map[string]any{"app": "agent"}}})
	opened := netpol("opened", map[string]any{"podSelector": map[string]any{}})
	forged := netpol("forged", map[string]any{"podSelector": map[string]any{}})
	before := netpol("before", map[string]any{"podSelector": map[string]any{}})
	changed := obj("v1", "ConfigMap", "agents-a", "changed", map[string]any{"data": map[string]any{"k": "v"}})
	declared := []*unstructured.Unstructured{ns, deny, dns, opened, forged, before, changed}

	// Before the run: "before" exists already, opened by an ingress rule.
	liveBefore := stored(before, "u-before", "pulumi-kubernetes-old")
	_ = unstructured.SetNestedSlice(liveBefore.Object, []any{map[string]any{}}, "spec", "ingress")
	srv := newCreationServer(liveBefore)
	cr := StartCreations(ctx, srv, declared)
	defer cr.Close()

	// The run: the provider creates each object under the manager it drew.
	create := func(u *unstructured.Unstructured) {
		t.Helper()
		if _, err := srv.Resource(GVROf(u)).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []*unstructured.Unstructured{ns, deny, dns, opened, changed} {
		create(stored(u, "u-"+u.GetName(), "pulumi-kubernetes-"+u.GetName()))
	}
	// Someone else created "forged" first, opened, under a manager name of
	// their choosing; the provider's apply then merged into it.
	racer := stored(forged, "u-forged", "pulumi-kubernetes-guess")
	_ = unstructured.SetNestedSlice(racer.Object, []any{map[string]any{}}, "spec", "ingress")
	create(racer)
	// After the provider created "opened", it was opened, the writer
	// spelling its managedFields as the provider's alone.
	tampered := stored(opened, "u-opened", "pulumi-kubernetes-opened")
	_ = unstructured.SetNestedSlice(tampered.Object, []any{map[string]any{}}, "spec", "ingress")
	if _, err := srv.fake.Resource(npGVR).Namespace("agents-a").Update(ctx, tampered, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The engine's events: each created in this run; "changed" from other
	// inputs than the ones declared now.
	other := changed.DeepCopy()
	other.Object["data"] = map[string]any{"k": "other"}
	sendEvents(cr, createdEvent(ns, "pulumi-kubernetes-agents-a"), createdEvent(deny, "pulumi-kubernetes-default-deny"),
		createdEvent(dns, "pulumi-kubernetes-dns"), createdEvent(opened, "pulumi-kubernetes-opened"),
		createdEvent(forged, "pulumi-kubernetes-forged"), createdEvent(before, "pulumi-kubernetes-before"),
		createdEvent(other, "pulumi-kubernetes-changed"))

	cache := testCache(t)
	var objs []*Object
	for _, u := range declared {
		objs = append(objs, testObject(u))
	}
	forms := loadStoredForms(cache, "v1.35.4 mutating admission "+drift.NoAdmission, true, true)
	forms.created = cr
	res, err := compareLive(ctx, srv, "demo", objs, forms, nil)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(srv.dryRuns)
	// Asked: "opened" (its creation disagrees with it: confirmed by a
	// dry-run), "forged" (created by someone else), "before" (not created by
	// the run), "changed" (created from other inputs).
	if want := []string{"before", "changed", "forged", "opened"}; !equalStrings(srv.dryRuns, want) {
		t.Errorf("dry-runs of %v, want only %v", srv.dryRuns, want)
	}
	if n := cr.AnsweredCount(); n != 4 {
		t.Errorf("%d stored forms from creations, want 4 (the namespace, default-deny, dns and opened)", n)
	}
	got := map[string][]string{}
	for _, r := range res.Report.Resources {
		for _, f := range r.Fields {
			got[r.Name] = append(got[r.Name], f.Path)
		}
	}
	for _, name := range []string{"agents-a/opened", "agents-a/forged", "agents-a/before"} {
		if len(got[name]) != 1 || got[name][0] != "spec.ingress" {
			t.Errorf("%s: differences %v, want spec.ingress", name, got[name])
		}
	}
	if len(got) != 3 {
		t.Errorf("reported %v, want only the three opened policies", got)
	}
	if err := forms.save(); err != nil {
		t.Fatal(err)
	}
	// The creations are kept as stored forms: the next comparison (a no-op
	// up, drift) asks nothing about the objects that match.
	srv.dryRuns = nil
	forms = loadStoredForms(cache, "v1.35.4 mutating admission "+drift.NoAdmission, false, true)
	if _, err := compareLive(ctx, srv, "demo", objs, forms, nil); err != nil {
		t.Fatal(err)
	}
	sort.Strings(srv.dryRuns)
	if want := []string{"before", "forged", "opened"}; !equalStrings(srv.dryRuns, want) {
		t.Errorf("from the cache: dry-runs of %v, want only the drifted %v", srv.dryRuns, want)
	}
}

// A cluster where something may rewrite writes answers nothing from
// creations: one whose mutating admission changed while the run wrote, or
// whose fingerprint names any.
func TestCreationsNeedNoMutatingAdmission(t *testing.T) {
	ctx := context.Background()
	deny := netpol("default-deny", map[string]any{"podSelector": map[string]any{}})
	for _, tc := range []struct {
		name, fingerprint string
		webhook           bool
	}{
		{"a webhook came and went during the run", drift.NoAdmission, true},
		{"a webhook now", "0123456789abcdef", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCreationServer()
			cr := StartCreations(ctx, srv, []*unstructured.Unstructured{deny})
			defer cr.Close()
			hooks := srv.Resource(admissionKinds[0])
			if tc.webhook {
				wh := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration", "metadata": map[string]any{"name": "inject"}}}
				if _, err := hooks.Create(ctx, wh, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := srv.Resource(npGVR).Namespace("agents-a").Create(ctx, stored(deny, "u-1", "pulumi-kubernetes-x"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if tc.webhook {
				if err := hooks.Delete(ctx, "inject", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			sendEvents(cr, createdEvent(deny, "pulumi-kubernetes-x"))
			forms := loadStoredForms(testCache(t), "v1.35.4 mutating admission "+tc.fingerprint, true, true)
			forms.created = cr
			deadlineGuard := waitForQuietOrNoise(cr, tc.webhook)
			if _, err := compareLive(ctx, srv, "demo", []*Object{testObject(deny)}, forms, nil); err != nil {
				t.Fatal(err)
			}
			if len(srv.dryRuns) != 1 || cr.AnsweredCount() != 0 {
				t.Errorf("%d dry-runs, %d from creations: want the dry-run (%v)", len(srv.dryRuns), cr.AnsweredCount(), deadlineGuard)
			}
		})
	}
}

// waitForQuietOrNoise waits (a hang guard, not a timing) until the watch has
// seen the webhook's events when there are any.
func waitForQuietOrNoise(c *Creations, noise bool) bool {
	if !noise {
		return true
	}
	for i := 0; i < 1000; i++ {
		c.mu.Lock()
		n := c.noisy
		c.mu.Unlock()
		if n {
			return true
		}
		sleepCtx(context.Background(), 10*1e6)
	}
	return false
}

// The engine's events: a resource the state held before the run (a
// refresh, an update) makes its manager known, so a creation under that
// name proves nothing; an event that is not a creation taints the resource.
func TestCreationsFromEvents(t *testing.T) {
	deny := netpol("default-deny", map[string]any{"podSelector": map[string]any{}})
	dns := netpol("dns", map[string]any{"podSelector": map[string]any{}})
	c := &Creations{byType: map[string]*unstructured.Unstructured{}, applied: map[string]appliedCreate{}, tainted: map[string]bool{}, known: map[string]bool{}}
	for _, u := range []*unstructured.Unstructured{deny, dns} {
		c.byType[TypeToken(u.GetAPIVersion(), u.GetKind())+"::"+ObjectKey(u)] = u
	}
	refresh := createdEvent(dns, "pulumi-kubernetes-old")
	m := &refresh.ResOutputsEvent.Metadata
	m.Op, m.Old = apitype.OpRefresh, &apitype.StepEventStateMetadata{Outputs: map[string]any{"__fieldManager": "pulumi-kubernetes-old"}}
	sendEvents(c, createdEvent(deny, "pulumi-kubernetes-new"), refresh)
	if a := c.applied["kubernetes:networking.k8s.io/v1:NetworkPolicy::agents-a/default-deny"]; a.manager != "pulumi-kubernetes-new" || !a.inputs {
		t.Errorf("the creation: %+v", a)
	}
	if _, ok := c.applied["kubernetes:networking.k8s.io/v1:NetworkPolicy::agents-a/dns"]; ok || !c.known["pulumi-kubernetes-old"] {
		t.Errorf("a refreshed resource counts as created (%v) or its manager is not known (%v)", c.applied, c.known)
	}
	sendEvents(c, createdEvent(deny, "pulumi-kubernetes-new"))
	if _, ok := c.applied["kubernetes:networking.k8s.io/v1:NetworkPolicy::agents-a/default-deny"]; ok {
		t.Error("a second event for one resource still counts as its creation")
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
