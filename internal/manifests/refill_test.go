package manifests

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/model"
)

// The spec's refill shaping becomes the controller's flags, in the release's
// Deployment; without it the Deployment carries no refill flag at all.
func TestRefillShapingReachesTheController(t *testing.T) {
	for _, tc := range []struct {
		delay  time.Duration
		perMin int64
		want   []string
	}{
		{0, 0, nil},
		{90 * time.Second, 0, []string{"--sandbox-warm-pool-replenish-delay=1m30s"}},
		{0, 30, []string{"--sandbox-warm-pool-max-refill-rate=0.5"}},
		{2 * time.Second, 600, []string{"--sandbox-warm-pool-replenish-delay=2s", "--sandbox-warm-pool-max-refill-rate=10"}},
	} {
		p := &model.Platform{Name: "p", AgentSandbox: model.AgentSandboxRelease{
			Version: agentsandbox.Versions()[0], Image: "example.com/controller:v1", RefillDelay: tc.delay, RefillPerMinute: tc.perMin,
		}}
		objs, err := agentsandbox.Objects(p.AgentSandbox.Version, ReleaseOptions(p))
		if err != nil {
			t.Fatal(err)
		}
		var args []string
		for _, u := range objs {
			if u.GetKind() != "Deployment" || u.GetName() != agentsandbox.ControllerDeployment {
				continue
			}
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			for _, c := range containers {
				for _, a := range c.(map[string]any)["args"].([]any) {
					args = append(args, a.(string))
				}
			}
		}
		if len(args) == 0 {
			t.Fatal("the controller Deployment has no args")
		}
		var refill []string
		for _, a := range args {
			if strings.HasPrefix(a, "--sandbox-warm-pool-replenish-delay=") || strings.HasPrefix(a, "--sandbox-warm-pool-max-refill-rate=") {
				refill = append(refill, a)
			}
		}
		if !slices.Equal(refill, tc.want) {
			t.Errorf("delay %s, %d/min: controller refill args %q, want %q (all args %q)", tc.delay, tc.perMin, refill, tc.want, args)
		}
		if !slices.Contains(args, "--extensions") {
			t.Errorf("the release's own args were lost: %q", args)
		}
	}
}
