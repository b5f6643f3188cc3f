//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/schemas"
	"github.com/paddock-platform/paddock/schemas/specgen"
)

// TestClaimMaxTTLEnforced: max_ttl is a session's hard maximum on the live
// platform. Real claims (not dry runs) are refused by the API server without
// spec.lifecycle.shutdownTime or with one past max_ttl, a claim within it is
// admitted, and an update that pushes its shutdownTime past max_ttl is
// refused and leaves it as it was.
func TestClaimMaxTTLEnforced(t *testing.T) {
	e := live
	// A generated spec (max_ttl = "2h") with a platform and tenant of its
	// own, so that no other test's namespace is in the way.
	_, dir, p := oneTenantSpec(t, "claims-ttl", "ttl")
	tn := p.Tenants[0]
	if tn.Name != "ttl" || tn.Claims.MaxTTL != 2*time.Hour || len(tn.WarmPools) == 0 {
		t.Fatalf("the generated spec changed shape: tenant %s, max_ttl %s, %d pools", tn.Name, tn.Claims.MaxTTL, len(tn.WarmPools))
	}
	ns, pool := tn.Namespace, tn.WarmPools[0].Name
	policy := manifests.GuardrailName(p, tn, "claims")
	msg := manifests.ClaimsGuardrailMessages(tn)
	refusal := func(m string) string {
		return fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", policy, policy, m)
	}

	e.mustPaddock(t, "up", dir)
	defer e.destroyAndWait(t, nil, []string{ns}, dir)

	claims := e.dyn.Resource(claimsGVR).Namespace(ns)
	claim := func(name string, shutdownTime *time.Time) *unstructured.Unstructured {
		lifecycle := map[string]any{"ttlSecondsAfterFinished": int64(300), "shutdownPolicy": "Delete"}
		if shutdownTime != nil {
			lifecycle["shutdownTime"] = shutdownTime.UTC().Format(time.RFC3339)
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": claimsGVR.GroupVersion().String(),
			"kind":       "SandboxClaim",
			"metadata":   map[string]any{"name": name, "namespace": ns},
			"spec":       map[string]any{"warmPoolRef": map[string]any{"name": pool}, "lifecycle": lifecycle},
		}}
	}
	// The API server enforces a new policy once it has read it: wait for
	// that with dry runs, which store nothing if it has not yet.
	eventually(t, "the claims guardrail in force", time.Minute, func() error {
		_, err := claims.Create(ctxTimeout(10*time.Second), claim("e2e-dry-run", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil || !strings.Contains(err.Error(), refusal(msg.ShutdownTimeRequired)) {
			return fmt.Errorf("a claim without shutdownTime: %v", err)
		}
		return nil
	})
	refused := func(t *testing.T, err error, m string) {
		t.Helper()
		if err == nil {
			t.Fatalf("admitted, want refused with %q", m)
		}
		if !strings.Contains(err.Error(), refusal(m)) {
			t.Fatalf("refused with %v, want %q", err, refusal(m))
		}
	}

	t.Run("refused without shutdownTime", func(t *testing.T) {
		_, err := claims.Create(ctxT(t, 10*time.Second), claim("e2e-no-shutdown-time", nil), metav1.CreateOptions{})
		refused(t, err, msg.ShutdownTimeRequired)
	})
	t.Run("refused with shutdownTime past max_ttl", func(t *testing.T) {
		beyond := time.Now().Add(tn.Claims.MaxTTL + 10*time.Minute)
		_, err := claims.Create(ctxT(t, 10*time.Second), claim("e2e-beyond", &beyond), metav1.CreateOptions{})
		refused(t, err, msg.ShutdownTimeMax)
	})
	t.Run("admitted within max_ttl; an update may not push it out", func(t *testing.T) {
		within := time.Now().Add(time.Hour)
		created, err := claims.Create(ctxT(t, 10*time.Second), claim("e2e-within", &within), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("a claim with shutdownTime an hour away (max_ttl %s) was refused: %v", tn.Claims.MaxTTL, err)
		}
		defer claims.Delete(ctxTimeout(10*time.Second), created.GetName(), metav1.DeleteOptions{})
		stored, _, _ := unstructured.NestedString(created.Object, "spec", "lifecycle", "shutdownTime")

		// A merge patch carries no resourceVersion, so the controller's own
		// updates of the claim cannot make it conflict.
		later := created.GetCreationTimestamp().Add(tn.Claims.MaxTTL + time.Minute).UTC().Format(time.RFC3339)
		patch := fmt.Sprintf(`{"spec":{"lifecycle":{"shutdownTime":%q}}}`, later)
		_, err = claims.Patch(ctxT(t, 10*time.Second), created.GetName(), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		refused(t, err, msg.ShutdownTimeMax)
		now, err := claims.Get(ctxT(t, 10*time.Second), created.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got, _, _ := unstructured.NestedString(now.Object, "spec", "lifecycle", "shutdownTime"); got != stored {
			t.Errorf("shutdownTime is %q after the refused update, was %q", got, stored)
		}
	})
}

// oneTenantSpec writes a generated spec (one tenant, max_ttl = "2h") whose
// platform and tenant are the test's own, so that no other test's namespace
// is in the way: its text, its directory and the platform it loads to.
func oneTenantSpec(t *testing.T, platform, tenant string) (string, string, *model.Platform) {
	t.Helper()
	spec := strings.Replace(specgen.Generate(specgen.Options{Platform: platform, Tenants: 1}),
		fmt.Sprintf("tenant %q", specgen.TenantName(0)), fmt.Sprintf("tenant %q", tenant), 1)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "platform.hcl"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	p, diags := schemas.LoadSource("platform.hcl", []byte(spec), schemas.LoadOptions{Environ: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return spec, dir, p
}
