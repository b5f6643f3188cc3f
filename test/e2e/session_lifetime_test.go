//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/paddock-platform/paddock/internal/drift"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/verify"
)

// TestSessionLifetimeAfterAdmission: a session's maximum holds after
// admission, on the live platform.
//   - A Sandbox created directly in a tenant namespace (no claim) is held to
//     max_ttl like a claim: refused without a shutdownTime, admitted with one
//     within.
//   - With the Agent Sandbox controller stopped (SIGSTOP), a claim past its
//     shutdownTime still exists: drift (S08) and verify (V08) name it and
//     say it is past its end; once the controller runs again it is gone.
//   - max_ttl lowered under an older claim: its finalizer's removal and an
//     earlier shutdownTime are admitted, so deleting it does not hang.
func TestSessionLifetimeAfterAdmission(t *testing.T) {
	e := live
	spec, dir, p := oneTenantSpec(t, "lifetime", "life")
	if !strings.Contains(spec, `max_ttl = "2h"`) {
		t.Fatal(`the generated spec no longer sets max_ttl = "2h"`)
	}
	file := filepath.Join(dir, "platform.hcl")
	write := func(text string) {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tn := p.Tenants[0]
	ns, pool := tn.Namespace, tn.WarmPools[0].Name
	runtimeClass := tn.Templates[0].RuntimeClass

	e.mustPaddock(t, "up", dir)
	defer e.destroyAndWait(t, nil, []string{ns}, dir)

	claims := e.dyn.Resource(claimsGVR).Namespace(ns)
	sandboxes := e.dyn.Resource(sandboxesGVR).Namespace(ns)
	claim := func(name string, ttl int64, shutdownTime time.Time) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": claimsGVR.GroupVersion().String(),
			"kind":       "SandboxClaim",
			"metadata":   map[string]any{"name": name, "namespace": ns},
			"spec": map[string]any{"warmPoolRef": map[string]any{"name": pool}, "lifecycle": map[string]any{
				"ttlSecondsAfterFinished": ttl, "shutdownPolicy": "Delete", "shutdownTime": shutdownTime.UTC().Format(time.RFC3339),
			}},
		}}
	}
	direct := func(name string, shutdownTime *time.Time) *unstructured.Unstructured {
		spec := map[string]any{"podTemplate": map[string]any{"spec": map[string]any{
			"runtimeClassName": runtimeClass,
			"containers":       []any{map[string]any{"name": "agent", "image": "registry.invalid/e2e/direct:1"}},
		}}}
		if shutdownTime != nil {
			spec["shutdownTime"] = shutdownTime.UTC().Format(time.RFC3339)
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": sandboxesGVR.GroupVersion().String(),
			"kind":       "Sandbox",
			"metadata":   map[string]any{"name": name, "namespace": ns},
			"spec":       spec,
		}}
	}
	lifetimePolicy := manifests.GuardrailName(p, tn, "sandbox-lifetime")
	directRefusal := fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: %s", lifetimePolicy, lifetimePolicy, manifests.SandboxLifetimeMessage(tn))
	eventually(t, "the sandbox-lifetime guardrail in force", time.Minute, func() error {
		_, err := sandboxes.Create(ctxTimeout(10*time.Second), direct("e2e-dry-run", nil), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil || !strings.Contains(err.Error(), directRefusal) {
			return fmt.Errorf("a direct sandbox without shutdownTime: %v", err)
		}
		return nil
	})

	t.Run("a Sandbox created directly", func(t *testing.T) {
		_, err := sandboxes.Create(ctxT(t, 10*time.Second), direct("e2e-direct-forever", nil), metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), directRefusal) {
			t.Fatalf("a Sandbox created directly without shutdownTime: %v, want refused with %q", err, directRefusal)
		}
		beyond := time.Now().Add(tn.Claims.MaxTTL + 10*time.Minute)
		if _, err := sandboxes.Create(ctxT(t, 10*time.Second), direct("e2e-direct-beyond", &beyond), metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), directRefusal) {
			t.Fatalf("a Sandbox created directly with a shutdownTime past max_ttl: %v, want refused", err)
		}
		within := time.Now().Add(30 * time.Minute)
		if _, err := sandboxes.Create(ctxT(t, 10*time.Second), direct("e2e-direct-within", &within), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatalf("a Sandbox created directly with a shutdownTime 30m away (max_ttl %s) was refused: %v", tn.Claims.MaxTTL, err)
		}
	})

	t.Run("the controller stopped, a claim past its end", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(e.home, "local", "supervisor.json"))
		if err != nil {
			t.Fatal(err)
		}
		var sup supervisorState
		if err := json.Unmarshal(b, &sup); err != nil || sup.Controller.PID == 0 {
			t.Fatalf("supervisor.json names no controller pid (%v):\n%s", err, b)
		}
		created, err := claims.Create(ctxT(t, 10*time.Second), claim("e2e-overdue", 300, time.Now().Add(20*time.Second)), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		name := created.GetName()
		defer claims.Delete(ctxTimeout(10*time.Second), name, metav1.DeleteOptions{})
		if err := syscall.Kill(sup.Controller.PID, syscall.SIGSTOP); err != nil {
			t.Fatalf("stopping the controller (pid %d): %v", sup.Controller.PID, err)
		}
		resumed := false
		resume := func() {
			if !resumed {
				resumed = true
				_ = syscall.Kill(sup.Controller.PID, syscall.SIGCONT)
			}
		}
		defer resume()
		t.Logf("stopped the Agent Sandbox controller (pid %d); claim %s ends at %s", sup.Controller.PID, name, created.Object["spec"].(map[string]any)["lifecycle"].(map[string]any)["shutdownTime"])

		// Past its end and the grace drift allows the controller, the claim is
		// named by drift with how long it is over.
		object := "SandboxClaim " + ns + "/" + name
		var reason string
		eventually(t, "drift names the claim past its end", 3*time.Minute, func() error {
			r := e.runPaddock(t, nil, "drift", dir, "--format", "json")
			var rep drift.Report
			if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
				return fmt.Errorf("drift exit %d: %v", r.code, err)
			}
			for _, f := range rep.Unmanaged {
				if f.Rule == drift.RuleSessionOverdue && f.Object() == object {
					if r.code != 2 {
						return fmt.Errorf("drift reports %s but exits %d, want 2", object, r.code)
					}
					reason = f.Reason
					return nil
				}
			}
			return fmt.Errorf("drift (exit %d) does not name %s yet", r.code, object)
		})
		if !strings.Contains(reason, "past its end (its spec.lifecycle.shutdownTime") {
			t.Errorf("S08 reason %q does not say it is past its shutdownTime", reason)
		}
		rep, code := verifyReport(t, e, dir)
		v08 := statusOf(rep, "V08")
		if code == 0 || len(v08) == 0 || v08[0].Status != verify.Fail || !strings.Contains(v08[0].Reason, "SandboxClaim "+name+": it still exists") {
			t.Errorf("verify exit %d, V08 %+v: want a failure naming claim %s", code, v08, name)
		}

		resume()
		eventually(t, "the controller, running again, ends the claim", 3*time.Minute, func() error {
			_, err := claims.Get(ctxTimeout(10*time.Second), name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("claim %s still exists (%v)", name, err)
		})
	})

	t.Run("max_ttl lowered, then an older claim deleted", func(t *testing.T) {
		// Admitted under max_ttl 2h: a TTL and an end that 1h no longer allows.
		c := claim("e2e-older", 6000, time.Now().Add(100*time.Minute))
		c.SetFinalizers([]string{"e2e.paddock.test/hold"})
		created, err := claims.Create(ctxT(t, 10*time.Second), c, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		name := created.GetName()
		defer func() {
			_, _ = claims.Patch(ctxTimeout(10*time.Second), name, types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{})
			_ = claims.Delete(ctxTimeout(10*time.Second), name, metav1.DeleteOptions{})
		}()

		write(strings.Replace(spec, `max_ttl = "2h"`, `max_ttl = "1h"`, 1))
		e.mustPaddock(t, "up", dir)
		eventually(t, "max_ttl 1h in force", time.Minute, func() error {
			_, err := claims.Create(ctxTimeout(10*time.Second), claim("e2e-dry-run", 300, time.Now().Add(90*time.Minute)), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err == nil {
				return fmt.Errorf("a claim ending in 90m is still admitted")
			}
			return nil
		})

		earlier := created.GetCreationTimestamp().Add(95 * time.Minute).UTC().Format(time.RFC3339)
		if _, err := claims.Patch(ctxT(t, 10*time.Second), name, types.MergePatchType,
			[]byte(fmt.Sprintf(`{"spec":{"lifecycle":{"shutdownTime":%q}}}`, earlier)), metav1.PatchOptions{}); err != nil {
			t.Errorf("moving an older claim's shutdownTime earlier (still beyond today's max_ttl) was refused: %v", err)
		}
		if err := claims.Delete(ctxT(t, 10*time.Second), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := claims.Patch(ctxT(t, 10*time.Second), name, types.JSONPatchType,
			[]byte(`[{"op":"remove","path":"/metadata/finalizers"}]`), metav1.PatchOptions{}); err != nil {
			t.Fatalf("removing the finalizer of an older claim under a lowered max_ttl was refused (its deletion hangs): %v", err)
		}
		eventually(t, "the older claim deleted", time.Minute, func() error {
			_, err := claims.Get(ctxTimeout(10*time.Second), name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("claim %s still exists (%v)", name, err)
		})
	})
}
