//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/paddock-platform/paddock/internal/localcluster"
	"github.com/paddock-platform/paddock/internal/verify"
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

// assertVerifyClean: every check passes. On the real node that includes the
// runtime checks (V10 network probe, V12 a sandbox read from inside); on kwok
// nodes (PADDOCK_E2E_NODES=fake) those must say they cannot be verified, never
// pass.
func assertVerifyClean(t *testing.T, e *env) {
	t.Helper()
	rep, err := runVerify(t, e)
	runtimeChecks := map[string]bool{"V10": true, "V12": true}
	for _, r := range rep.Results {
		switch {
		case runtimeChecks[r.ID] && e.nodes == "fake":
			if r.Status != verify.NotVerifiable {
				t.Errorf("%s on kwok nodes: %s (%s), want not-verifiable-here", r.ID, r.Status, r.Reason)
			}
		case r.Status != verify.Pass:
			t.Errorf("%s %s [%s]: %s — %s", r.ID, r.Title, r.Subject, r.Status, r.Reason)
		}
	}
	if err != nil && !t.Failed() && e.nodes != "fake" {
		t.Errorf("verify exited non-zero with every check passing: %v", err)
	}
	for _, id := range []string{"V01", "V02", "V03", "V04", "V05", "V06", "V07", "V08", "V09", "V10", "V11", "V12", "V13", "V14", "V15"} {
		if len(statusOf(rep, id)) == 0 {
			t.Errorf("verify ran no %s check", id)
		}
	}
}

// assertAudited: the local API server's audit log holds a Metadata event of
// verb on resource name, made by the admin identity the tests' client uses,
// with its source and time.
func assertAudited(t *testing.T, e *env, verb, resource, name string) {
	t.Helper()
	path := localcluster.New(localcluster.Options{Dir: filepath.Join(e.home, "local")}).Where().AuditLog
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the API server's audit log: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	// The last such event: the test's own change (its client, not Pulumi's),
	// not an earlier one of up's.
	last := ""
	for sc.Scan() {
		var ev struct {
			Verb      string                           `json:"verb"`
			ObjectRef *struct{ Resource, Name string } `json:"objectRef"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Verb == verb && ev.ObjectRef != nil && ev.ObjectRef.Resource == resource && ev.ObjectRef.Name == name {
			last = sc.Text()
		}
	}
	if last != "" {
		var ev struct {
			Level     string                    `json:"level"`
			User      struct{ Username string } `json:"user"`
			UserAgent string                    `json:"userAgent"`
			SourceIPs []string                  `json:"sourceIPs"`
			Time      string                    `json:"requestReceivedTimestamp"`
			Request   json.RawMessage           `json:"requestObject"`
		}
		_ = json.Unmarshal([]byte(last), &ev)
		if ev.Level != "Metadata" || ev.User.Username != "paddock-admin" || strings.HasPrefix(ev.UserAgent, "pulumi") || len(ev.SourceIPs) == 0 || ev.Time == "" || len(ev.Request) > 0 {
			t.Errorf("audit event of %s %s %s: %s", verb, resource, name, last)
		}
		return
	}
	t.Errorf("no audit event of %s %s %s in %s (%v)", verb, resource, name, path, sc.Err())
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
		// The fence changed: the API server's audit log says who did it.
		assertAudited(t, e, "patch", "namespaces", namespace)
		out, _ := e.mustPaddock(t, "up", example)
		// The spec is unchanged: the fast path writes the namespace back.
		if s := summary(t, out); !strings.Contains(s, "repaired 1 object") || !strings.Contains(out, "restored metadata.labels[\"pod-security.kubernetes.io/enforce\"]") {
			t.Errorf("up did not say it repaired the namespace's label: %s\n%s", s, out)
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

	t.Run("verify catches a namespace that admits privileged pods", func(t *testing.T) {
		patch := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"privileged"}}}`)
		if _, err := e.kube.CoreV1().Namespaces().Patch(ctxT(t, 10*time.Second), namespace, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		assertCaught(t, e, "V02")
		e.mustPaddock(t, "up", example)
		assertVerifyClean(t, e)
	})

	t.Run("verify catches an orchestrator with more rights", func(t *testing.T) {
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-oob-orchestrator-view", Namespace: namespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "agent-orchestrator", Namespace: namespace}},
		}
		if _, err := e.kube.RbacV1().RoleBindings(namespace).Create(ctxT(t, 10*time.Second), rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		assertCaught(t, e, "V04")
		if err := e.kube.RbacV1().RoleBindings(namespace).Delete(ctxT(t, 10*time.Second), rb.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		assertVerifyClean(t, e)
	})

	t.Run("verify catches a runtime class that lost its node selector", func(t *testing.T) {
		// Before, a class without scheduling passed: every node "matched" it.
		patch := []byte(`{"scheduling":{"nodeSelector":null}}`)
		if _, err := e.kube.NodeV1().RuntimeClasses().Patch(ctxT(t, 10*time.Second), "gvisor", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		assertCaught(t, e, "V05")
		e.mustPaddock(t, "up", example)
		assertVerifyClean(t, e)
	})

	t.Run("verify catches a sandbox pod on a node without gVisor", func(t *testing.T) {
		// A second node without the sandbox label, and a pod bound to it
		// directly (nodeName skips the scheduler and so the runtime
		// class's selector): the one-node stack cannot misplace a pod by
		// itself.
		ctx := ctxT(t, time.Minute)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "e2e-plain-node", Labels: map[string]string{"kubernetes.io/os": "linux"}}}
		if _, err := e.kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		zero := int64(0)
		defer func() {
			_ = e.kube.CoreV1().Pods(namespace).Delete(ctxTimeout(10*time.Second), "e2e-misplaced", metav1.DeleteOptions{GracePeriodSeconds: &zero})
			_ = e.kube.CoreV1().Nodes().Delete(ctxTimeout(10*time.Second), node.Name, metav1.DeleteOptions{})
		}()
		if _, err := e.kube.CoreV1().Pods(namespace).Create(ctx, misplacedPod(node.Name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		assertCaught(t, e, "V06")
		if err := e.kube.CoreV1().Pods(namespace).Delete(ctx, "e2e-misplaced", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		eventually(t, "misplaced pod gone", 30*time.Second, func() error {
			if _, err := e.kube.CoreV1().Pods(namespace).Get(ctxTimeout(5*time.Second), "e2e-misplaced", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there (%v)", err)
			}
			return nil
		})
		assertVerifyClean(t, e)
	})

	// Each rule that bounds a session, removed from the claims policy, is
	// caught: V08's probe that breaks it alone is admitted. Before, the TTL
	// probe also lacked a shutdown policy, so the shutdown rule refused it
	// and V08 passed with the TTL rule gone.
	for _, rule := range []struct{ name, message string }{
		{"TTL", "must set spec.lifecycle.ttlSecondsAfterFinished"},
		{"max_ttl", "may set spec.lifecycle.shutdownTime at most"},
	} {
		t.Run("verify catches a claims policy without its "+rule.name+" rule", func(t *testing.T) {
			name := "paddock-local-demo-team-a-claims"
			vap, err := e.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctxT(t, 10*time.Second), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var kept []admissionv1.Validation
			for _, v := range vap.Spec.Validations {
				if strings.Contains(v.Message, rule.message) {
					continue
				}
				kept = append(kept, v)
			}
			if len(kept) != len(vap.Spec.Validations)-1 {
				t.Fatalf("no %s rule to remove among %+v", rule.name, vap.Spec.Validations)
			}
			vap.Spec.Validations = kept
			if _, err := e.kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Update(ctxT(t, 10*time.Second), vap, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			assertCaught(t, e, "V08")
			e.mustPaddock(t, "up", example)
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

	t.Run("verify catches a deleted default-deny policy", func(t *testing.T) {
		if err := e.kube.NetworkingV1().NetworkPolicies(namespace).Delete(ctxT(t, 10*time.Second), "default-deny", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		assertCaught(t, e, "V09")
		e.mustPaddock(t, "up", example)
		assertVerifyClean(t, e)
	})

	t.Run("verify catches a policy that opens the namespace (traffic, real node)", func(t *testing.T) {
		if e.nodes == "fake" {
			t.Skip("kwok nodes run no pod: V10 is not verifiable there (asserted in assertVerifyClean)")
		}
		// Stored beside the spec's policies, this one allows every pod of the
		// namespace all traffic: only a probe with traffic can tell.
		open := &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-allow-all", Namespace: namespace},
			Spec: networkingv1.NetworkPolicySpec{
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
				Ingress:     []networkingv1.NetworkPolicyIngressRule{{}},
				Egress:      []networkingv1.NetworkPolicyEgressRule{{}},
			},
		}
		if _, err := e.kube.NetworkingV1().NetworkPolicies(namespace).Create(ctxT(t, 10*time.Second), open, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		assertCaught(t, e, "V10")
		// And by its effect, with no traffic: V09 judges every policy of
		// the namespace by what it opens.
		assertCaught(t, e, "V09")
		if err := e.kube.NetworkingV1().NetworkPolicies(namespace).Delete(ctxT(t, 10*time.Second), open.Name, metav1.DeleteOptions{}); err != nil {
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

// verifyReport runs `paddock verify SPEC --format json` and decodes it,
// with the exit status.
func verifyReport(t *testing.T, e *env, spec string) (*verify.Report, int) {
	t.Helper()
	r := e.runPaddock(t, nil, "verify", spec, "--format", "json")
	var rep verify.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("verify JSON (exit %d): %v\n%s\n%s", r.code, err, r.stdout, tail(r.stderr, 10))
	}
	return &rep, r.code
}

func anyStatus(results []verify.Result, s verify.Status) bool {
	for _, r := range results {
		if r.Status == s {
			return true
		}
	}
	return false
}

// misplacedPod is a pod the tenant namespace admits (Pod Security
// restricted, an allowed runtime class, within its quota), bound to node.
func misplacedPod(node string) *corev1.Pod {
	no, yes := false, true
	class := "gvisor"
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-misplaced", Namespace: namespace},
		Spec: corev1.PodSpec{
			NodeName:                     node,
			RuntimeClassName:             &class,
			ServiceAccountName:           "agent-runtime",
			AutomountServiceAccountToken: &no,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   &yes,
				RunAsUser:      ptrInt64(65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: "x", Image: "registry.k8s.io/pause:3.10",
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: &no,
					ReadOnlyRootFilesystem:   &yes,
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi"), corev1.ResourceEphemeralStorage: resource.MustParse("10Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi"), corev1.ResourceEphemeralStorage: resource.MustParse("10Mi")},
				},
			}},
		},
	}
}

func ptrInt64(v int64) *int64 { return &v }
