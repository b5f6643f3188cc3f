package converge

import (
	"bytes"
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/model"
)

// A RuntimeClass recreated with handler runc cannot take the declared one in
// place (handler is immutable): the comparison reports it as to be replaced
// with the field, from a cached form as from a fresh one, never as an
// error; the repair replaces it (deleting a RuntimeClass fails closed) and
// the next comparison is clean.
func TestRuntimeClassSwapIsReportedAndReplaced(t *testing.T) {
	rcGVR := schema.GroupVersionResource{Group: "node.k8s.io", Version: "v1", Resource: "runtimeclasses"}
	declared := obj("node.k8s.io/v1", "RuntimeClass", "", "gvisor", map[string]any{"handler": "runsc"})
	declared.SetLabels(map[string]string{model.PlatformLabel: "demo"})
	swapped := declared.DeepCopy()
	swapped.Object["handler"] = "runc"

	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{rcGVR: "RuntimeClassList"})
	if err := dyn.Tracker().Create(rcGVR, declared.DeepCopy(), ""); err != nil {
		t.Fatal(err)
	}
	// The API server: an update that changes handler is refused as Invalid.
	dyn.PrependReactor("update", "runtimeclasses", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ua := a.(k8stesting.UpdateActionImpl)
		body := ua.GetObject().(*unstructured.Unstructured)
		live, err := dyn.Tracker().Get(rcGVR, "", body.GetName())
		if err != nil {
			return true, nil, err
		}
		if live.(*unstructured.Unstructured).Object["handler"] != body.Object["handler"] {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: "node.k8s.io", Kind: "RuntimeClass"}, body.GetName(),
				field.ErrorList{field.Invalid(field.NewPath("handler"), body.Object["handler"], "field is immutable")})
		}
		if len(ua.GetUpdateOptions().DryRun) > 0 {
			return true, body, nil
		}
		return true, body, dyn.Tracker().Update(rcGVR, body, "")
	})

	// Server-side apply creates what does not exist (the fake's tracker
	// answers not found).
	dyn.PrependReactor("patch", "runtimeclasses", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa := a.(k8stesting.PatchActionImpl)
		if pa.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(pa.GetPatch()); err != nil {
			return true, nil, err
		}
		if _, err := dyn.Tracker().Get(rcGVR, "", u.GetName()); err == nil {
			return true, u, dyn.Tracker().Update(rcGVR, u, "")
		}
		return true, u, dyn.Tracker().Create(rcGVR, u, "")
	})

	cache := testCache(t)
	objs := []*Object{testObject(declared)}
	// A clean comparison fills the cache.
	forms := loadStoredForms(cache, "v", false, true)
	if res, err := compareLive(context.Background(), dyn, "demo", objs, forms, nil); err != nil || len(res.Report.Resources) != 0 {
		t.Fatalf("as declared: %+v, %v", res, err)
	}
	if err := forms.save(); err != nil {
		t.Fatal(err)
	}

	// Swapped behind Paddock's back (deleted, recreated with runc).
	if err := dyn.Tracker().Delete(rcGVR, "", "gvisor"); err != nil {
		t.Fatal(err)
	}
	if err := dyn.Tracker().Create(rcGVR, swapped.DeepCopy(), ""); err != nil {
		t.Fatal(err)
	}
	res, err := compareLive(context.Background(), dyn, "demo", objs, loadStoredForms(cache, "v", false, true), nil)
	if err != nil {
		t.Fatalf("the swap from a cached form is an error, want it reported: %v", err)
	}
	if len(res.Report.Resources) != 1 {
		t.Fatalf("reported %+v, want the runtime class", res.Report.Resources)
	}
	r := res.Report.Resources[0]
	if r.Change != drift.Replaced || len(r.Fields) != 1 || r.Fields[0].Path != "handler" || r.Fields[0].Declared != "runsc" || r.Fields[0].Live != "runc" ||
		!strings.Contains(r.Repair, "replaces it") {
		t.Errorf("swap reported as %+v", r)
	}

	var out bytes.Buffer
	res.Objects, res.Clients = objs, &Clients{Dyn: dyn}
	if n, err := RepairLive(context.Background(), &out, "up", res); err != nil || n != 1 {
		t.Fatalf("repair: %d, %v", n, err)
	}
	if !strings.Contains(out.String(), "replaced RuntimeClass gvisor") || !strings.Contains(out.String(), `set handler back: "runc" → "runsc"`) {
		t.Errorf("the repair says:\n%s", out.String())
	}
	live, err := dyn.Resource(rcGVR).Get(context.Background(), "gvisor", metav1.GetOptions{})
	if err != nil || live.Object["handler"] != "runsc" {
		t.Fatalf("after the repair: %v, %v", live, err)
	}
	after, err := compareLive(context.Background(), dyn, "demo", []*Object{testObject(declared)}, loadStoredForms(cache, "v", false, true), nil)
	if err != nil || len(after.Report.Resources) != 0 {
		t.Fatalf("after the repair: %+v, %v", after, err)
	}
}

// An immutable difference on a kind whose deletion would open the platform
// (a NetworkPolicy's, say) stops up with the exact command that fixes it.
func TestReplaceRefusedNamesTheCommand(t *testing.T) {
	o := &Object{
		Desired:   obj("networking.k8s.io/v1", "NetworkPolicy", "agents-a", "default-deny", map[string]any{}),
		GVR:       schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"},
		Immutable: "spec.podSelector is immutable",
	}
	err := replaceObject(context.Background(), nil, o)
	if err == nil || !strings.Contains(err.Error(), "`kubectl delete networkpolicies.networking.k8s.io default-deny -n agents-a`, then `paddock up`") {
		t.Fatalf("err = %v, want the kubectl command that deletes it", err)
	}
}
