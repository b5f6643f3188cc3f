package engine

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/paddock-platform/paddock/internal/converge"
	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
)

// crd is a CRD named name listing versions, the first the storage version, with
// status.storedVersions stored (nil: no status).
func crd(name string, versions []string, stored []string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apiextensions.k8s.io/v1")
	u.SetKind("CustomResourceDefinition")
	u.SetName(name)
	var vs []any
	for i, v := range versions {
		vs = append(vs, map[string]any{"name": v, "served": true, "storage": i == 0})
	}
	plural, _, _ := strings.Cut(name, ".")
	_ = unstructured.SetNestedField(u.Object, map[string]any{"plural": plural}, "spec", "names")
	_ = unstructured.SetNestedSlice(u.Object, vs, "spec", "versions")
	if stored != nil {
		_ = unstructured.SetNestedStringSlice(u.Object, stored, "status", "storedVersions")
	}
	return u
}

func crdClient(live ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{converge.CRDResource: "CustomResourceDefinitionList"}, live...)
}

// A release that drops a version the live CRD still stores objects in is refused
// before anything is applied, naming the CRD, the version and the migration.
func TestStoredVersionDroppedIsRefused(t *testing.T) {
	const name = "sandboxes.agents.x-k8s.io"
	dyn := crdClient(crd(name, []string{"v1beta1", "v1alpha1"}, []string{"v1alpha1", "v1beta1"}))
	err := checkStoredVersions(context.Background(), dyn, "up", "v1.0.0", []*unstructured.Unstructured{crd(name, []string{"v1beta1"}, nil)})
	if err == nil {
		t.Fatal("a release dropping stored version v1alpha1 was let through")
	}
	for _, want := range []string{
		"up refused before applying anything",
		"CRD sandboxes.agents.x-k8s.io: status.storedVersions is [v1alpha1 v1beta1]; v1.0.0 lists [v1beta1], not v1alpha1",
		"kubectl get sandboxes.agents.x-k8s.io -A -o json | kubectl replace -f -",
		`kubectl patch crd sandboxes.agents.x-k8s.io --subresource=status --type=merge -p '{"status":{"storedVersions":["v1beta1"]}}'`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q:\n%v", want, err)
		}
	}
}

// When the installed release stores a version the new one does not list, the
// rewrite cannot help: the refusal says to upgrade through a release listing both.
func TestStorageVersionDroppedNeedsAnIntermediateRelease(t *testing.T) {
	const name = "sandboxes.agents.x-k8s.io"
	dyn := crdClient(crd(name, []string{"v1alpha1", "v1beta1"}, []string{"v1alpha1"}))
	err := checkStoredVersions(context.Background(), dyn, "up", "v2.0.0", []*unstructured.Unstructured{crd(name, []string{"v1"}, nil)})
	if err == nil || !strings.Contains(err.Error(), "upgrade through a release that lists both v1alpha1 and v1") {
		t.Fatalf("want a refusal naming an intermediate release, got %v", err)
	}
	if strings.Contains(err.Error(), "kubectl replace") {
		t.Errorf("suggests a rewrite that cannot help:\n%v", err)
	}
}

// What is allowed: a CRD not yet installed, a stored version the release still
// lists although it no longer serves it, and the pinned release over itself.
func TestStoredVersionsStillListedPass(t *testing.T) {
	const name = "sandboxes.agents.x-k8s.io"
	notServed := crd(name, []string{"v1beta1", "v1alpha1"}, nil)
	vs, _, _ := unstructured.NestedSlice(notServed.Object, "spec", "versions")
	vs[1].(map[string]any)["served"] = false
	_ = unstructured.SetNestedSlice(notServed.Object, vs, "spec", "versions")
	for what, tc := range map[string]struct {
		live    []runtime.Object
		release []*unstructured.Unstructured
	}{
		"not installed": {nil, []*unstructured.Unstructured{crd(name, []string{"v1beta1"}, nil)}},
		"listed, not served": {[]runtime.Object{crd(name, []string{"v1beta1", "v1alpha1"}, []string{"v1alpha1", "v1beta1"})},
			[]*unstructured.Unstructured{notServed}},
	} {
		if err := checkStoredVersions(context.Background(), crdClient(tc.live...), "up", "vX", tc.release); err != nil {
			t.Errorf("%s: refused: %v", what, err)
		}
	}
	// The pinned release, installed with every version stored, upgrades to itself.
	release, err := agentsandbox.Objects(agentsandbox.Versions()[0], agentsandbox.Options{Image: "example.com/controller@sha256:0"})
	if err != nil {
		t.Fatal(err)
	}
	var live []runtime.Object
	for _, u := range release {
		if u.GetKind() == "CustomResourceDefinition" {
			l := u.DeepCopy()
			var names []string
			vs, _, _ := unstructured.NestedSlice(l.Object, "spec", "versions")
			for _, v := range vs {
				names = append(names, v.(map[string]any)["name"].(string))
			}
			_ = unstructured.SetNestedStringSlice(l.Object, names, "status", "storedVersions")
			live = append(live, l)
		}
	}
	if len(live) < 4 {
		t.Fatalf("the pinned release has %d CRDs, want the 4 Agent Sandbox kinds", len(live))
	}
	if err := checkStoredVersions(context.Background(), crdClient(live...), "up", "pinned", release); err != nil {
		t.Errorf("the pinned release over itself is refused: %v", err)
	}
}
