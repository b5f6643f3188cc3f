//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/k8s"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/paddock-platform/paddock/internal/manifests/agentsandbox"
	"github.com/paddock-platform/paddock/internal/pins"
	"github.com/paddock-platform/paddock/internal/pools"
	"github.com/paddock-platform/paddock/internal/verify"
)

// The release-upgrade platform: one tenant with one warm pool of two.
const (
	upgradeNS   = "agents-upgrade"
	upgradePool = "agent"
	upgradeWarm = "sandboxwarmpools.extensions.agents.x-k8s.io"
)

var (
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	warmPoolsGVR   = schema.GroupVersionResource{Group: "extensions.agents.x-k8s.io", Version: "v1beta1", Resource: "sandboxwarmpools"}
)

// upgradeSpec is the platform at Agent Sandbox release version.
func upgradeSpec(version string) string {
	return fmt.Sprintf(`platform {
  name = "release-upgrade"
}

target "local" {}

agent_sandbox {
  version = %q
}

runtime_class "gvisor" {
  handler = "runsc"
  node_selector = {
    "sandbox.gke.io/runtime" = "gvisor"
  }
  toleration {
    key    = "sandbox.gke.io/runtime"
    value  = "gvisor"
    effect = "NoSchedule"
  }
}

tenant "upgrade" {
%s}

waiver {
  rule   = "PDK-603"
  reason = "Throwaway platform of a test on the local cluster."
}
`, version, sleeperTemplate(2))
}

// session is the claimed sandbox that must live through both moves.
type session struct {
	sandbox        string
	sandboxUID     types.UID
	pod            string
	podUID         types.UID
	podStarted     time.Time
	containerStart map[string]int32 // restart count per container
}

// TestReleaseUpgradeAndRollback moves a running platform (warm pool full, one
// claimed session running) from the previous Agent Sandbox release to the
// pinned one and back. Each way: `preview` prints the release change summary
// (CRDs, controller, webhooks, disruption, whether going back is safe); `up`
// moves the release; the local supervisor then runs the controller build of
// the installed release; the claimed sandbox's pod keeps its UID and keeps
// running; the pool refills; `paddock verify` passes. The release is
// cluster-wide, so the test needs a cluster without one (as every test of this
// suite leaves it) and leaves it so, whatever fails: the platform is destroyed
// and the release's namespace awaited, and the supervisor is back to waiting
// with the pinned build.
func TestReleaseUpgradeAndRollback(t *testing.T) {
	e := live
	prev, cur := pins.AgentSandboxPrevious, pins.AgentSandbox
	if prev == "" || prev == cur {
		t.Fatalf("no previous Agent Sandbox release pinned (AGENT_SANDBOX_PREVIOUS_VERSION=%q)", prev)
	}
	prevBin := agentsandbox.ControllerBinary(prev)
	if _, err := os.Stat(filepath.Join(e.home, "bin", prevBin)); err != nil {
		t.Fatalf("%s is missing from PADDOCK_HOME/bin: run `make tools-test` (tools/agent-sandbox-previous) first", prevBin)
	}
	// A release installed by another platform would be moved under it.
	if dep, err := e.dyn.Resource(deploymentsGVR).Namespace(agentsandbox.Namespace).Get(ctxT(t, 10*time.Second), agentsandbox.ControllerDeployment, metav1.GetOptions{}); err == nil {
		t.Fatalf("an Agent Sandbox release (%s) is already installed by another platform; this test moves the cluster-wide release and needs a cluster without one", dep.GetLabels()[agentsandbox.VersionLabel])
	} else if !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}

	dir := t.TempDir()
	spec := filepath.Join(dir, "platform.hcl")
	write := func(version string) {
		t.Helper()
		if err := os.WriteFile(spec, []byte(upgradeSpec(version)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	up := func(what string) run {
		t.Helper()
		r := e.runPaddock(t, nil, "up", dir)
		t.Logf("paddock up (%s): exit %d in %s\n%s", what, r.code, r.took.Round(100*time.Millisecond), tail(r.stdout, 25))
		if r.code != 0 {
			t.Fatalf("paddock up (%s): exit %d\n%s\n%s", what, r.code, r.stdout, tail(r.stderr, 30))
		}
		return r
	}

	// Start at the previous release. Whatever happens below, the platform and
	// with it the release go, and the cluster is as this test found it.
	write(prev)
	defer func() {
		e.destroyAndWait(t, nil, []string{upgradeNS}, dir)
		eventually(t, "the supervisor back to waiting for a release", 2*time.Minute, func() error {
			s := readSupervisor(t, e)
			if s.Controller != nil {
				return fmt.Errorf("a controller (pid %d) still runs with no release installed", s.Controller.PID)
			}
			return nil
		})
	}()
	up("create at " + prev)
	waitRelease(t, e, prev, prevBin)
	waitPoolFull(t, e, 0, "the pool warm at "+prev)

	// A session takes a warm sandbox: it must outlive both moves untouched.
	claims := e.dyn.Resource(claimsGVR).Namespace(upgradeNS)
	claim := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": claimsGVR.GroupVersion().String(), "kind": "SandboxClaim",
		"metadata": map[string]any{"name": "session-upgrade", "namespace": upgradeNS},
		"spec":     map[string]any{"warmPoolRef": map[string]any{"name": upgradePool}, "lifecycle": sessionLifecycle(time.Now().Add(time.Hour))},
	}}
	if _, err := claims.Create(ctxT(t, 10*time.Second), claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	defer claims.Delete(ctxTimeout(10*time.Second), "session-upgrade", metav1.DeleteOptions{})
	var bound string
	eventually(t, "the claim takes a warm sandbox", time.Minute, func() error {
		u, err := claims.Get(ctxT(t, 5*time.Second), "session-upgrade", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if bound, _, _ = unstructured.NestedString(u.Object, "status", "sandbox", "name"); bound == "" {
			return fmt.Errorf("not bound yet")
		}
		return nil
	})
	var sess session
	eventually(t, "the claimed sandbox's pod running", time.Minute, func() error {
		var err error
		sess, err = readSession(t, e, bound)
		return err
	})
	waitPoolFull(t, e, 1, "the pool refilled after the claim")

	move := func(from, to, toBin, direction string) {
		t.Helper()
		write(to)
		// preview: the release change summary, nothing refused (both ways are safe for these releases).
		r := e.runPaddock(t, nil, "preview", dir)
		out := r.stdout + r.stderr
		if r.code != 0 {
			t.Fatalf("preview %s -> %s: exit %d\n%s", from, to, r.code, out)
		}
		wantSchema := "+status.observedGeneration"
		if direction == "rollback" {
			wantSchema = "-status.observedGeneration"
		}
		for _, want := range []string{
			fmt.Sprintf("Agent Sandbox release %s -> %s (%s):", from, to, direction),
			upgradeWarm + ": schema v1beta1: " + wantSchema,
			fmt.Sprintf("controller: image %s -> %s", pins.AgentSandboxImageOf(from), pins.AgentSandboxImageOf(to)),
			"webhooks: unchanged",
			"the controller restarts: claims made meanwhile are admitted and wait until it is back",
			"running sandboxes keep running",
			"warm pools are topped up again",
			fmt.Sprintf("going back to %s: safe", from),
		} {
			if !strings.Contains(out, want) {
				t.Errorf("preview %s -> %s lacks %q:\n%s", from, to, want, out)
			}
		}
		if t.Failed() {
			t.FailNow()
		}

		start := time.Now()
		r = up(fmt.Sprintf("%s %s -> %s", direction, from, to))
		if !strings.Contains(r.stdout+r.stderr, fmt.Sprintf("Agent Sandbox release %s -> %s (%s):", from, to, direction)) {
			t.Errorf("up %s -> %s did not print the release change summary:\n%s", from, to, r.stdout)
		}
		waitRelease(t, e, to, toBin)
		restarted := time.Since(start)
		waitPoolFull(t, e, 1, fmt.Sprintf("the pool refilled at %s", to))
		t.Logf("RELEASE %s %s -> %s: up returned after %s; the %s controller ran %s after up began; the pool was full again %s after up began",
			strings.ToUpper(direction), from, to, r.took.Round(100*time.Millisecond), toBin, restarted.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))

		// The session: same claim binding, same sandbox, same pod, still running, no restart.
		u, err := claims.Get(ctxT(t, 5*time.Second), "session-upgrade", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the session's claim is gone after the %s: %v", direction, err)
		}
		if name, _, _ := unstructured.NestedString(u.Object, "status", "sandbox", "name"); name != sess.sandbox {
			t.Errorf("after the %s the claim is bound to %q, was %q", direction, name, sess.sandbox)
		}
		now, err := readSession(t, e, sess.sandbox)
		if err != nil {
			t.Fatalf("after the %s: %v", direction, err)
		}
		if now.sandboxUID != sess.sandboxUID || now.pod != sess.pod || now.podUID != sess.podUID {
			t.Errorf("after the %s the session's sandbox/pod is %s/%s (%s, %s), was %s/%s (%s, %s)", direction,
				now.sandbox, now.pod, now.sandboxUID, now.podUID, sess.sandbox, sess.pod, sess.sandboxUID, sess.podUID)
		}
		if !now.podStarted.Equal(sess.podStarted) {
			t.Errorf("after the %s the session's pod started at %s, was %s", direction, now.podStarted, sess.podStarted)
		}
		for c, n := range sess.containerStart {
			if now.containerStart[c] != n {
				t.Errorf("after the %s container %s of the session's pod restarted (%d -> %d)", direction, c, n, now.containerStart[c])
			}
		}
		if e.nodes != "fake" {
			opts := k8s.NewKubectlOptions("", e.kubeconfig, upgradeNS)
			if out, err := k8s.RunKubectlAndGetOutputE(t, opts, "exec", sess.pod, "--", "/bin/sh", "-c", "echo alive"); err != nil || strings.TrimSpace(out) != "alive" {
				t.Errorf("after the %s the session's pod does not answer: %v\n%s", direction, err, out)
			}
		}

		rep, code := verifyReport(t, e, dir)
		for _, res := range rep.Results {
			if res.Status == verify.Fail {
				t.Errorf("verify at %s: %s %s [%s]: %s", to, res.ID, res.Title, res.Subject, res.Reason)
			}
		}
		if code != 0 && !t.Failed() {
			t.Errorf("verify at %s exited %d with no failing check", to, code)
		}
		if t.Failed() {
			t.FailNow()
		}
	}

	move(prev, cur, agentsandbox.ControllerBinary(cur), "upgrade")
	// The pinned controller is what runs now: it reports the pool's
	// observedGeneration, a status field the previous release does not have.
	eventually(t, "the pool's status.observedGeneration (set only by "+cur+")", time.Minute, func() error {
		u, err := e.dyn.Resource(warmPoolsGVR).Namespace(upgradeNS).Get(ctxT(t, 5*time.Second), upgradePool, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if g, ok, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); !ok || g != u.GetGeneration() {
			return fmt.Errorf("observedGeneration %d (set: %v), generation %d", g, ok, u.GetGeneration())
		}
		return nil
	})

	move(cur, prev, prevBin, "rollback")
}

// supervisorFile is the local supervisor's report, as the test reads it.
type supervisorFile struct {
	Phase      string `json:"phase"`
	Controller *struct {
		PID int `json:"pid"`
	} `json:"controller"`
	LastExit string `json:"lastExit"`
	Release  string `json:"release"`
}

func readSupervisor(t *testing.T, e *env) supervisorFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.home, "local", "supervisor.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s supervisorFile
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("supervisor.json: %v\n%s", err, b)
	}
	return s
}

// waitRelease waits until the controller Deployment carries version and the
// supervisor runs the controller build bin (by the executable of its pid).
func waitRelease(t *testing.T, e *env, version, bin string) {
	t.Helper()
	eventually(t, "Agent Sandbox "+version+" installed and its controller "+bin+" running", 2*time.Minute, func() error {
		dep, err := e.dyn.Resource(deploymentsGVR).Namespace(agentsandbox.Namespace).Get(ctxT(t, 5*time.Second), agentsandbox.ControllerDeployment, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if v := dep.GetLabels()[agentsandbox.VersionLabel]; v != version {
			return fmt.Errorf("the controller Deployment is labelled %s=%q", agentsandbox.VersionLabel, v)
		}
		s := readSupervisor(t, e)
		if s.Controller == nil || s.Phase != "running" {
			return fmt.Errorf("supervisor %s, no controller running (last exit: %s)", s.Phase, s.LastExit)
		}
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", s.Controller.PID))
		if err != nil {
			return err
		}
		if filepath.Base(exe) != bin || s.Release != version {
			return fmt.Errorf("the supervisor runs %s for release %q, want %s for %s", exe, s.Release, bin, version)
		}
		return nil
	})
}

// waitPoolFull waits until the pool holds its replicas of current, ready
// sandboxes besides claimed claimed ones.
func waitPoolFull(t *testing.T, e *env, claimed int32, what string) {
	t.Helper()
	eventually(t, what, 3*time.Minute, func() error {
		all, err := pools.Read(ctxT(t, 20*time.Second), pools.Clients{Dyn: e.dyn, Kube: e.kube}, upgradeNS)
		if err != nil {
			return err
		}
		for _, p := range all {
			if p.Name != upgradePool {
				continue
			}
			if !p.Fresh() || p.Ready != 2 || p.Claimed != claimed {
				return fmt.Errorf("%d/%d ready, %d stale, %d claimed (want %d), problem %q", p.Ready, p.Desired, p.Stale, p.Claimed, claimed, p.Problem)
			}
			return nil
		}
		return fmt.Errorf("no pool %s/%s", upgradeNS, upgradePool)
	})
}

// readSession reads the claimed sandbox and its pod, which must be running.
func readSession(t *testing.T, e *env, sandbox string) (session, error) {
	t.Helper()
	sb, err := e.dyn.Resource(sandboxesGVR).Namespace(upgradeNS).Get(ctxT(t, 5*time.Second), sandbox, metav1.GetOptions{})
	if err != nil {
		return session{}, fmt.Errorf("the claimed sandbox %s: %w", sandbox, err)
	}
	if sb.GetDeletionTimestamp() != nil {
		return session{}, fmt.Errorf("the claimed sandbox %s is being deleted", sandbox)
	}
	pod := sb.GetName()
	if n := sb.GetAnnotations()["agents.x-k8s.io/pod-name"]; n != "" {
		pod = n
	}
	p, err := e.kube.CoreV1().Pods(upgradeNS).Get(ctxT(t, 5*time.Second), pod, metav1.GetOptions{})
	if err != nil {
		return session{}, fmt.Errorf("the claimed sandbox's pod %s: %w", pod, err)
	}
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return session{}, fmt.Errorf("the claimed sandbox's pod %s is %s (deleting: %v)", pod, p.Status.Phase, p.DeletionTimestamp != nil)
	}
	s := session{sandbox: sandbox, sandboxUID: sb.GetUID(), pod: pod, podUID: p.UID, containerStart: map[string]int32{}}
	if p.Status.StartTime != nil {
		s.podStarted = p.Status.StartTime.Time
	}
	for _, c := range p.Status.ContainerStatuses {
		s.containerStart[c.Name] = c.RestartCount
	}
	return s, nil
}
