package agentsandbox

import "testing"

// On the local target nothing can run the controller's pod: its Deployment
// and Services must not be awaited there, and must be everywhere else.
func TestSkipAwaitOnlyWithoutControllerReplicas(t *testing.T) {
	zero := int64(0)
	for _, tc := range []struct {
		name     string
		replicas *int64
		want     bool
	}{{"local (replicas 0)", &zero, true}, {"real cluster", nil, false}} {
		objs, err := Objects(Versions()[0], Options{Image: "registry.example/c:v1", ControllerReplicas: tc.replicas})
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, u := range objs {
			_, has := u.GetAnnotations()[SkipAwaitAnnotation]
			switch u.GetKind() {
			case "Service", "Deployment":
				seen++
				if has != tc.want {
					t.Errorf("%s: %s %s skipAwait = %v, want %v", tc.name, u.GetKind(), u.GetName(), has, tc.want)
				}
			default:
				if has {
					t.Errorf("%s: %s %s must be awaited", tc.name, u.GetKind(), u.GetName())
				}
			}
		}
		if seen < 2 {
			t.Fatalf("%s: the release has %d Services and Deployments, want the controller's", tc.name, seen)
		}
	}
}
