//go:build e2e

package e2e

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/k8s"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/paddock-platform/paddock/internal/drift"
)

// swapStack is the stack TestRuntimeClassSwapRepaired provisions examples/local into.
const swapStack = "swap-e2e"

// TestRuntimeClassSwapRepaired swaps the sandbox runtime out from under a
// running platform, as a person with cluster-admin could: RuntimeClass
// gvisor deleted and recreated with handler runc, and a warm sandbox
// replaced while the swap stands, whose pod then runs on the host's kernel
// (shown by its `uname -r`, which under gVisor is not the host's). drift must
// report the handler change and the pod; up must put the class back and
// recreate every warm sandbox started under the swapped class, so that every
// warm pod afterwards runs under gVisor again, and drift is then clean.
func TestRuntimeClassSwapRepaired(t *testing.T) {
	e := live
	r := e.runPaddock(t, nil, "up", example, "--stack", swapStack)
	if r.code != 0 {
		t.Fatalf("paddock up: exit %d\n%s\n%s", r.code, r.stdout, tail(r.stderr, 30))
	}
	defer e.destroyAndWait(t, nil, []string{namespace}, example, "--stack", swapStack)
	eventually(t, "warm pool ready", 120*time.Second, func() error { return poolReady(e, replicas) })

	hostOut, err := exec.Command("uname", "-r").Output()
	if err != nil {
		t.Fatal(err)
	}
	hostKernel := strings.TrimSpace(string(hostOut))
	// A sandbox the pool just reported ready may not have its container
	// running yet ("container not found" from the kubelet, seen once):
	// exec is retried for a minute.
	kernelOf := func(pod string) string {
		t.Helper()
		var out string
		eventually(t, "uname in "+pod, time.Minute, func() error {
			var err error
			out, err = k8s.RunKubectlAndGetOutputE(t, e.kubectl, "exec", "-n", namespace, pod, "--", "uname", "-r")
			return err
		})
		return strings.TrimSpace(out)
	}
	before := poolSandboxes(t, e)
	for sb := range before {
		if k := kernelOf(sb); k == hostKernel {
			t.Fatalf("warm pod %s reports the host's kernel %s before any swap: gVisor is not in effect, so this test would prove nothing", sb, k)
		}
	}

	// The swap.
	ctx := ctxT(t, 2*time.Minute)
	rc, err := e.kube.NodeV1().RuntimeClasses().Get(ctx, "gvisor", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sandboxHandler := rc.Handler
	if err := e.kube.NodeV1().RuntimeClasses().Delete(ctx, "gvisor", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "runtime class gvisor deleted", 30*time.Second, func() error {
		_, err := e.kube.NodeV1().RuntimeClasses().Get(ctxTimeout(5*time.Second), "gvisor", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
	swapped := rc.DeepCopy()
	swapped.ObjectMeta = metav1.ObjectMeta{Name: rc.Name, Labels: rc.Labels, Annotations: rc.Annotations}
	swapped.Handler = "runc"
	if _, err := e.kube.NodeV1().RuntimeClasses().Create(ctx, swapped, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var victim string
	for sb := range before {
		victim = sb
		break
	}
	if _, err := k8s.RunKubectlAndGetOutputE(t, e.kubectl, "delete", "sandbox", "-n", namespace, victim, "--wait=true"); err != nil {
		t.Fatal(err)
	}
	var started []string
	eventually(t, "a sandbox started under the swapped class", 120*time.Second, func() error {
		started = started[:0]
		for sb := range poolSandboxes(t, e) {
			if !before[sb] {
				started = append(started, sb)
			}
		}
		if len(started) == 0 {
			return fmt.Errorf("the pool has not replaced %s yet", victim)
		}
		return poolReady(e, replicas)
	})
	for _, sb := range started {
		if k := kernelOf(sb); k != hostKernel {
			t.Fatalf("pod %s, started under handler runc, reports kernel %s, not the host's %s: the swap did not take, so this test would prove nothing", sb, k, hostKernel)
		}
	}
	t.Logf("swap in effect: %v run on the host kernel %s", started, hostKernel)

	// drift names the handler change and the pod that runs outside the sandbox.
	rep, _ := e.driftReport(t, 2, nil, example, "--stack", swapStack)
	res := findResource(rep, "RuntimeClass", "gvisor")
	if res == nil || findField(res, "handler") == nil {
		t.Errorf("drift does not report the handler of RuntimeClass gvisor: %+v", rep.Resources)
	} else {
		f := findField(res, "handler")
		t.Logf("drift: RuntimeClass gvisor: %s: %s → %s (%s)", f.Path, drift.Value(f.Declared), drift.Value(f.Live), res.Change)
	}
	for _, sb := range started {
		found := false
		for _, u := range rep.Unmanaged {
			if u.Rule == drift.RuleRuntimeMissing && u.Kind == "Pod" && u.Name == sb {
				found = true
			}
		}
		if !found {
			t.Errorf("drift does not report pod %s, started under the swapped class: %+v", sb, rep.Unmanaged)
		}
	}

	// up puts the class back and recreates every warm sandbox started under
	// the swapped class (here: all of them, since the class is newer than any).
	up := e.runPaddock(t, nil, "up", example, "--stack", swapStack)
	if up.code != 0 {
		t.Fatalf("paddock up: exit %d\n%s\n%s", up.code, up.stdout, tail(up.stderr, 30))
	}
	t.Logf("paddock up after the swap:\n%s", up.stdout)
	if !regexp.MustCompile(`(?m)^paddock up: (repaired|replaced) RuntimeClass gvisor`).MatchString(up.stdout) {
		t.Errorf("up does not say it put RuntimeClass gvisor back:\n%s", up.stdout)
	}
	for _, sb := range started {
		if !strings.Contains(up.stdout, "paddock up: deleted sandbox "+sb+" of warm pool "+namespace+"/"+poolName+": its pod started before runtime class \"gvisor\" was last created") {
			t.Errorf("up does not say it deleted %s, started under the swapped class:\n%s", sb, up.stdout)
		}
	}
	rc, err = e.kube.NodeV1().RuntimeClasses().Get(ctx, "gvisor", metav1.GetOptions{})
	if err != nil || rc.Handler != sandboxHandler {
		t.Fatalf("after up: runtime class gvisor %v, handler %q; want %q", err, rc.Handler, sandboxHandler)
	}
	eventually(t, "warm pool ready after up", 180*time.Second, func() error { return poolReady(e, replicas) })
	after := poolSandboxes(t, e)
	for sb := range after {
		if before[sb] || strings.Contains(strings.Join(started, " "), sb) {
			t.Errorf("warm sandbox %s, older than the restored class, is still in the pool", sb)
			continue
		}
		if k := kernelOf(sb); k == hostKernel {
			t.Errorf("warm pod %s runs on the host kernel %s after up", sb, k)
		}
	}
	if rep, _ := e.driftReport(t, 0, nil, example, "--stack", swapStack); rep.Drifted() {
		t.Errorf("drift after up: %+v %+v", rep.Resources, rep.Unmanaged)
	}
}
