package converge

import (
	"bytes"
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-platform/paddock/internal/model"
)

// The repair writes each drifted object whole over the live one: the rule
// nobody declared is gone, the removed label is back, and a second
// comparison is clean.
func TestRepairLive(t *testing.T) {
	ns := obj("v1", "Namespace", "", "agents-a", nil)
	ns.SetLabels(map[string]string{model.PlatformLabel: "demo", "pod-security.kubernetes.io/enforce": "restricted"})
	open := obj("networking.k8s.io/v1", "NetworkPolicy", "agents-a", "dns", map[string]any{"spec": map[string]any{"podSelector": map[string]any{}}})
	liveNS := ns.DeepCopy()
	liveNS.SetLabels(map[string]string{model.PlatformLabel: "demo", "pod-security.kubernetes.io/enforce": "privileged"})
	liveOpen := open.DeepCopy()
	_ = unstructured.SetNestedStringSlice(liveOpen.Object, []string{"Ingress"}, "spec", "policyTypes")
	_ = unstructured.SetNestedSlice(liveOpen.Object, []any{map[string]any{}}, "spec", "ingress")
	srv := newFakeServer(liveNS, liveOpen)

	cache := testCache(t)
	var out bytes.Buffer
	objs := []*Object{testObject(ns), testObject(open)}
	res, err := compareLive(context.Background(), srv.dyn, "demo", objs, loadStoredForms(cache, "v", false, true), nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Objects, res.Clients = objs, &Clients{Dyn: srv.dyn}
	n, err := RepairLive(context.Background(), &out, "up", res)
	if err != nil || n != 2 {
		t.Fatalf("repaired %d (%v), want 2", n, err)
	}
	for _, want := range []string{"repaired NetworkPolicy agents-a/dns", "removed spec.ingress", "repaired Namespace agents-a", `set metadata.labels["pod-security.kubernetes.io/enforce"] back: "privileged" → "restricted"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the repair does not say %q:\n%s", want, out.String())
		}
	}
	after, err := compareLive(context.Background(), srv.dyn, "demo", []*Object{testObject(ns), testObject(open)}, loadStoredForms(cache, "v", false, true), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Report.Resources) != 0 {
		t.Fatalf("still drifted after the repair: %+v", after.Report.Resources)
	}
}

func TestProviderManager(t *testing.T) {
	o := testObject(obj("v1", "ConfigMap", "a", "b", nil))
	if m := providerManager(o); m != "pulumi-kubernetes-abc" {
		t.Fatalf("from the state: %q", m)
	}
	o.State.Outputs = nil
	o.Live = obj("v1", "ConfigMap", "a", "b", nil)
	o.Live.SetManagedFields([]metav1.ManagedFieldsEntry{
		{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate},
		{Manager: "pulumi-kubernetes-xyz", Operation: metav1.ManagedFieldsOperationApply},
	})
	if m := providerManager(o); m != "pulumi-kubernetes-xyz" {
		t.Fatalf("from the live object: %q", m)
	}
}
