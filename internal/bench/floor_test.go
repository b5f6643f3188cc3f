package bench

import (
	"context"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"
)

func obj(apiVersion, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// floorObjects are a platform's objects in miniature: a tenant namespace
// with a role, the controller's namespace with its deployment, a CRD, a
// cluster role, and a config map in a namespace the platform does not own.
func floorObjects() []*unstructured.Unstructured {
	return []*unstructured.Unstructured{
		obj("v1", "Namespace", "", "tenant-a"),
		obj("rbac.authorization.k8s.io/v1", "Role", "tenant-a", "agent"),
		obj("v1", "Namespace", "", "agent-sandbox-system"),
		obj("apps/v1", "Deployment", "agent-sandbox-system", "controller"),
		obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "sandboxes.agents.x-k8s.io"),
		obj("rbac.authorization.k8s.io/v1", "ClusterRole", "", "agent-sandbox"),
		obj("v1", "ConfigMap", "kube-system", "paddock-dns"),
	}
}

func names(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	sort.Strings(out)
	return out
}

func TestDirectDeletesLeaveTheNamespacesContentsToThem(t *testing.T) {
	got := strings.Join(names(DirectDeletes(floorObjects())), ", ")
	want := "ClusterRole /agent-sandbox, ConfigMap kube-system/paddock-dns, CustomResourceDefinition /sandboxes.agents.x-k8s.io, Namespace /agent-sandbox-system, Namespace /tenant-a"
	if got != want {
		t.Errorf("direct deletes:\n got %s\nwant %s", got, want)
	}
}

func fakeCluster(objs []*unstructured.Unstructured) (*dynamicfake.FakeDynamicClient, meta.RESTMapper) {
	gvrs := map[schema.GroupVersionResource]string{}
	mapper := meta.NewDefaultRESTMapper(nil)
	var objects []runtime.Object
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		res := strings.ToLower(gvk.Kind) + "s"
		scope := meta.RESTScopeNamespace
		if o.GetNamespace() == "" {
			scope = meta.RESTScopeRoot
		}
		mapper.AddSpecific(gvk, gvk.GroupVersion().WithResource(res), gvk.GroupVersion().WithResource(strings.ToLower(gvk.Kind)), scope)
		gvrs[gvk.GroupVersion().WithResource(res)] = gvk.Kind + "List"
		objects = append(objects, o.DeepCopy())
	}
	gvrs[namespaceResource] = "NamespaceList"
	gvrs[crdResource] = "CustomResourceDefinitionList"
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), gvrs, objects...), mapper
}

func TestFloorDestroyDeletesAtOnceAndWaitsForNamespacesAndCRDs(t *testing.T) {
	objs := floorObjects()
	dyn, mapper := fakeCluster(objs)
	ctx := context.Background()
	if err := deleteAll(ctx, dyn, mapper, DirectDeletes(objs)); err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, a := range dyn.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok {
			deleted = append(deleted, d.GetResource().Resource+" "+d.GetNamespace()+"/"+d.GetName())
		}
	}
	sort.Strings(deleted)
	if got := strings.Join(deleted, ", "); got != "clusterroles /agent-sandbox, configmaps kube-system/paddock-dns, customresourcedefinitions /sandboxes.agents.x-k8s.io, namespaces /agent-sandbox-system, namespaces /tenant-a" {
		t.Errorf("deleted: %s", got)
	}
	// Deleting them again finds nothing, and that is no error.
	if err := deleteAll(ctx, dyn, mapper, DirectDeletes(objs)); err != nil {
		t.Errorf("a second delete: %v", err)
	}

	// A namespace that takes three lists to go is waited for.
	var lists atomic.Int32
	terminating := obj("v1", "Namespace", "", "tenant-a")
	dyn.PrependReactor("list", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
		if lists.Add(1) > 3 {
			return false, nil, nil
		}
		l := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "NamespaceList"}}
		l.Items = []unstructured.Unstructured{*terminating, *obj("v1", "Namespace", "", "default")}
		return true, l, nil
	})
	if err := waitGone(ctx, dyn, objs, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if n := lists.Load(); n != 4 {
		t.Errorf("namespaces listed %d times, want 4 (3 while tenant-a terminates, 1 gone)", n)
	}

	// One that never goes is named when the wait ends.
	lists.Store(-1 << 20)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err := waitGone(short, dyn, objs, time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "namespaces/tenant-a") || strings.Contains(err.Error(), "default") {
		t.Errorf("a namespace that never goes: %v", err)
	}
}
