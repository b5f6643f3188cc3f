//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/paddock-platform/paddock/schemas/specgen"
)

var crdsGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// TestStoredVersionPreflight: a release whose CRDs drop a version the cluster
// still stores objects in is refused by `preview` and `up` before anything is
// applied, as an Agent Sandbox upgrade that drops v1alpha1 would be. The live
// SandboxTemplate CRD is given an extra version, v1alpha0, recorded in
// status.storedVersions (the state a cluster is in after an older release stored
// objects at it); the pinned release does not list it. Running the migration the
// refusal prints, as printed, lets the next `up` through, which then converges.
func TestStoredVersionPreflight(t *testing.T) {
	e := live
	dir := t.TempDir()
	spec := specgen.Generate(specgen.Options{Platform: "stored-versions", Tenants: 1})
	if err := os.WriteFile(filepath.Join(dir, "platform.hcl"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	e.mustPaddock(t, "up", dir)
	defer e.destroyAndWait(t, nil, nil, dir)

	const name = "sandboxtemplates.extensions.agents.x-k8s.io"
	crds := e.dyn.Resource(crdsGVR)
	versionsOf := func() (listed, stored []string) {
		t.Helper()
		u, err := crds.Get(ctxT(t, 10*time.Second), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		vs, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
		for _, v := range vs {
			listed = append(listed, v.(map[string]any)["name"].(string))
		}
		stored, _, _ = unstructured.NestedStringSlice(u.Object, "status", "storedVersions")
		return listed, stored
	}

	// An older version, listed (not served, not storage) and stored.
	u, err := crds.Get(ctxT(t, 10*time.Second), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vs, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	old := map[string]any{}
	for k, v := range vs[0].(map[string]any) {
		old[k] = v
	}
	old["name"], old["served"], old["storage"] = "v1alpha0", false, false
	delete(old, "deprecated")
	delete(old, "deprecationWarning")
	if err := unstructured.SetNestedSlice(u.Object, append(vs, old), "spec", "versions"); err != nil {
		t.Fatal(err)
	}
	if u, err = crds.Update(ctxT(t, 10*time.Second), u, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("adding v1alpha0 to CRD %s: %v", name, err)
	}
	stored, _, _ := unstructured.NestedStringSlice(u.Object, "status", "storedVersions")
	_ = unstructured.SetNestedStringSlice(u.Object, append(stored, "v1alpha0"), "status", "storedVersions")
	if _, err := crds.UpdateStatus(ctxT(t, 10*time.Second), u, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("recording v1alpha0 in status.storedVersions of %s: %v", name, err)
	}
	// Whatever happens below, the CRD leaves this test as the release has it, so
	// the destroy and the tests after this one meet the release's own CRD.
	defer func() {
		u, err := crds.Get(ctxTimeout(10*time.Second), name, metav1.GetOptions{})
		if err != nil {
			return
		}
		stored, _, _ := unstructured.NestedStringSlice(u.Object, "status", "storedVersions")
		if slices.Contains(stored, "v1alpha0") {
			_ = unstructured.SetNestedStringSlice(u.Object, slices.DeleteFunc(stored, func(s string) bool { return s == "v1alpha0" }), "status", "storedVersions")
			if u, err = crds.UpdateStatus(ctxTimeout(10*time.Second), u, metav1.UpdateOptions{}); err != nil {
				t.Errorf("restoring %s's storedVersions: %v", name, err)
				return
			}
		}
		vs, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
		kept := slices.DeleteFunc(vs, func(v any) bool { return v.(map[string]any)["name"] == "v1alpha0" })
		if len(kept) != len(vs) {
			_ = unstructured.SetNestedSlice(u.Object, kept, "spec", "versions")
			if _, err := crds.Update(ctxTimeout(10*time.Second), u, metav1.UpdateOptions{}); err != nil {
				t.Errorf("restoring %s's versions: %v", name, err)
			}
		}
	}()

	var migration []string
	for _, op := range []string{"preview", "up"} {
		out, _, err := e.paddock(t, op, dir)
		if err == nil {
			t.Fatalf("%s went ahead with v1alpha0 stored and not in the release:\n%s", op, out)
		}
		for _, want := range []string{
			op + " refused before applying anything",
			"CRD " + name + ": status.storedVersions is [",
			"not v1alpha0",
			"kubectl patch crd " + name + " --subresource=status",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s's refusal lacks %q:\n%s", op, want, out)
			}
		}
		migration = migration[:0]
		for _, line := range strings.Split(out, "\n") {
			if cmd, ok := strings.CutPrefix(line, "  kubectl "); ok {
				cmd, _, _ = strings.Cut(cmd, "   # ")
				migration = append(migration, "kubectl "+cmd)
			}
		}
	}
	if listed, stored := versionsOf(); !slices.Contains(listed, "v1alpha0") || !slices.Contains(stored, "v1alpha0") {
		t.Fatalf("the refused up changed CRD %s: versions %v, storedVersions %v", name, listed, stored)
	}
	if len(migration) != 2 {
		t.Fatalf("want the refusal's two migration commands, got %q", migration)
	}

	// The migration, exactly as printed.
	for _, cmd := range migration {
		c := exec.Command("bash", "-euo", "pipefail", "-c", cmd)
		c.Env = append(os.Environ(), "KUBECONFIG="+e.kubeconfig)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("the printed migration step %q failed: %v\n%s", cmd, err, out)
		}
	}
	if _, stored := versionsOf(); fmt.Sprint(stored) != "[v1beta1]" {
		t.Fatalf("after the printed migration, storedVersions is %v, want [v1beta1]", stored)
	}
	e.mustPaddock(t, "up", dir)
	if listed, _ := versionsOf(); slices.Contains(listed, "v1alpha0") {
		t.Errorf("up after the migration left v1alpha0 in CRD %s: %v", name, listed)
	}
}
