package localcluster

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// `local up` waits on each embedded Cilium CRD by its group, plural and stored
// version: every one must name them, or the wait could never succeed.
func TestCiliumCRDsNameWhatTheServedWaitReads(t *testing.T) {
	crds, err := CiliumCRDs()
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) == 0 {
		t.Fatal("no Cilium CRDs embedded")
	}
	sawCNP := false
	for _, crd := range crds {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		if group == "" || plural == "" || servedStorageVersion(crd) == "" {
			t.Errorf("CRD %s: group %q, plural %q, stored version %q", crd.GetName(), group, plural, servedStorageVersion(crd))
		}
		if plural == "ciliumnetworkpolicies" && servedStorageVersion(crd) == "v2" {
			sawCNP = true
		}
	}
	if !sawCNP {
		t.Error("ciliumnetworkpolicies stored as v2 (what Paddock renders) is not among the embedded CRDs")
	}
}

func TestServedStorageVersion(t *testing.T) {
	crd := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"versions": []any{
		map[string]any{"name": "v2alpha1", "served": true, "storage": false},
		map[string]any{"name": "v2", "served": true, "storage": true},
	}}}}
	if got := servedStorageVersion(crd); got != "v2" {
		t.Fatalf("got %q, want v2", got)
	}
	if got := servedStorageVersion(&unstructured.Unstructured{Object: map[string]any{}}); got != "" {
		t.Fatalf("a CRD without versions: got %q, want empty", got)
	}
}
