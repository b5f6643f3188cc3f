package localcluster

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
