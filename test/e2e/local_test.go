//go:build e2e

package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gruntwork-io/terratest/modules/k8s"
	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/termtext"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	extv1beta1 "sigs.k8s.io/agent-sandbox/extensions/api/v1beta1"
)

const (
	example   = "examples/local"
	namespace = "agents-team-a"
	// examples/local's template and its warm pool.
	templateName = "agent"
	poolName     = "agent"
	replicas     = 2
)

var (
	templatesGVR = agentsandbox.SandboxTemplates
	poolsGVR     = agentsandbox.SandboxWarmPools
	claimsGVR    = agentsandbox.SandboxClaims
	sandboxesGVR = agentsandbox.Sandboxes
)

// changesRE reads the summary line of up/destroy: "paddock up: 3 created, 14 unchanged in 2.1s".
var changesRE = regexp.MustCompile(`(?m)^paddock (up|destroy): (.*) in ([0-9.]+)s$`)

// summary is the run's summary: the last line of that shape, since the run
// prints it after everything else it reports.
func summary(t *testing.T, out string) string {
	t.Helper()
	all := changesRE.FindAllStringSubmatch(out, -1)
	if all == nil {
		t.Fatalf("no summary line in output:\n%s", out)
	}
	return all[len(all)-1][2]
}

// TestLocalPlatform walks the platform's life on the live stack: up, every
// hardening property checked against the API server, a claim, a no-op up,
// destroy. The steps depend on each other, so they are subtests of one test.
func TestLocalPlatform(t *testing.T) {
	e := live
	out, took := e.mustPaddock(t, "up", example)
	t.Logf("paddock up %s (create): %s", example, took)
	if s := summary(t, out); !strings.Contains(s, "created") {
		t.Fatalf("first up created nothing: %s", s)
	}

	t.Run("tenant namespace enforces restricted", func(t *testing.T) {
		ns := k8s.GetNamespace(t, e.kubectl, namespace)
		for _, mode := range []string{"enforce", "audit", "warn"} {
			if got := ns.Labels["pod-security.kubernetes.io/"+mode]; got != "restricted" {
				t.Errorf("label pod-security.kubernetes.io/%s = %q, want restricted", mode, got)
			}
		}
		if ns.Labels["app.kubernetes.io/managed-by"] != "paddock" {
			t.Errorf("namespace not labelled managed-by paddock: %v", ns.Labels)
		}
	})

	t.Run("gvisor runtime class schedules onto sandbox nodes", func(t *testing.T) {
		rc, err := e.kube.NodeV1().RuntimeClasses().Get(ctxT(t, 10*time.Second), "gvisor", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if rc.Handler != "runsc" || rc.Scheduling == nil || rc.Scheduling.NodeSelector["sandbox.gke.io/runtime"] != "gvisor" {
			t.Fatalf("runtime class gvisor: handler %q scheduling %+v", rc.Handler, rc.Scheduling)
		}
	})

	t.Run("agent runtime identity mounts no token", func(t *testing.T) {
		sa, err := e.kube.CoreV1().ServiceAccounts(namespace).Get(ctxT(t, 10*time.Second), "agent-runtime", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
			t.Fatalf("agent-runtime automountServiceAccountToken = %v, want false", sa.AutomountServiceAccountToken)
		}
	})

	t.Run("template pod spec is hardened", func(t *testing.T) {
		u, err := e.dyn.Resource(templatesGVR).Namespace(namespace).Get(ctxT(t, 10*time.Second), templateName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var tpl extv1beta1.SandboxTemplate
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &tpl); err != nil {
			t.Fatal(err)
		}
		assertHardenedPod(t, tpl.Spec.PodTemplate.Spec)
	})

	t.Run("warm pool reaches its replicas ready on sandbox nodes", func(t *testing.T) {
		eventually(t, "warm pool ready", 90*time.Second, func() error {
			return poolReady(e, replicas)
		})
		pods, err := e.kube.CoreV1().Pods(namespace).List(ctxT(t, 10*time.Second), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) < replicas {
			t.Fatalf("%d sandbox pods, want at least %d", len(pods.Items), replicas)
		}
		for _, p := range pods.Items {
			node, err := e.kube.CoreV1().Nodes().Get(ctxT(t, 10*time.Second), p.Spec.NodeName, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("pod %s on node %q: %v", p.Name, p.Spec.NodeName, err)
			}
			if node.Labels["sandbox.gke.io/runtime"] != "gvisor" {
				t.Errorf("pod %s landed on %s, which is not a gVisor sandbox node", p.Name, node.Name)
			}
			if p.Spec.RuntimeClassName == nil || *p.Spec.RuntimeClassName != "gvisor" {
				t.Errorf("pod %s runtimeClassName = %v", p.Name, p.Spec.RuntimeClassName)
			}
			assertHardenedPod(t, p.Spec)
		}
	})

	var claimed string // the sandbox the claim below binds
	t.Run("claim with ttl and shutdownTime binds a warm sandbox and the pool refills", func(t *testing.T) {
		warm := poolSandboxes(t, e)
		claim := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "extensions.agents.x-k8s.io/v1beta1",
			"kind":       "SandboxClaim",
			"metadata":   map[string]any{"name": "session-0001", "namespace": namespace},
			"spec": map[string]any{
				"warmPoolRef": map[string]any{"name": poolName},
				"lifecycle":   sessionLifecycle(time.Now().Add(time.Hour)),
			},
		}}
		if _, err := e.dyn.Resource(claimsGVR).Namespace(namespace).Create(ctxT(t, 10*time.Second), claim, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var bound string
		eventually(t, "claim bound to a sandbox", 60*time.Second, func() error {
			u, err := e.dyn.Resource(claimsGVR).Namespace(namespace).Get(ctxT(t, 5*time.Second), "session-0001", metav1.GetOptions{})
			if err != nil {
				return err
			}
			name, _, _ := unstructured.NestedString(u.Object, "status", "sandbox", "name")
			if name == "" {
				return fmt.Errorf("status.sandbox.name empty")
			}
			bound = name
			return nil
		})
		if !warm[bound] {
			t.Fatalf("claim bound sandbox %q, which was not one of the warm pool's %v: no warm-pool hit", bound, warm)
		}
		claimed = bound
		eventually(t, "pool refilled", 90*time.Second, func() error {
			if err := poolReady(e, replicas); err != nil {
				return err
			}
			now := poolSandboxes(t, e)
			if now[bound] {
				return fmt.Errorf("claimed sandbox %s is still counted in the pool", bound)
			}
			if len(now) < replicas {
				return fmt.Errorf("pool has %d sandboxes", len(now))
			}
			return nil
		})
	})

	t.Run("the claimed sandbox runs under gVisor with every control held (exec)", func(t *testing.T) {
		assertSandboxHardened(t, e, claimedPod(t, e, claimed))
	})

	t.Run("the claimed sandbox reaches the cluster resolver and nothing else", func(t *testing.T) {
		assertSandboxFenced(t, e, claimedPod(t, e, claimed))
	})

	t.Run("privileged pod in tenant namespace is rejected", func(t *testing.T) {
		yes := true
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "escape-attempt", Namespace: namespace},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "x", Image: "busybox",
				SecurityContext: &corev1.SecurityContext{Privileged: &yes},
			}}},
		}
		_, err := e.kube.CoreV1().Pods(namespace).Create(ctxT(t, 10*time.Second), pod, metav1.CreateOptions{})
		if err == nil {
			t.Fatal("the API server accepted a privileged pod in the tenant namespace")
		}
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") {
			t.Fatalf("want a PodSecurity rejection, got: %v", err)
		}
	})

	t.Run("what verify, drift and status print fits 100 columns", func(t *testing.T) {
		for _, args := range [][]string{{"verify", example}, {"drift", example}, {"status", example}, {"local", "status"}} {
			out, _, err := e.paddock(t, args...)
			if err != nil {
				t.Errorf("paddock %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			widest, line := 0, ""
			for _, l := range strings.Split(out, "\n") {
				if n := utf8.RuneCountInString(l); n > widest {
					widest, line = n, l
				}
			}
			t.Logf("paddock %s: widest line %d characters", strings.Join(args, " "), widest)
			if widest > termtext.Width {
				t.Errorf("paddock %s: a line of %d characters (at most %d):\n%s", strings.Join(args, " "), widest, termtext.Width, line)
			}
		}
	})

	verifySuite(t, e)

	t.Run("second up changes nothing", func(t *testing.T) {
		out, took := e.mustPaddock(t, "up", example)
		t.Logf("paddock up %s (no-op): %s", example, took)
		s := summary(t, out)
		for _, verb := range []string{"created", "updated", "deleted", "replaced"} {
			if strings.Contains(s, verb) {
				t.Fatalf("second up was not a no-op: %s\n%s", s, out)
			}
		}
		if !strings.Contains(s, "unchanged") {
			t.Fatalf("second up reports no unchanged resources: %s", s)
		}
	})

	t.Run("destroy leaves nothing paddock created", func(t *testing.T) {
		out, took := e.mustPaddock(t, "destroy", example)
		t.Logf("paddock destroy %s: %s (%s)", example, took, summary(t, out))
		e.assertDestroyedDirectly(t, out, "local-demo", "local-demo")
		eventually(t, "tenant namespace gone", 120*time.Second, func() error {
			_, err := e.kube.CoreV1().Namespaces().Get(ctxT(t, 5*time.Second), namespace, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("namespace %s still exists (%v)", namespace, err)
		})
		if left := managedObjects(t, e); len(left) > 0 {
			t.Fatalf("objects labelled managed-by=paddock survive destroy:\n  %s", strings.Join(left, "\n  "))
		}
	})
}

// sessionLifecycle is the spec.lifecycle of a claim the platform's claims
// guardrail admits: a TTL, shutdown Delete and a shutdownTime, which must be
// within max_ttl (4h in examples/local) of the claim's creation.
func sessionLifecycle(shutdownTime time.Time) map[string]any {
	return map[string]any{
		"ttlSecondsAfterFinished": int64(600),
		"shutdownPolicy":          "Delete",
		"shutdownTime":            shutdownTime.UTC().Format(time.RFC3339),
	}
}

func assertHardenedPod(t *testing.T, spec corev1.PodSpec) {
	t.Helper()
	if spec.RuntimeClassName == nil || *spec.RuntimeClassName != "gvisor" {
		t.Errorf("runtimeClassName = %v, want gvisor", spec.RuntimeClassName)
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken = %v, want false", spec.AutomountServiceAccountToken)
	}
	if spec.ServiceAccountName != "agent-runtime" {
		t.Errorf("serviceAccountName = %q", spec.ServiceAccountName)
	}
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext not hardened: %+v", psc)
	}
	for _, c := range spec.Containers {
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
			t.Errorf("container %s securityContext not hardened: %+v", c.Name, sc)
		}
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
			if _, ok := c.Resources.Limits[r]; !ok {
				t.Errorf("container %s has no %s limit", c.Name, r)
			}
		}
	}
}

func poolReady(e *env, want int64) error {
	u, err := e.dyn.Resource(poolsGVR).Namespace(namespace).Get(ctxTimeout(5*time.Second), poolName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
	if ready != want {
		return fmt.Errorf("warm pool readyReplicas = %d, want %d", ready, want)
	}
	return nil
}

// poolSandboxes returns the names of the sandboxes the warm pool owns right now.
func poolSandboxes(t *testing.T, e *env) map[string]bool {
	t.Helper()
	list, err := e.dyn.Resource(sandboxesGVR).Namespace(namespace).List(ctxT(t, 10*time.Second), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, s := range list.Items {
		for _, o := range s.GetOwnerReferences() {
			if o.Kind == "SandboxWarmPool" && o.Name == poolName {
				out[s.GetName()] = true
			}
		}
	}
	return out
}

// managedObjects lists every object in the cluster carrying Paddock's labels for
// this platform, across all listable resource types. (The local cluster's own
// node is Paddock's too, but belongs to the cluster, not the platform.)
func managedObjects(t *testing.T, e *env) []string {
	t.Helper()
	lists, err := e.kube.Discovery().ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		t.Fatal(err)
	}
	var left []string
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if !hasVerb(r.Verbs, "list") || strings.Contains(r.Name, "/") {
				continue
			}
			items, err := e.dyn.Resource(gv.WithResource(r.Name)).List(ctxT(t, 10*time.Second), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=paddock,paddock.dev/platform=local-demo"})
			if err != nil {
				continue
			}
			for _, it := range items.Items {
				left = append(left, fmt.Sprintf("%s %s/%s", r.Kind, it.GetNamespace(), it.GetName()))
			}
		}
	}
	return left
}

func hasVerb(verbs []string, v string) bool {
	for _, x := range verbs {
		if x == v {
			return true
		}
	}
	return false
}
