package manifests

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
)

// The pool's update strategy is always written out: left out, the pinned
// CRD defaults it to OnReplenish, which keeps stale sandboxes in the pool.
func TestWarmPoolSetsUpdateStrategy(t *testing.T) {
	p := &model.Platform{Name: "p"}
	tn := model.DefaultTenant("a")
	for _, c := range []struct{ spec, want string }{
		{"", "Recreate"}, // a model built without the decoder
		{model.UpdateRecreate, "Recreate"},
		{model.UpdateOnReplenish, "OnReplenish"},
	} {
		u, err := ToUnstructured(WarmPool(p, tn, model.WarmPool{Name: "agent", Template: "agent", Replicas: 2, UpdateStrategy: c.spec}))
		if err != nil {
			t.Fatal(err)
		}
		got, found, err := unstructured.NestedString(u.Object, "spec", "updateStrategy", "type")
		if err != nil || !found || got != c.want {
			t.Errorf("update_strategy %q: spec.updateStrategy.type = %q (found %v, %v), want %q", c.spec, got, found, err, c.want)
		}
		if ref, _, _ := unstructured.NestedString(u.Object, "spec", "sandboxTemplateRef", "name"); ref != "agent" {
			t.Errorf("update_strategy %q: sandboxTemplateRef.name = %q", c.spec, ref)
		}
	}
}

// Every strategy the spec language accepts is one the pinned release's
// SandboxWarmPool CRD accepts (its enum, in every served version), and the
// CRD's own default is the one Paddock overrides.
func TestUpdateStrategiesMatchThePinnedCRD(t *testing.T) {
	for _, version := range agentsandbox.Versions() {
		objs, err := agentsandbox.Objects(version, agentsandbox.Options{Image: "registry.example/controller:" + version})
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		for _, u := range objs {
			if u.GetKind() != "CustomResourceDefinition" || u.GetName() != agentsandbox.SandboxWarmPools.GroupResource().String() {
				continue
			}
			versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
			for _, v := range versions {
				vm, _ := v.(map[string]any)
				prop, found, _ := unstructured.NestedMap(vm, "schema", "openAPIV3Schema", "properties", "spec", "properties", "updateStrategy", "properties", "type")
				if !found {
					t.Errorf("%s: CRD version %v has no spec.updateStrategy.type", version, vm["name"])
					continue
				}
				checked++
				var enum []string
				for _, e := range prop["enum"].([]any) {
					enum = append(enum, e.(string))
				}
				for _, s := range model.UpdateStrategies {
					if !slices.Contains(enum, s) {
						t.Errorf("%s: CRD version %v does not accept %q (enum %v)", version, vm["name"], s, enum)
					}
				}
				if prop["default"] != model.UpdateOnReplenish {
					t.Errorf("%s: CRD version %v defaults to %v; the comment in WarmPool says OnReplenish", version, vm["name"], prop["default"])
				}
			}
		}
		if checked == 0 {
			t.Errorf("%s: no SandboxWarmPool CRD version checked", version)
		}
	}
}
