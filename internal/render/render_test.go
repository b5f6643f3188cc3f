package render_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/render"
	"github.com/paddock-platform/paddock/schemas"
)

// The audit policy is a file of its own beside the objects, never a resource of
// the kustomization (no API server serves audit.k8s.io), and GKE gets none.
func TestAuditPolicyFileBesideTheObjects(t *testing.T) {
	want, err := manifests.AuditPolicyYAML()
	if err != nil {
		t.Fatal(err)
	}
	for dir, wantPolicy := range map[string]bool{"local": true, "kubeconfig": true, "gke-gvisor": false} {
		p, diags := schemas.NewLoader().LoadDir(filepath.Join("../../examples", dir), schemas.LoadOptions{})
		if diags.HasErrors() {
			t.Fatalf("examples/%s: %v", dir, diags)
		}
		files, order, err := render.Files(p)
		if err != nil {
			t.Fatalf("examples/%s: %v", dir, err)
		}
		got, ok := files[manifests.AuditPolicyFile]
		if ok != wantPolicy {
			t.Errorf("examples/%s: audit policy written %v, want %v (files %v)", dir, ok, wantPolicy, order)
		}
		if ok && !bytes.Equal(got, want) {
			t.Errorf("examples/%s: %s differs from the policy", dir, manifests.AuditPolicyFile)
		}
		if strings.Contains(string(files["kustomization.yaml"]), manifests.AuditPolicyFile) {
			t.Errorf("examples/%s: the kustomization lists the audit policy", dir)
		}
		if len(files) != len(order) {
			t.Errorf("examples/%s: %d files, order %v", dir, len(files), order)
		}
		if !wantPolicy {
			continue
		}
		out := t.TempDir()
		if _, err := render.ToDir(p, out); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(out, manifests.AuditPolicyFile)); err != nil || !bytes.Equal(b, want) {
			t.Errorf("examples/%s: ToDir wrote %s as %q (%v)", dir, manifests.AuditPolicyFile, b, err)
		}
	}
}
