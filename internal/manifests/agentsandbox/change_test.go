package agentsandbox

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-platform/paddock/internal/pins"
)

func render(t *testing.T, version string, args ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := Objects(version, Options{Image: pins.AgentSandboxImage + ":" + version, ControllerArgs: args})
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// The two vendored releases, compared as Paddock renders them: v0.5.6 adds one
// status field to the warm pool CRD and moves the controller image; nothing
// else. Both directions are safe.
func TestCompareVendoredReleases(t *testing.T) {
	prev, cur := pins.AgentSandboxPrevious, pins.AgentSandbox
	up := Compare(prev, render(t, prev), cur, render(t, cur))
	wantCRDs := []CRDChange{{Name: "sandboxwarmpools.extensions.agents.x-k8s.io", StorageFrom: "v1beta1", StorageTo: "v1beta1",
		Schema: []string{"v1beta1: +status.observedGeneration"}}}
	if !reflect.DeepEqual(up.CRDs, wantCRDs) {
		t.Errorf("CRDs = %+v\nwant %+v", up.CRDs, wantCRDs)
	}
	wantCtl := []string{"image " + pins.AgentSandboxImage + ":" + prev + " -> " + pins.AgentSandboxImage + ":" + cur}
	if !reflect.DeepEqual(up.Controller, wantCtl) {
		t.Errorf("controller = %q, want %q", up.Controller, wantCtl)
	}
	if len(up.Webhooks)+len(up.Other)+len(up.Forward)+len(up.Back) != 0 {
		t.Errorf("webhooks %q, other %q, forward %+v, back %+v: want none (the version label alone is no change)", up.Webhooks, up.Other, up.Forward, up.Back)
	}
	s := up.Summary()
	for _, want := range []string{
		"Agent Sandbox release " + prev + " -> " + cur + " (upgrade):",
		"sandboxwarmpools.extensions.agents.x-k8s.io: schema v1beta1: +status.observedGeneration",
		"controller: image ",
		"webhooks: unchanged",
		"the controller restarts: claims made meanwhile are admitted and wait",
		"running sandboxes keep running",
		"warm pools are topped up again",
		"going back to " + prev + ": safe",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}

	down := Compare(cur, render(t, cur), prev, render(t, prev))
	if !IsRollback(cur, prev) || IsRollback(prev, cur) {
		t.Error("IsRollback has the direction wrong")
	}
	if len(down.CRDs) != 1 || !reflect.DeepEqual(down.CRDs[0].Schema, []string{"v1beta1: -status.observedGeneration"}) {
		t.Errorf("rollback CRDs = %+v", down.CRDs)
	}
	if len(down.Forward) != 0 || !strings.Contains(down.Summary(), "(rollback)") {
		t.Errorf("rollback: forward %+v\n%s", down.Forward, down.Summary())
	}
}

// Refill flags and an unchanged release: only the args show, and a release
// compared with itself changes nothing and restarts nothing.
func TestCompareControllerArgs(t *testing.T) {
	v := pins.AgentSandbox
	c := Compare(v, render(t, v), v, render(t, v, "--sandbox-warm-pool-replenish-delay=2s"))
	if !reflect.DeepEqual(c.Controller, []string{"args added --sandbox-warm-pool-replenish-delay=2s"}) || len(c.CRDs) != 0 {
		t.Errorf("controller %q, CRDs %+v", c.Controller, c.CRDs)
	}
	same := Compare(v, render(t, v), v, render(t, v))
	if len(same.Controller)+len(same.CRDs) != 0 || !strings.Contains(same.Summary(), "the controller does not restart") {
		t.Errorf("same release: %+v\n%s", same, same.Summary())
	}
}

func crd(name string, storage string, versions ...string) *unstructured.Unstructured {
	var vs []any
	for _, v := range versions {
		vs = append(vs, map[string]any{"name": v, "served": true, "storage": v == storage,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "description": "a " + v}}})
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"group": "agents.x-k8s.io", "names": map[string]any{"plural": strings.SplitN(name, ".", 2)[0]}, "versions": vs},
	}}
	return u
}

// A release that drops a version, moves the storage version or drops a CRD is
// not safe to move to; going back over a storage version change is not either.
func TestRisks(t *testing.T) {
	older := []*unstructured.Unstructured{crd("sandboxes.agents.x-k8s.io", "v1alpha1", "v1alpha1", "v1beta1"), crd("olds.agents.x-k8s.io", "v1", "v1")}
	newer := []*unstructured.Unstructured{crd("sandboxes.agents.x-k8s.io", "v1beta1", "v1beta1")}
	got := Risks(older, newer)
	want := []Risk{
		{Kind: RiskCRDRemoved, CRD: "olds.agents.x-k8s.io", Plural: "olds", Group: "agents.x-k8s.io"},
		{Kind: RiskVersionRemoved, CRD: "sandboxes.agents.x-k8s.io", Plural: "sandboxes", Group: "agents.x-k8s.io", Version: "v1alpha1"},
		{Kind: RiskStorageChanged, CRD: "sandboxes.agents.x-k8s.io", Plural: "sandboxes", Group: "agents.x-k8s.io", Version: "v1alpha1", TargetStorage: "v1beta1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Risks =\n%+v\nwant\n%+v", got, want)
	}
	back := Risks(newer, older)
	if len(back) != 1 || back[0].Kind != RiskStorageChanged || back[0].Version != "v1beta1" || back[0].TargetStorage != "v1alpha1" {
		t.Errorf("going back: %+v; want only the storage version change v1beta1 -> v1alpha1", back)
	}
	r := back[0]
	if reason := r.Reason("v2", "v1"); !strings.Contains(reason, "v2 stores objects as v1beta1, v1 as v1alpha1") {
		t.Errorf("reason: %s", reason)
	}
	steps := strings.Join(r.Steps("v2", "v1"), "\n")
	for _, want := range []string{"kubectl get sandboxes.agents.x-k8s.io -A -o yaml > sandboxes-backup.yaml", "kubectl delete sandboxes.agents.x-k8s.io -A --all", `"storedVersions":["v1alpha1"]`} {
		if !strings.Contains(steps, want) {
			t.Errorf("steps lack %q:\n%s", want, steps)
		}
	}
	c := Compare("v2", newer, "v1", older)
	if !strings.Contains(c.Summary(), "going back to v2: not safe") {
		t.Errorf("summary:\n%s", c.Summary())
	}
	if len(c.CRDs) != 2 || !c.CRDs[0].Added || c.CRDs[1].describe() != "versions added v1alpha1; storage version v1beta1 -> v1alpha1" {
		t.Errorf("CRDs: %+v / %q", c.CRDs, c.CRDs[1].describe())
	}
}

// A schema whose fields are the same but whose descriptions differ is told
// apart from one whose validation changed; an added subtree is named once.
func TestSchemaDiff(t *testing.T) {
	obj := func(desc string, props map[string]any) map[string]any {
		return map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "description": desc, "properties": props}}
	}
	spec := map[string]any{"spec": map[string]any{"type": "object", "properties": map[string]any{"replicas": map[string]any{"type": "integer", "minimum": int64(0)}}}}
	if d := schemaDiff(obj("a", spec), obj("b", spec)); d != "descriptions changed" {
		t.Errorf("descriptions: %q", d)
	}
	stricter := map[string]any{"spec": map[string]any{"type": "object", "properties": map[string]any{"replicas": map[string]any{"type": "integer", "minimum": int64(1)}}}}
	if d := schemaDiff(obj("a", spec), obj("a", stricter)); d != "validation changed" {
		t.Errorf("validation: %q", d)
	}
	withStatus := map[string]any{"spec": spec["spec"], "status": map[string]any{"type": "object", "properties": map[string]any{"ready": map[string]any{"type": "integer"}}}}
	if d := schemaDiff(obj("a", spec), obj("a", withStatus)); d != "+status" {
		t.Errorf("added subtree: %q, want it named once", d)
	}
}

// Every object of the release carries its version, and the controller build
// of a release is named after it unless it is the pinned one.
func TestVersionLabelAndControllerBinary(t *testing.T) {
	for _, v := range pins.AgentSandboxReleases() {
		for _, u := range render(t, v) {
			if got := u.GetLabels()[VersionLabel]; got != v {
				t.Errorf("%s %s %s: %s = %q, want %q", v, u.GetKind(), u.GetName(), VersionLabel, got, v)
			}
		}
	}
	if ControllerBinary(pins.AgentSandbox) != "agent-sandbox-controller" || ControllerBinary("") != "agent-sandbox-controller" {
		t.Error("the pinned release's controller is not agent-sandbox-controller")
	}
	if got := ControllerBinary(pins.AgentSandboxPrevious); got != "agent-sandbox-controller-"+pins.AgentSandboxPrevious {
		t.Errorf("previous release's controller = %q", got)
	}
}

// This binary embeds exactly the vendored releases.
func TestEmbeddedReleasesAreTheVendoredOnes(t *testing.T) {
	want := pins.AgentSandboxReleases()
	got := Versions()
	if len(got) != len(want) {
		t.Fatalf("embedded %v, vendored %v", got, want)
	}
	for _, v := range want {
		if _, err := Objects(v, Options{Image: "x"}); err != nil {
			t.Error(err)
		}
	}
}

// v0.5.6's warm pools report the generation their status describes; v0.5.5's do not.
func TestReportsPoolGeneration(t *testing.T) {
	if !ReportsPoolGeneration(pins.AgentSandbox) || ReportsPoolGeneration(pins.AgentSandboxPrevious) || ReportsPoolGeneration("v0.0.1") {
		t.Errorf("ReportsPoolGeneration: %s %v, %s %v, v0.0.1 %v", pins.AgentSandbox, ReportsPoolGeneration(pins.AgentSandbox),
			pins.AgentSandboxPrevious, ReportsPoolGeneration(pins.AgentSandboxPrevious), ReportsPoolGeneration("v0.0.1"))
	}
}
