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
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/pins"
)

// A rollback over a storage version change is refused only while the live CRD
// records objects stored in the newer storage version; the refusal gives the
// reason and the steps, and once they are done the rollback goes ahead.
func TestRollbackRefusedWhileObjectsStoredInNewerVersion(t *testing.T) {
	const name = "sandboxes.agents.x-k8s.io"
	change := agentsandbox.Change{From: "v0.6.0", To: "v0.5.6", Forward: []agentsandbox.Risk{{
		Kind: agentsandbox.RiskStorageChanged, CRD: name, Plural: "sandboxes", Group: "agents.x-k8s.io", Version: "v1", TargetStorage: "v1beta1",
	}}}
	dyn := crdClient(crd(name, []string{"v1", "v1beta1"}, []string{"v1beta1", "v1"}))
	err := checkRollback(context.Background(), dyn, "up", change)
	if err == nil {
		t.Fatal("a rollback stranding objects stored as v1 was let through")
	}
	for _, want := range []string{
		"up refused before applying anything: going back from Agent Sandbox v0.6.0 to v0.5.6 is not safe here",
		"CRD sandboxes.agents.x-k8s.io: v0.6.0 stores objects as v1, v0.5.6 as v1beta1",
		`Either keep v0.6.0 (set agent_sandbox.version back to "v0.6.0")`,
		"kubectl get sandboxes.agents.x-k8s.io -A -o yaml > sandboxes-backup.yaml",
		`kubectl patch crd sandboxes.agents.x-k8s.io --subresource=status --type=merge -p '{"status":{"storedVersions":["v1beta1"]}}'`,
		"then run up again.",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q:\n%v", want, err)
		}
	}
	// After the steps: nothing stored as v1 any more.
	dyn = crdClient(crd(name, []string{"v1", "v1beta1"}, []string{"v1beta1"}))
	if err := checkRollback(context.Background(), dyn, "up", change); err != nil {
		t.Errorf("with no object stored as v1, the rollback is refused: %v", err)
	}
	// No cluster to ask: the risk counts.
	if err := checkRollback(context.Background(), nil, "preview", change); err == nil || !strings.HasPrefix(err.Error(), "preview refused") {
		t.Errorf("without a cluster: %v", err)
	}
}

// A CRD the older release lacks blocks the rollback only while objects of it exist.
func TestRollbackOverRemovedCRDChecksForObjects(t *testing.T) {
	const name = "snapshots.agents.x-k8s.io"
	gvr := schema.GroupVersionResource{Group: "agents.x-k8s.io", Version: "v1", Resource: "snapshots"}
	change := agentsandbox.Change{From: "v0.6.0", To: "v0.5.6", Forward: []agentsandbox.Risk{{Kind: agentsandbox.RiskCRDRemoved, CRD: name, Plural: "snapshots", Group: "agents.x-k8s.io"}}}
	kinds := map[schema.GroupVersionResource]string{converge.CRDResource: "CustomResourceDefinitionList", gvr: "SnapshotList"}
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("agents.x-k8s.io/v1")
	obj.SetKind("Snapshot")
	obj.SetNamespace("agents-a")
	obj.SetName("s1")
	live := crd(name, []string{"v1"}, []string{"v1"})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds, live, obj)
	if err := checkRollback(context.Background(), dyn, "up", change); err == nil || !strings.Contains(err.Error(), "deletes it, and every object of it") {
		t.Errorf("objects of a CRD the target lacks: %v", err)
	}
	dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds, live)
	if err := checkRollback(context.Background(), dyn, "up", change); err != nil {
		t.Errorf("no objects of it: %v", err)
	}
}

// The installed release is the controller Deployment's version label; no
// Deployment means nothing installed.
func TestInstalledReleaseFromDeploymentLabel(t *testing.T) {
	kinds := map[schema.GroupVersionResource]string{deploymentGVR: "DeploymentList"}
	e := &Engine{}
	if v := e.installedRelease(context.Background(), dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds), nil); v != "" {
		t.Errorf("no Deployment: %q", v)
	}
	dep := &unstructured.Unstructured{}
	dep.SetAPIVersion("apps/v1")
	dep.SetKind("Deployment")
	dep.SetNamespace(agentsandbox.Namespace)
	dep.SetName(agentsandbox.ControllerDeployment)
	dep.SetLabels(map[string]string{agentsandbox.VersionLabel: "v0.5.5"})
	if v := e.installedRelease(context.Background(), dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds, dep), nil); v != "v0.5.5" {
		t.Errorf("labelled Deployment: %q", v)
	}
}

// The installed release is rendered as the spec would have rendered it: its
// own image when the spec's follows the release, the spec's refill flags.
func TestCompareReleasesFromSpec(t *testing.T) {
	p := &model.Platform{Name: "demo", Target: model.Target{Kind: model.TargetLocal},
		AgentSandbox: model.AgentSandboxRelease{Version: pins.AgentSandboxPrevious, Image: pins.AgentSandboxImageOf(pins.AgentSandboxPrevious)}}
	c, err := compareReleases(p, pins.AgentSandbox)
	if err != nil {
		t.Fatal(err)
	}
	want := "image " + pins.AgentSandboxImageOf(pins.AgentSandbox) + " -> " + pins.AgentSandboxImageOf(pins.AgentSandboxPrevious)
	if len(c.Controller) != 1 || c.Controller[0] != want || c.From != pins.AgentSandbox || c.To != pins.AgentSandboxPrevious {
		t.Errorf("change %s -> %s, controller %q; want %q", c.From, c.To, c.Controller, want)
	}
	p.AgentSandbox.Image = "mirror.example/agent-sandbox-controller:patched"
	if c, _ := compareReleases(p, pins.AgentSandbox); len(c.Controller) != 0 {
		t.Errorf("an image the spec names is the same on both sides, got %q", c.Controller)
	}
}
