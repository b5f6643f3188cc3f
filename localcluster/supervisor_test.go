package localcluster

import (
	"context"
	"errors"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/paddock-platform/paddock/manifests/agentsandbox"
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

// No Deployment means no shaping (the controller's defaults); a Deployment that
// cannot be read (the API server restarting) is "unknown", so the supervisor
// does not restart the controller over a transient error.
func TestInstalledRefillArgs(t *testing.T) {
	kinds := map[schema.GroupVersionResource]string{deploymentGVR: "DeploymentList"}
	args, ok := installedRefillArgs(context.Background(), dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds))
	if !ok || args != nil {
		t.Errorf("no Deployment: %q, %v; want none, known", args, ok)
	}

	dep := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
		"containers": []any{map[string]any{"args": []any{"--extensions", "--sandbox-warm-pool-replenish-delay=2s"}}},
	}}}}}
	dep.SetAPIVersion("apps/v1")
	dep.SetKind("Deployment")
	dep.SetNamespace(agentsandbox.Namespace)
	dep.SetName(agentsandbox.ControllerDeployment)
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds, dep)
	if args, ok := installedRefillArgs(context.Background(), dc); !ok || !slices.Equal(args, []string{"--sandbox-warm-pool-replenish-delay=2s"}) {
		t.Errorf("installed Deployment: %q, %v", args, ok)
	}

	dc.PrependReactor("get", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	if _, ok := installedRefillArgs(context.Background(), dc); ok {
		t.Error("an unreadable Deployment counts as known")
	}
}
