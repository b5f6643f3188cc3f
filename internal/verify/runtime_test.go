package verify

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/paddock-platform/paddock/internal/model"
)

func node(name string, kwok bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if kwok {
		n.Annotations = map[string]string{"kwok.x-k8s.io/node": "fake"}
	}
	return n
}

func TestV10ProbePodsPassPodSecurityRestricted(t *testing.T) {
	p := probePod("agents-team-a", "client", "img", "gvisor", []string{"sleep", "1"})
	sc, c := p.Spec.SecurityContext, p.Spec.Containers[0].SecurityContext
	if !*sc.RunAsNonRoot || *sc.RunAsUser == 0 || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault ||
		*c.AllowPrivilegeEscalation || len(c.Capabilities.Drop) != 1 || c.Capabilities.Drop[0] != "ALL" ||
		*p.Spec.AutomountServiceAccountToken || *p.Spec.RuntimeClassName != "gvisor" {
		t.Fatalf("the probe pod is not hardened like a sandbox: %+v", p.Spec)
	}
}

// What busybox under gVisor prints for a hardened sandbox (trimmed).
const hardenedOutput = `== status
Name:	sh
State:	R (running)
Uid:	10001	10001	10001	10001
Gid:	10001	10001	10001	10001
CapInh:	0000000000000000
CapPrm:	0000000000000000
CapEff:	0000000000000000
CapBnd:	0000000000000000
== rootfs
sh: can't create /var/tmp/.paddock-probe: Read-only file system
== token
absent
== uname
4.4.0
== version
Linux version 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016
== kernel
[   0.000000] Starting gVisor...
[   0.412345] Waiting for children...
`

// nodeKernel is the kernel release of the fake sandboxes' node.
const nodeKernel = "6.18.0-paddock"

func TestV12JudgesWhatTheSandboxShows(t *testing.T) {
	tpl := model.Template{Name: "agent", RunAsUser: 10001, RuntimeClass: "gvisor"}
	facts, err := parseSandboxFacts(hardenedOutput)
	if err != nil {
		t.Fatal(err)
	}
	if facts.Release != "4.4.0" {
		t.Errorf("kernel release read as %q, want 4.4.0", facts.Release)
	}
	problems, held, unverified := judgeSandbox(tpl, "runsc", nodeKernel, facts)
	if len(problems) != 0 || len(unverified) != 0 || len(held) != 6 {
		t.Fatalf("hardened sandbox: problems %v, unverified %v, held %v", problems, unverified, held)
	}
	broken := []struct {
		name, from, to, want string
	}{
		{"root", "Uid:\t10001\t10001", "Uid:\t0\t0", "runs as root"},
		{"other UID", "Uid:\t10001\t10001", "Uid:\t1000\t1000", "runs as UID 1000"},
		{"writable root", "sh: can't create /var/tmp/.paddock-probe: Read-only file system", "writable", "root filesystem takes a write"},
		{"token", "== token\nabsent", "== token\nmounted", "token is mounted"},
		{"capability", "CapEff:\t0000000000000000", "CapEff:\t0000000000000400", "CapEff is 0000000000000400"},
		{"runc kernel", "[   0.000000] Starting gVisor...", "[    0.000000] Linux version 6.1.0", "does not show gVisor"},
		{"host kernel", "== uname\n4.4.0", "== uname\n" + nodeKernel, "sees the node's own kernel " + nodeKernel + ": it shares the host kernel"},
	}
	for _, b := range broken {
		out := strings.Replace(hardenedOutput, b.from, b.to, 1)
		if out == hardenedOutput {
			t.Fatalf("%s: the case does not change the output", b.name)
		}
		f, err := parseSandboxFacts(out)
		if err != nil {
			t.Fatal(err)
		}
		problems, _, _ := judgeSandbox(tpl, "runsc", nodeKernel, f)
		if !strings.Contains(strings.Join(problems, "; "), b.want) {
			t.Errorf("%s: problems %v, want %q", b.name, problems, b.want)
		}
	}
	// A waived control is expected loosened, not reported.
	f, _ := parseSandboxFacts(strings.Replace(hardenedOutput, "sh: can't create /var/tmp/.paddock-probe: Read-only file system", "writable", 1))
	if problems, _, _ := judgeSandbox(model.Template{RunAsUser: 10001, WritableRootFilesystem: true}, "runsc", nodeKernel, f); len(problems) != 0 {
		t.Errorf("a waived writable root was reported: %v", problems)
	}
	// No dmesg in the image: the kernel release alone shows the sandbox's
	// own kernel; without either, the check says what it could not show.
	noDmesg := strings.Replace(hardenedOutput, "[   0.000000] Starting gVisor...\n[   0.412345] Waiting for children...", "sh: dmesg: not found", 1)
	f, _ = parseSandboxFacts(noDmesg)
	if problems, held, unverified := judgeSandbox(tpl, "runsc", nodeKernel, f); len(problems)+len(unverified) != 0 || !slices.Contains(held, "own kernel 4.4.0 (the node runs "+nodeKernel+")") {
		t.Errorf("no dmesg, own kernel: problems %v, unverified %v, held %v", problems, unverified, held)
	}
	f, _ = parseSandboxFacts(strings.Replace(strings.Replace(noDmesg, "== uname\n4.4.0", "== uname\nsh: uname: not found", 1), "Linux version 4.4.0", "", 1))
	if _, _, unverified := judgeSandbox(tpl, "runsc", nodeKernel, f); len(unverified) != 2 || !strings.Contains(unverified[0], "its own kernel") || !strings.Contains(unverified[1], "gVisor") {
		t.Errorf("no dmesg, no uname: unverified %v, want its own kernel and gVisor", unverified)
	}
	// The node reports no kernel: nothing to compare with, and it says so.
	if _, _, unverified := judgeSandbox(tpl, "runsc", "", facts); len(unverified) != 1 || !strings.Contains(unverified[0], "no kernel version") {
		t.Errorf("node without a kernel version: unverified %v", unverified)
	}
	// Kata: a VM's kernel is the evidence; the node's kernel inside fails it.
	for _, handler := range []string{"kata-qemu", "kata-clh"} {
		kata := strings.Replace(strings.Replace(noDmesg, "== uname\n4.4.0", "== uname\n6.12.28", 1), "Linux version 4.4.0", "Linux version 6.12.28", 1)
		f, _ = parseSandboxFacts(kata)
		if problems, held, _ := judgeSandbox(tpl, handler, nodeKernel, f); len(problems) != 0 || !slices.Contains(held, "own kernel 6.12.28 (the node runs "+nodeKernel+")") {
			t.Errorf("%s with its own kernel: problems %v, held %v", handler, problems, held)
		}
		f, _ = parseSandboxFacts(strings.ReplaceAll(kata, "6.12.28", nodeKernel))
		if problems, _, _ := judgeSandbox(tpl, handler, nodeKernel, f); !strings.Contains(strings.Join(problems, "; "), "shares the host kernel") {
			t.Errorf("%s on the node's kernel: problems %v, want the host kernel shared", handler, problems)
		}
	}
	// No sandbox runtime (runc): the node's kernel is expected, not judged.
	f, _ = parseSandboxFacts(strings.ReplaceAll(noDmesg, "4.4.0", nodeKernel))
	if problems, _, unverified := judgeSandbox(tpl, "runc", nodeKernel, f); len(problems)+len(unverified) != 0 {
		t.Errorf("runc: problems %v, unverified %v", problems, unverified)
	}
	if _, err := parseSandboxFacts("sh: cat: not found\n"); err == nil {
		t.Error("output without a status section was read as facts")
	}
}

func TestV12ReadsAReadySandboxOfEachPool(t *testing.T) {
	ns := "agents-team-a"
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "agent-abc12", Namespace: ns},
		Spec:   corev1.PodSpec{NodeName: "real-0", Containers: []corev1.Container{{Name: "agent"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	sb := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": sandboxesGVR.GroupVersion().String(), "kind": "Sandbox",
		"metadata": map[string]any{"name": "agent-abc12", "namespace": ns,
			"ownerReferences": []any{map[string]any{"apiVersion": warmPoolsGVR.GroupVersion().String(), "kind": "SandboxWarmPool", "name": "agent", "uid": "u", "controller": true}}},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}},
	}}
	ex := &scriptedExec{out: hardenedOutput}
	real := node("real-0", false)
	real.Status.NodeInfo.KernelVersion = nodeKernel
	v, _, _ := fakeVerifier(t, localPlatform(t), []runtime.Object{pod, real}, sb)
	v.opts.NoProbes, v.exec = false, ex
	wantStatus(t, only(t, v, "V12"), Pass, "own kernel 4.4.0 (the node runs "+nodeKernel+")", "gVisor boot log")
	if ex.pod != "agent-abc12" || ex.container != "agent" {
		t.Errorf("exec went to %s/%s, want the pool's sandbox pod agent-abc12/agent", ex.pod, ex.container)
	}
	ex.out = strings.Replace(hardenedOutput, "absent", "mounted", 1)
	wantStatus(t, only(t, v, "V12"), Fail, "token is mounted")
	// The sandbox sees the node's kernel: the runtime class does not sandbox it.
	ex.out = strings.ReplaceAll(hardenedOutput, "4.4.0", nodeKernel)
	wantStatus(t, only(t, v, "V12"), Fail, "shares the host kernel")

	// On a kwok node there is nothing to look into.
	pod.Spec.NodeName = "kwok-0"
	v, _, _ = fakeVerifier(t, localPlatform(t), []runtime.Object{pod, node("kwok-0", true)}, sb)
	v.opts.NoProbes, v.exec = false, ex
	wantStatus(t, only(t, v, "V12"), NotVerifiable, "kwok node")
}

type scriptedExec struct {
	out            string
	pod, container string
	// byPod answers for the pods it names, out for the others.
	byPod map[string]string
	seen  []string
}

func (s *scriptedExec) Exec(_ context.Context, _, pod, container string, _ []string) (string, string, error) {
	s.pod, s.container = pod, container
	s.seen = append(s.seen, pod)
	if out, ok := s.byPod[pod]; ok {
		return out, "", nil
	}
	return s.out, "", nil
}

// V12 looks into every ready sandbox of a pool, not one: a sandbox started
// while the runtime class was swapped to runc sits beside hardened ones, and
// V12 fails naming it.
func TestV12ReadsEveryReadySandbox(t *testing.T) {
	ns := "agents-team-a"
	var kube []runtime.Object
	var dyn []*unstructured.Unstructured
	for _, name := range []string{"agent-aaaaa", "agent-bbbbb", "agent-ccccc"} {
		kube = append(kube, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec:   corev1.PodSpec{NodeName: "real-0", Containers: []corev1.Container{{Name: "agent"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}})
		dyn = append(dyn, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": sandboxesGVR.GroupVersion().String(), "kind": "Sandbox",
			"metadata": map[string]any{"name": name, "namespace": ns,
				"ownerReferences": []any{map[string]any{"apiVersion": warmPoolsGVR.GroupVersion().String(), "kind": "SandboxWarmPool", "name": "agent", "uid": "u", "controller": true}}},
			"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}},
		}})
	}
	real := node("real-0", false)
	real.Status.NodeInfo.KernelVersion = nodeKernel
	ex := &scriptedExec{out: hardenedOutput, byPod: map[string]string{"agent-bbbbb": strings.ReplaceAll(hardenedOutput, "4.4.0", nodeKernel)}}
	v, _, _ := fakeVerifier(t, localPlatform(t), append(kube, real), dyn...)
	v.opts.NoProbes, v.exec = false, ex
	res := only(t, v, "V12")
	wantStatus(t, res, Fail, "sandbox agent-bbbbb", "shares the host kernel")
	if got := strings.Join(ex.seen, ","); got != "agent-aaaaa,agent-bbbbb,agent-ccccc" {
		t.Errorf("looked into %s, want every ready sandbox", got)
	}
	delete(ex.byPod, "agent-bbbbb")
	wantStatus(t, only(t, v, "V12"), Pass, "3 ready sandbox(es)", "sandbox agent-aaaaa", "sandbox agent-ccccc")
}
