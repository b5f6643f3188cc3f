package targets

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/specload"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// A GKE target needs no kubeconfig: the program creates the cluster and
// reaches it through the provider made from its outputs, in the same run.
func TestResolveGKE(t *testing.T) {
	t.Setenv("KUBECONFIG", "/nonexistent/kubeconfig")
	p, err := specload.Load(filepath.Join(repoRoot(t), "examples", "gke-kata"), specload.Options{}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if err := Resolve(t.Context(), p); err != nil {
		t.Fatalf("gke target refused: %v", err)
	}
	if p.Target.Kubeconfig != "" || p.Target.Kind != model.TargetGKE {
		t.Errorf("target %+v", p.Target)
	}
	// Unknown kinds still are.
	p.Target.Kind = "eks"
	if err := Resolve(t.Context(), p); err == nil || !strings.Contains(err.Error(), "cannot be provisioned") {
		t.Errorf("unknown target kind: %v", err)
	}
}
