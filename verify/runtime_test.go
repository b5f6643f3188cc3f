package verify

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/paddock-platform/paddock/model"
)

// paths says which of the probe's paths the fake network lets through.
type paths struct {
	podToPod bool // a pod reaches another pod of its namespace
	resolver bool // the resolver answers
	loopback bool // the target answers on its own loopback
}

// network is what the fake cluster's network does with the probe's traffic.
type network struct {
	paths
	mu           sync.Mutex
	dnsAsked     []string
	podToPodSeen int
}

// Exec plays the probe's commands against the fake network.
func (n *network) Exec(_ context.Context, _, pod, _ string, cmd []string) (string, string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	line := strings.Join(cmd, " ")
	switch {
	case strings.Contains(line, "nc -w 2 127.0.0.1"):
		if n.loopback {
			return probeGreeting + "\n", "", nil
		}
		return "", "nc: can't connect", fmt.Errorf("exit 1")
	case strings.Contains(line, "nc -w 2"):
		n.podToPodSeen++
		if n.podToPod {
			return probeGreeting + "\n", "", nil
		}
		return "", "nc: timed out", fmt.Errorf("exit 1")
	case cmd[0] == "nslookup":
		n.dnsAsked = append(n.dnsAsked, cmd[2])
		if n.resolver {
			return "Server:\t\t" + cmd[2] + "\nAddress:\t" + cmd[2] + ":53\n\nName:\t" + cmd[1] + "\nAddress: 10.96.0.1\n", "", nil
		}
		return ";; connection timed out; no servers could be reached\n", "", fmt.Errorf("exit 1")
	}
	return "", "unexpected command " + line, fmt.Errorf("exit 127")
}

// runningPods makes every created pod run at once on node, with an address.
func runningPods(kube *fake.Clientset, node string) {
	var mu sync.Mutex
	n := 0
	kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		mu.Lock()
		n++
		if p.Name == "" {
			p.Name = fmt.Sprintf("%s%d", p.GenerateName, n)
		}
		p.Status.PodIP = fmt.Sprintf("10.213.0.%d", 10+n)
		mu.Unlock()
		p.Spec.NodeName = node
		p.Status.Phase = corev1.PodRunning
		return false, nil, nil
	})
}

func resolverPod() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "paddock-dns", Namespace: "kube-system", Labels: map[string]string{"k8s-app": "kube-dns"}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.213.0.2"}}
}

func node(name string, kwok bool) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if kwok {
		n.Annotations = map[string]string{"kwok.x-k8s.io/node": "fake"}
	}
	return n
}

func probeVerifier(t *testing.T, net *network, objs ...runtime.Object) (*Verifier, *fake.Clientset) {
	t.Helper()
	old := probeTimeouts
	probeTimeouts.start, probeTimeouts.reach = 2*time.Second, 2*time.Second
	t.Cleanup(func() { probeTimeouts = old })
	v, kube, _ := fakeVerifier(t, localPlatform(t), objs)
	v.opts = Options{ProbeImage: "localhost/paddock/busybox:v1", DNSProbeName: DefaultDNSProbeName}
	v.exec = net
	return v, kube
}

func TestV10ProvesEnforcementWithTraffic(t *testing.T) {
	cases := []struct {
		name   string
		paths  paths
		nodes  []runtime.Object
		noDNS  bool
		status Status
		reason string
	}{
		{"enforced", paths{resolver: true, loopback: true}, nil, false, Pass, "refused by another pod of the namespace 3 times in a row"},
		{"policy stored, not enforced", paths{podToPod: true, resolver: true, loopback: true}, nil, false, Fail, "default-deny policy is not enforced"},
		{"DNS hole closed too", paths{loopback: true}, nil, false, Fail, "did not answer"},
		{"target not listening", paths{resolver: true}, nil, false, Fail, "does not answer on its own loopback"},
		{"no resolver to reach", paths{resolver: true, loopback: true}, nil, true, NotVerifiable, "no cluster resolver pod"},
		{"kwok node", paths{resolver: true, loopback: true}, []runtime.Object{node("kwok-0", true)}, false, NotVerifiable, "kwok node"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			objs := append([]runtime.Object{}, c.nodes...)
			if !c.noDNS {
				objs = append(objs, resolverPod())
			}
			nodeName := "real-0"
			if len(c.nodes) > 0 {
				nodeName = "kwok-0"
			} else {
				objs = append(objs, node("real-0", false))
			}
			net := &network{paths: c.paths}
			v, kube := probeVerifier(t, net, objs...)
			runningPods(kube, nodeName)
			rs := only(t, v, "V10")
			wantStatus(t, rs, c.status, c.reason)
			left, _ := kube.CoreV1().Pods("agents-team-a").List(context.Background(), metav1.ListOptions{LabelSelector: probeLabel})
			if len(left.Items) != 0 {
				t.Errorf("%d probe pods left behind", len(left.Items))
			}
			if c.status == Pass && (len(net.dnsAsked) == 0 || net.dnsAsked[0] != "10.213.0.2") {
				t.Errorf("the resolver asked was %v, want the kube-dns pod 10.213.0.2", net.dnsAsked)
			}
			if c.status == Pass && net.podToPodSeen < denialStreak {
				t.Errorf("passed after %d refusals, want %d in a row", net.podToPodSeen, denialStreak)
			}
		})
	}
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
== kernel
[   0.000000] Starting gVisor...
[   0.412345] Waiting for children...
`

func TestV12JudgesWhatTheSandboxShows(t *testing.T) {
	tpl := model.Template{Name: "agent", RunAsUser: 10001, RuntimeClass: "gvisor"}
	facts, err := parseSandboxFacts(hardenedOutput)
	if err != nil {
		t.Fatal(err)
	}
	problems, held, unverified := judgeSandbox(tpl, "runsc", facts)
	if len(problems) != 0 || len(unverified) != 0 || len(held) != 5 {
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
		problems, _, _ := judgeSandbox(tpl, "runsc", f)
		if !strings.Contains(strings.Join(problems, "; "), b.want) {
			t.Errorf("%s: problems %v, want %q", b.name, problems, b.want)
		}
	}
	// A waived control is expected loosened, not reported.
	f, _ := parseSandboxFacts(strings.Replace(hardenedOutput, "sh: can't create /var/tmp/.paddock-probe: Read-only file system", "writable", 1))
	if problems, _, _ := judgeSandbox(model.Template{RunAsUser: 10001, WritableRootFilesystem: true}, "runsc", f); len(problems) != 0 {
		t.Errorf("a waived writable root was reported: %v", problems)
	}
	// No dmesg in the image: gVisor is not shown, and the check says so.
	f, _ = parseSandboxFacts(strings.Replace(hardenedOutput, "[   0.000000] Starting gVisor...\n[   0.412345] Waiting for children...", "sh: dmesg: not found", 1))
	if _, _, unverified := judgeSandbox(tpl, "runsc", f); len(unverified) != 1 || !strings.Contains(unverified[0], "gVisor") {
		t.Errorf("no dmesg: unverified %v, want gVisor", unverified)
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
	v, _, _ := fakeVerifier(t, localPlatform(t), []runtime.Object{pod, node("real-0", false)}, sb)
	v.opts.NoProbes, v.exec = false, ex
	wantStatus(t, only(t, v, "V12"), Pass, "gVisor kernel")
	if ex.pod != "agent-abc12" || ex.container != "agent" {
		t.Errorf("exec went to %s/%s, want the pool's sandbox pod agent-abc12/agent", ex.pod, ex.container)
	}
	ex.out = strings.Replace(hardenedOutput, "absent", "mounted", 1)
	wantStatus(t, only(t, v, "V12"), Fail, "token is mounted")

	// On a kwok node there is nothing to look into.
	pod.Spec.NodeName = "kwok-0"
	v, _, _ = fakeVerifier(t, localPlatform(t), []runtime.Object{pod, node("kwok-0", true)}, sb)
	v.opts.NoProbes, v.exec = false, ex
	wantStatus(t, only(t, v, "V12"), NotVerifiable, "kwok node")
}

type scriptedExec struct {
	out            string
	pod, container string
}

func (s *scriptedExec) Exec(_ context.Context, _, pod, container string, _ []string) (string, string, error) {
	s.pod, s.container = pod, container
	return s.out, "", nil
}
