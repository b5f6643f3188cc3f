package converge

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/paddock-platform/paddock/internal/model"

	"github.com/paddock-platform/paddock/internal/drift"
)

func ref(apiVersion, kind, ns, name string) drift.ObjectRef {
	return drift.ObjectRef{APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: name}
}

func TestPruneSelection(t *testing.T) {
	nsKept := ref("v1", "Namespace", "", "agents-t0")
	nsGone := ref("v1", "Namespace", "", "agents-t1")
	quotaGone := ref("v1", "ResourceQuota", "agents-t1", "tenant-quota")
	vapGone := ref("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "", "paddock-t1")
	byHand := ref("v1", "ConfigMap", "agents-t0", "made-by-hand")
	heldByState := ref("v1", "ServiceAccount", "agents-t1", "agent-runtime")

	labelled := []drift.ObjectRef{nsKept, nsGone, quotaGone, vapGone, byHand, heldByState}
	// The dead run declared the large spec; the same VAP read back under
	// another version of its group is the same object.
	deadDeclared := []drift.ObjectRef{nsKept, nsGone, quotaGone, ref("admissionregistration.k8s.io/v1beta1", "ValidatingAdmissionPolicy", "", "paddock-t1"), heldByState}
	inState := []drift.ObjectRef{nsKept, heldByState}
	declared := []drift.ObjectRef{nsKept}

	got := PruneSelection(labelled, deadDeclared, inState, declared)
	want := []drift.ObjectRef{nsGone, quotaGone, vapGone} // core group first
	if len(got) != len(want) {
		t.Fatalf("prune = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("prune[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	// Nothing dead declared: nothing is pruned, whatever is labelled.
	if got := PruneSelection(labelled, nil, nil, nil); len(got) != 0 {
		t.Errorf("pruned without a dead run declaring it: %v", got)
	}
	// After a destroy nothing is declared: all a dead run left goes.
	if got := PruneSelection(labelled, deadDeclared, nil, nil); len(got) != 5 {
		t.Errorf("after destroy: %v, want the 5 the dead run declared", got)
	}
}

var (
	quotaGVR = schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}
	vapGVR   = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}
)

// fakeClusterClients is a cluster of fakes whose discovery knows namespaces,
// quotas, admission policies and CRDs.
func fakeClusterClients(t *testing.T, kubeObjs []runtime.Object, objs ...runtime.Object) (*Clients, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	kube := fake.NewSimpleClientset(kubeObjs...)
	kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "namespaces", Kind: "Namespace", Verbs: []string{"list", "get", "delete"}},
			{Name: "resourcequotas", Kind: "ResourceQuota", Namespaced: true, Verbs: []string{"list", "get", "delete"}},
		}},
		{GroupVersion: "admissionregistration.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "validatingadmissionpolicies", Kind: "ValidatingAdmissionPolicy", Verbs: []string{"list", "get", "delete"}},
		}},
		{GroupVersion: "apiextensions.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "customresourcedefinitions", Kind: "CustomResourceDefinition", Verbs: []string{"list", "get", "delete"}},
		}},
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		nsGVR: "NamespaceList", quotaGVR: "ResourceQuotaList", vapGVR: "ValidatingAdmissionPolicyList", CRDResource: "CustomResourceDefinitionList",
	}, objs...)
	return newClients(kube, dyn), dyn
}

func object(apiVersion, kind, ns, name string, finalizers ...string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(map[string]string{model.PlatformLabel: "fault"})
	u.SetFinalizers(finalizers)
	return u
}

func TestDeleteLeftovers(t *testing.T) {
	c, dyn := fakeClusterClients(t, nil,
		object("v1", "Namespace", "", "agents-t1"),
		object("v1", "ResourceQuota", "agents-t1", "tenant-quota"),
		object("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "", "paddock-t1"),
		object("v1", "Namespace", "", "agents-t0"))
	prune := []drift.ObjectRef{
		ref("v1", "Namespace", "", "agents-t1"),
		ref("v1", "ResourceQuota", "agents-t1", "tenant-quota"),
		ref("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "", "paddock-t1"),
		ref("v1", "Namespace", "", "already-gone"),
	}
	if err := DeleteLeftovers(context.Background(), c, prune, time.Second); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if l, _ := dyn.Resource(nsGVR).List(ctx, metav1.ListOptions{}); len(l.Items) != 1 || l.Items[0].GetName() != "agents-t0" {
		t.Errorf("namespaces left: %v, want only agents-t0", l.Items)
	}
	if l, _ := dyn.Resource(quotaGVR).Namespace("agents-t1").List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("quota not deleted: %v", l.Items)
	}
	if l, _ := dyn.Resource(vapGVR).List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Errorf("cluster-scoped policy not deleted: %v", l.Items)
	}
}

func TestDeleteLeftoversNamesWhatStays(t *testing.T) {
	c, dyn := fakeClusterClients(t, nil, object("v1", "Namespace", "", "agents-t1", "kubernetes"))
	// A finalizer nobody removes: the delete is accepted, the object stays.
	dyn.PrependReactor("delete", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil
	})
	defer func(d time.Duration) { pollEvery = d }(pollEvery)
	pollEvery = 10 * time.Millisecond
	err := DeleteLeftovers(context.Background(), c, []drift.ObjectRef{ref("v1", "Namespace", "", "agents-t1")}, 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "Namespace agents-t1 (finalizers kubernetes)") || !strings.Contains(err.Error(), "still being deleted") {
		t.Fatalf("error = %v, want it to name the namespace and its finalizer", err)
	}
}

func TestWaitTerminating(t *testing.T) {
	defer func(d time.Duration) { pollEvery = d }(pollEvery)
	pollEvery = 10 * time.Millisecond
	now := metav1.Now()
	labels := map[string]string{model.PlatformLabel: "fault"}
	terminating := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "agents-t1", Labels: labels, DeletionTimestamp: &now, Finalizers: []string{"kubernetes"}}}
	live := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "agents-t0", Labels: labels}}
	otherPlatform := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other", Labels: map[string]string{model.PlatformLabel: "other"}, DeletionTimestamp: &now, Finalizers: []string{"kubernetes"}}}
	crd := object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "sandboxes.agents.x-k8s.io")
	crd.SetDeletionTimestamp(&now)

	// Nothing of the platform being deleted: no wait, no output.
	c, _ := fakeClusterClients(t, []runtime.Object{live, otherPlatform})
	var out bytes.Buffer
	if err := WaitTerminating(context.Background(), c, &out, "up", "fault", time.Second); err != nil || out.Len() != 0 {
		t.Fatalf("waited for nothing: %v %q", err, out.String())
	}

	// Still there after the bound: a clear error, nothing applied.
	c, _ = fakeClusterClients(t, []runtime.Object{terminating, live}, crd)
	out.Reset()
	err := WaitTerminating(context.Background(), c, &out, "up", "fault", 50*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "CRD sandboxes.agents.x-k8s.io, namespace agents-t1 still being deleted") || !strings.Contains(err.Error(), "nothing was applied") {
		t.Fatalf("error = %v", err)
	}
	if !strings.Contains(out.String(), "waiting (up to") {
		t.Errorf("the wait was not announced: %q", out.String())
	}

	// Gone meanwhile: the wait ends.
	c, dyn := fakeClusterClients(t, []runtime.Object{terminating}, crd)
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = c.Kube.CoreV1().Namespaces().Delete(context.Background(), "agents-t1", metav1.DeleteOptions{})
		_ = dyn.Resource(CRDResource).Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{})
	}()
	out.Reset()
	if err := WaitTerminating(context.Background(), c, &out, "up", "fault", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "they are gone") {
		t.Errorf("output: %q", out.String())
	}
}
