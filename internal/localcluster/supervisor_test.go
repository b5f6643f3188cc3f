package localcluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/pins"
)

// The supervisor takes only the refill flags from the installed Deployment: a
// flag someone adds there out of band (say, turning on pprof) is not run.
func TestRefillArgsOfTakesOnlyRefillFlags(t *testing.T) {
	dep := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"args": []any{
			"--extensions", "--enable-pprof=true",
			"--sandbox-warm-pool-replenish-delay=2s", "--sandbox-warm-pool-max-refill-rate=0.5",
		}}},
	}}}}}
	got := refillArgsOf(dep)
	want := []string{"--sandbox-warm-pool-replenish-delay=2s", "--sandbox-warm-pool-max-refill-rate=0.5"}
	if !slices.Equal(got, want) {
		t.Errorf("refillArgsOf = %q, want %q", got, want)
	}
	if got := refillArgsOf(&unstructured.Unstructured{Object: map[string]any{}}); got != nil {
		t.Errorf("a Deployment without containers gives %q", got)
	}
}

// No Deployment means the pinned build and no shaping (the controller's
// defaults); a Deployment that cannot be read (the API server restarting) is
// "unknown", so the supervisor does not restart the controller over a
// transient error.
func TestInstalledController(t *testing.T) {
	kinds := map[schema.GroupVersionResource]string{deploymentGVR: "DeploymentList"}
	spec, ok := installedController(context.Background(), dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds))
	if !ok || spec.Refill != nil || spec.Version != "" {
		t.Errorf("no Deployment: %+v, %v; want nothing, known", spec, ok)
	}

	dep := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"args": []any{"--extensions", "--sandbox-warm-pool-replenish-delay=2s"}}},
	}}}}}
	dep.SetAPIVersion("apps/v1")
	dep.SetKind("Deployment")
	dep.SetNamespace(agentsandbox.Namespace)
	dep.SetName(agentsandbox.ControllerDeployment)
	dep.SetLabels(map[string]string{agentsandbox.VersionLabel: "v0.5.5"})
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds, dep)
	spec, ok = installedController(context.Background(), dc)
	if want := (installedSpec{Version: "v0.5.5", Refill: []string{"--sandbox-warm-pool-replenish-delay=2s"}}); !ok || !spec.equal(want) {
		t.Errorf("installed Deployment: %+v, %v; want %+v", spec, ok, want)
	}
	if spec.equal(installedSpec{Version: "v0.5.6", Refill: spec.Refill}) || spec.equal(installedSpec{Version: "v0.5.5"}) {
		t.Error("a different release or different refill flags compare equal: the supervisor would not restart the controller")
	}
	if !(installedSpec{}).equal(installedSpec{Version: pins.AgentSandbox}) {
		t.Error("no version label and the pinned release's compare different: the first up would restart the controller for nothing")
	}

	dc.PrependReactor("get", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	if _, ok := installedController(context.Background(), dc); ok {
		t.Error("an unreadable Deployment counts as known")
	}
}

// The supervisor runs the controller build of the installed release: the one
// `local up` recorded for the pinned release (also when the Deployment has no
// version label: installed before it), the versioned build in PADDOCK_HOME/bin
// for another, and none, saying what to build, when that build is missing.
func TestControllerBinaryFollowsInstalledRelease(t *testing.T) {
	home := t.TempDir()
	t.Setenv("PADDOCK_HOME", home)
	if err := os.MkdirAll(filepath.Join(home, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := &supervisor{c: &cluster{state: &clusterState{Binaries: map[string]string{"agent-sandbox-controller": "/recorded/agent-sandbox-controller"}}}}
	for _, v := range []string{"", pins.AgentSandbox} {
		if bin, err := s.controllerBinary(v); err != nil || bin != "/recorded/agent-sandbox-controller" {
			t.Errorf("release %q: %q, %v; want the recorded pinned build", v, bin, err)
		}
	}
	prev := pins.AgentSandboxPrevious
	_, err := s.controllerBinary(prev)
	if err == nil || !strings.Contains(err.Error(), "agent-sandbox-controller-"+prev) || !strings.Contains(err.Error(), "make tools-test") {
		t.Errorf("missing build of %s: %v; want an error naming it and how to build it", prev, err)
	}
	want := filepath.Join(home, "bin", "agent-sandbox-controller-"+prev)
	if err := os.WriteFile(want, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if bin, err := s.controllerBinary(prev); err != nil || bin != want {
		t.Errorf("release %s: %q, %v; want %s", prev, bin, err, want)
	}
}
