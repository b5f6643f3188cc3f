//go:build e2e

package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/paddock-platform/paddock/verify"
)

// runVerify runs `paddock verify --format json` and returns the report and exit error.
func runVerify(t *testing.T, e *env) (*verify.Report, error) {
	t.Helper()
	out, err := e.paddockStdout(t, "verify", example, "--format", "json")
	var rep verify.Report
	if derr := json.Unmarshal([]byte(out), &rep); derr != nil {
		t.Fatalf("verify JSON: %v\n%s", derr, out)
	}
	return &rep, err
}

func statusOf(rep *verify.Report, id string) []verify.Result {
	var out []verify.Result
	for _, r := range rep.Results {
		if r.ID == id {
			out = append(out, r)
		}
	}
	return out
}

// assertVerifyClean: every check passes, but network enforcement, which the
// local stack (no CNI) can never show, must say so rather than pass.
func assertVerifyClean(t *testing.T, e *env) {
	t.Helper()
	rep, err := runVerify(t, e)
	for _, r := range rep.Results {
		switch {
		case r.ID == "V10":
			if r.Status != verify.NotVerifiable {
				t.Errorf("V10 network policy enforcement on a stack without CNI: %s, want not-verifiable-here", r.Status)
			}
		case r.Status != verify.Pass:
			t.Errorf("%s %s [%s]: %s — %s", r.ID, r.Title, r.Subject, r.Status, r.Reason)
		}
	}
	if err != nil && !t.Failed() {
		t.Errorf("verify exited non-zero with every check passing: %v", err)
	}
	for _, id := range []string{"V01", "V02", "V03", "V04", "V05", "V06", "V07", "V08", "V09", "V11"} {
		if len(statusOf(rep, id)) == 0 {
			t.Errorf("verify ran no %s check", id)
		}
	}
}

// assertCaught: verify exits non-zero and check id fails.
func assertCaught(t *testing.T, e *env, id string) {
	t.Helper()
	var rep *verify.Report
	var err error
	eventually(t, "verify catches "+id, 30*time.Second, func() error {
		rep, err = runVerify(t, e)
		for _, r := range statusOf(rep, id) {
			if r.Status == verify.Fail {
				return nil
			}
		}
		return errString("not failing yet")
	})
	if err == nil {
		t.Errorf("verify exited 0 although %s fails", id)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// verifySuite runs inside TestLocalPlatform once the platform is up and the
// pool is warm: clean first, then each control removed out of band must be
// caught, and `up` (or the cleanup) must restore it.
func verifySuite(t *testing.T, e *env) {
	t.Run("verify passes on the fresh platform", func(t *testing.T) {
		out, took, err := e.paddock(t, "verify", example)
		t.Logf("paddock verify: %s\n%s", took, out)
		if err != nil {
			t.Errorf("verify failed: %v", err)
		}
		assertVerifyClean(t, e)
	})

	t.Run("verify catches a namespace without the PSS label", func(t *testing.T) {
		patch := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":null}}}`)
		if _, err := e.kube.CoreV1().Namespaces().Patch(ctxT(t, 10*time.Second), namespace, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		assertCaught(t, e, "V01")
		out, _ := e.mustPaddock(t, "up", example)
		if s := summary(t, out); !strings.Contains(s, "updated") {
			t.Errorf("up did not repair the namespace: %s", s)
		}
		assertVerifyClean(t, e)
	})

	t.Run("verify catches a ClusterRole bound to agent-runtime", func(t *testing.T) {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-oob-agent-runtime-view"},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "agent-runtime", Namespace: namespace}},
		}
		if _, err := e.kube.RbacV1().ClusterRoleBindings().Create(ctxT(t, 10*time.Second), crb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		assertCaught(t, e, "V03")
		if err := e.kube.RbacV1().ClusterRoleBindings().Delete(ctxT(t, 10*time.Second), crb.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		assertVerifyClean(t, e)
	})

	t.Run("verify catches a deleted guardrail binding", func(t *testing.T) {
		name := "paddock-local-demo-team-a-claims"
		if err := e.kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctxT(t, 10*time.Second), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		assertCaught(t, e, "V08")
		out, _ := e.mustPaddock(t, "up", example)
		if s := summary(t, out); !strings.Contains(s, "created") && !strings.Contains(s, "updated") {
			t.Errorf("up did not restore the binding: %s", s)
		}
		eventually(t, "verify clean after repair", 30*time.Second, func() error {
			rep, _ := runVerify(t, e)
			for _, r := range statusOf(rep, "V08") {
				if r.Status != verify.Pass {
					return errString(r.Reason)
				}
			}
			return nil
		})
	})
}
