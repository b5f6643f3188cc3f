package localcluster_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/paddock-platform/paddock/internal/localcluster"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/paths"
)

// TestLiveRealNode runs the real node (its dataplane the Cilium agent): a
// RuntimeClass gvisor pod runs under gVisor (its kernel says so), a default-deny
// NetworkPolicy blocks pod-to-pod traffic and an allow opens it again, the
// cluster resolver answers at the kube-dns Service's address the pod's
// resolv.conf names only when Paddock's DNS egress rule allows it (and again once
// its pod was recreated elsewhere), and Down leaves nothing on the machine.
// TestLiveCiliumDataplane covers the agent's own traces and named egress.
// Traffic goes only between pods this test created and the resolver pod.
// Gated like TestLiveLocalCluster; on a machine that cannot run a real node it
// fails, saying why (CI's machines must run it).
func TestLiveRealNode(t *testing.T) {
	if os.Getenv("PADDOCK_LIVE") != "1" {
		t.Skip("live local stack not requested; set PADDOCK_LIVE=1 (make e2e does)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	kubectl, err := paths.Tool("kubectl")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "local")
	name := fmt.Sprintf("real-%d", os.Getpid())
	before := hostSnapshot(name, dir)
	c := localcluster.New(localcluster.Options{
		Name: name, Dir: dir, Out: &lineLogger{t: t},
		SupervisorCommand: []string{exe, superviseArg},
		Nodes:             localcluster.NodesReal,
	})
	downed := false
	t.Cleanup(func() {
		if !downed {
			if err := c.Down(context.Background()); err != nil {
				t.Errorf("cleanup Down: %v", err)
			}
		}
	})

	start := time.Now()
	info, err := c.Up(ctx)
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	t.Logf("TIMING Up with a real node (cold, tools built): %s", time.Since(start))
	cs, _ := clients(t, info.Kubeconfig)
	assertControlPlaneOnLoopback(t, dir)

	node, err := cs.CoreV1().Nodes().Get(ctx, name+"-gvisor-0", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	if node.Labels["sandbox.gke.io/runtime"] != "gvisor" || node.Annotations["kwok.x-k8s.io/node"] != "" || !isReady(node) {
		t.Errorf("want a Ready kubelet node with the GKE Sandbox label, got labels %v annotations %v", node.Labels, node.Annotations)
	}
	if len(node.Spec.Taints) != 1 || node.Spec.Taints[0].Key != "sandbox.gke.io/runtime" || node.Spec.Taints[0].Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("node taints %v, want the GKE Sandbox taint only", node.Spec.Taints)
	}

	// A RuntimeClass like GKE Sandbox's, and two pods under it.
	createGVisorRuntimeClass(ctx, t, cs)
	ns := "probe"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSA(ctx, t, cs, ns)
	server := probePod("server", "server", []string{"sh", "-c", "while :; do echo hello | nc -l -p 8080; done"})
	client := probePod("client", "client", []string{"sleep", "3600"})
	podStart := time.Now()
	for _, p := range []*corev1.Pod{server, client} {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	serverIP := waitRunning(ctx, t, cs, ns, "server")
	t.Logf("TIMING gVisor pod Running: %s", time.Since(podStart))
	waitRunning(ctx, t, cs, ns, "client")

	exec := func(pod string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", info.Kubeconfig, "-n", ns, "exec", pod, "--"}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := exec("server", "dmesg"); err != nil || !strings.Contains(out, "gVisor") {
		t.Errorf("dmesg in the pod does not show gVisor (err %v):\n%s", err, out)
	}
	if out, err := exec("server", "uname", "-a"); err != nil {
		t.Errorf("uname: %v %s", err, out)
	} else {
		t.Logf("uname -a in the pod: %s", strings.TrimSpace(out))
	}

	// What a hardened sandbox shows from inside, under gVisor: the pod spec of a
	// Paddock template (non-root, read-only root, no capabilities, no token).
	hardened := probePod("hardened", "hardened", []string{"sleep", "3600"})
	uid, yes, no := int64(10001), true, false
	hardened.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &uid, RunAsNonRoot: &yes,
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	hardened.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: &yes, AllowPrivilegeEscalation: &no,
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, hardened, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRunning(ctx, t, cs, ns, "hardened")
	for _, check := range []struct {
		what string
		cmd  []string
		ok   func(out string, err error) bool
	}{
		{"runs under gVisor", []string{"dmesg"}, func(o string, err error) bool { return err == nil && strings.Contains(o, "gVisor") }},
		{"runs as UID 10001", []string{"id", "-u"}, func(o string, err error) bool { return err == nil && strings.TrimSpace(o) == "10001" }},
		// gVisor mounts a tmpfs on /tmp when the spec has none: probe /var/tmp.
		{"root filesystem is read-only", []string{"touch", "/var/tmp/probe"}, func(o string, err error) bool { return err != nil && strings.Contains(o, "Read-only") }},
		{"no capabilities", []string{"grep", "CapEff", "/proc/self/status"}, func(o string, err error) bool { return err == nil && strings.Contains(o, "0000000000000000") }},
		{"no service account token", []string{"ls", "/var/run/secrets/kubernetes.io/serviceaccount"}, func(o string, err error) bool { return err != nil }},
	} {
		out, err := exec("hardened", check.cmd...)
		if !check.ok(out, err) {
			t.Errorf("hardened sandbox: %s: %v (err %v): %s", check.what, check.cmd, err, strings.TrimSpace(out))
		} else {
			t.Logf("hardened sandbox: %s", check.what)
		}
	}

	// Pod-to-pod: open, then denied by a default-deny policy, then allowed.
	reach := func() bool {
		out, err := exec("client", "sh", "-c", "nc -w 2 "+serverIP+" 8080 </dev/null")
		return err == nil && strings.Contains(out, "hello")
	}
	expectOf := func(probe func() bool, want bool, what string) { t.Helper(); expectProbe(t, probe, want, what) }
	expect := func(want bool, what string) { t.Helper(); expectOf(reach, want, what+": client reaches server") }
	expect(true, "no policy")
	deny := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "default-deny"},
		Spec:       networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}},
	}
	if _, err := cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, deny, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	policyStart := time.Now()
	expect(false, "default deny")
	t.Logf("TIMING default deny enforced: %s", time.Since(policyStart))

	// The cluster resolver, at the address the kubelet wrote into the pod.
	resolv, err := exec("client", "cat", "/etc/resolv.conf")
	if err != nil || !strings.Contains(resolv, "nameserver "+localcluster.DNSServiceIP+"\n") ||
		!strings.Contains(resolv, "search "+ns+".svc.cluster.local svc.cluster.local cluster.local") {
		t.Errorf("the pod's resolv.conf does not name the cluster resolver (err %v):\n%s", err, resolv)
	}
	resolves := func() bool {
		out, err := exec("client", "nslookup", "-timeout=2", localcluster.DNSProbeName)
		return err == nil && strings.Contains(out, localcluster.DNSProbeAddress)
	}
	expectOf(resolves, false, "default deny: client resolves "+localcluster.DNSProbeName)
	dnsOnly := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "allow-dns"},
		Spec: networkingv1.NetworkPolicySpec{
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress:      []networkingv1.NetworkPolicyEgressRule{manifests.DNSEgressRule()},
		},
	}
	if _, err := cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, dnsOnly, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectOf(resolves, true, "Paddock's DNS egress rule: client resolves "+localcluster.DNSProbeName)
	expect(false, "DNS allowed, default deny for the rest")
	if svc, err := cs.CoreV1().Services(localcluster.DNSNamespace).Get(ctx, localcluster.DNSServiceName, metav1.GetOptions{}); err != nil || svc.Spec.ClusterIP != localcluster.DNSServiceIP {
		t.Errorf("Service %s/%s: %v (err %v), want clusterIP %s", localcluster.DNSNamespace, localcluster.DNSServiceName, svc, err, localcluster.DNSServiceIP)
	}
	// The resolver's pod goes; the supervisor brings it back, the kube-dns
	// Service follows it to its new address, and the pod keeps resolving with
	// the resolv.conf it has.
	old, err := cs.CoreV1().Pods(localcluster.DNSNamespace).Get(ctx, localcluster.DNSPodName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods(localcluster.DNSNamespace).Delete(ctx, localcluster.DNSPodName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	recreated := time.Now()
	for {
		p, err := cs.CoreV1().Pods(localcluster.DNSNamespace).Get(ctx, localcluster.DNSPodName, metav1.GetOptions{})
		if err == nil && p.UID != old.UID && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			t.Logf("resolver pod recreated: %s -> %s", old.Status.PodIP, p.Status.PodIP)
			break
		}
		if time.Since(recreated) > 2*time.Minute {
			t.Fatalf("the resolver pod was not recreated within 2m (last: %v)", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	expectOf(resolves, true, "resolver pod recreated: client resolves "+localcluster.DNSProbeName)
	t.Logf("TIMING resolution back after the resolver pod was deleted: %s", time.Since(recreated))
	port := intstr.FromInt32(8080)
	tcp := corev1.ProtocolTCP
	allow := []*networkingv1.NetworkPolicy{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "server-from-client"},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"role": "server"}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
				Ingress: []networkingv1.NetworkPolicyIngressRule{{
					From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}}}},
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
				}},
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "client-to-server"},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
				Egress: []networkingv1.NetworkPolicyEgressRule{{
					To:    []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "server"}}}},
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
				}},
			},
		},
	}
	for _, np := range allow {
		if _, err := cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, np, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	expect(true, "allow client -> server:8080")

	// Memory of the node's processes.
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, comp := range st.Components {
		switch comp.Name {
		case "containerd", "kubelet", "cilium-agent", "kube-apiserver", "etcd":
			if comp.State != localcluster.Running {
				t.Errorf("%s is %s (%s)", comp.Name, comp.State, comp.Detail)
			}
			t.Logf("MEMORY %s: %s", comp.Name, rss(comp.PID))
		}
	}

	t.Logf("MEMORY gVisor pods (runsc sandboxes and gofers, three pods): %d kB", runscRSS(dir))

	// Down leaves nothing behind.
	if err := c.Down(ctx); err != nil {
		t.Fatalf("Down: %v", err)
	}
	downed = true
	after := hostSnapshot(name, dir)
	if after.cgroup || len(diff(after.bridges, before.bridges)) > 0 || after.mounts != 0 || after.procs != 0 {
		t.Errorf("Down left: cgroup=%v bridges=%v mounts under %s=%d node processes=%d", after.cgroup, diff(after.bridges, before.bridges), dir, after.mounts, after.procs)
	}
	if after.ipForward != before.ipForward || after.bridgeNF != before.bridgeNF {
		t.Errorf("sysctls not restored: ip_forward %s -> %s, bridge-nf-call-iptables %s -> %s", before.ipForward, after.ipForward, before.bridgeNF, after.bridgeNF)
	}
	// iptables-nft creates a table's built-in chains (empty, policy ACCEPT) the first
	// time anything uses the table; those stay. No other chain and no rule may.
	if extra := diff(after.chains, before.chains); len(extra) > 0 {
		t.Errorf("Down left iptables chains %v", extra)
	}
	if extra := diff(after.rules, before.rules); len(extra) > 0 {
		t.Errorf("Down left iptables rules %v", extra)
	}
	if left, _ := filepath.Glob("/var/lib/cni/results/*"); len(left) > len(before.cniResults) {
		t.Errorf("Down left libcni cache files: %v (before: %v)", left, before.cniResults)
	}
	if extra := diff(after.ipsets, before.ipsets); len(extra) > 0 {
		t.Errorf("Down left ipsets %v", extra)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Down left %s", dir)
	}
	for _, p := range []string{"/run/containerd", "/var/lib/cni", "/var/log/containers"} {
		if _, err := os.Stat(p); err == nil && !before.existed[p] {
			t.Errorf("Down left %s, which did not exist before Up", p)
		}
	}
}

// createGVisorRuntimeClass creates a RuntimeClass like GKE Sandbox's.
func createGVisorRuntimeClass(ctx context.Context, t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	rc := &nodev1.RuntimeClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gvisor"},
		Handler:    "gvisor",
		Scheduling: &nodev1.Scheduling{
			NodeSelector: map[string]string{"sandbox.gke.io/runtime": "gvisor"},
			Tolerations:  []corev1.Toleration{{Key: "sandbox.gke.io/runtime", Operator: corev1.TolerationOpEqual, Value: "gvisor", Effect: corev1.TaintEffectNoSchedule}},
		},
	}
	if _, err := cs.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// expectProbe waits up to 45 s for probe to say want. A refusal counts only
// when three attempts in a row fail (one could fail for another reason); a
// success counts at once.
func expectProbe(t *testing.T, probe func() bool, want bool, what string) {
	t.Helper()
	deadline := time.Now().Add(45 * time.Second)
	for streak := 0; ; {
		if probe() == want {
			streak++
		} else {
			streak = 0
		}
		if streak >= 1 && want || streak >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v after 45s, want %v", what, !want, want)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("%s: %v", what, want)
}

func probePod(name, role string, cmd []string) *corev1.Pod {
	gvisor := "gvisor"
	no := false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"role": role}},
		Spec: corev1.PodSpec{
			RuntimeClassName:              &gvisor,
			AutomountServiceAccountToken:  &no,
			TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{
				Name: name, Image: localcluster.SandboxImage, Command: cmd,
				ImagePullPolicy: corev1.PullNever,
			}},
		},
	}
}

// waitSA waits for the namespace's default service account (pods are refused
// without it).
func waitSA(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	for i := 0; i < 100; i++ {
		if _, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{}); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no default service account in %s", ns)
}

func waitRunning(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, name string) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			return p.Status.PodIP
		}
		if time.Now().After(deadline) {
			var events string
			if ev, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
				for _, e := range ev.Items {
					events += fmt.Sprintf("\n  %s %s: %s", e.InvolvedObject.Name, e.Reason, e.Message)
				}
			}
			t.Fatalf("pod %s not Running after 2m (%v); events:%s", name, err, events)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func rss(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:"))
		}
	}
	return "?"
}

type snapshot struct {
	cgroup              bool
	bridges             []string
	mounts, procs       int
	ipForward, bridgeNF string
	chains, ipsets      []string
	rules, cniResults   []string
	existed             map[string]bool
}

var builtin = map[string]bool{":INPUT": true, ":FORWARD": true, ":OUTPUT": true, ":PREROUTING": true, ":POSTROUTING": true}

func hostSnapshot(name, dir string) snapshot {
	var s snapshot
	_, err := os.Stat("/sys/fs/cgroup/memory/paddock-" + name)
	if err != nil {
		_, err = os.Stat("/sys/fs/cgroup/paddock-" + name)
	}
	s.cgroup = err == nil
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		if strings.HasPrefix(i.Name, "pdk-") {
			s.bridges = append(s.bridges, i.Name)
		}
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	s.mounts = strings.Count(string(mi), " "+dir+"/")
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if cl, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && pid != os.Getpid() &&
				strings.Contains(string(cl), dir+"/") {
				s.procs++
			}
		}
	}
	r := func(k string) string { b, _ := os.ReadFile("/proc/sys/" + k); return strings.TrimSpace(string(b)) }
	s.ipForward, s.bridgeNF = r("net/ipv4/ip_forward"), r("net/bridge/bridge-nf-call-iptables")
	if out, err := exec.Command("iptables-save").Output(); err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			switch f := strings.Fields(l); {
			case strings.HasPrefix(l, ":") && !builtin[f[0]]:
				s.chains = append(s.chains, f[0])
			case strings.HasPrefix(l, "-A "):
				s.rules = append(s.rules, l)
			}
		}
	}
	s.cniResults, _ = filepath.Glob("/var/lib/cni/results/*")
	s.existed = map[string]bool{}
	for _, p := range []string{"/run/containerd", "/var/lib/cni", "/var/log/containers"} {
		_, err := os.Stat(p)
		s.existed[p] = err == nil
	}
	if out, err := exec.Command("ipset", "list", "-n").Output(); err == nil {
		s.ipsets = strings.Fields(string(out))
	}
	return s
}

func diff(a, b []string) []string {
	seen := map[string]bool{}
	for _, x := range b {
		seen[x] = true
	}
	var out []string
	for _, x := range a {
		if !seen[x] {
			out = append(out, x)
		}
	}
	return out
}

// runscRSS sums the resident memory of the runsc processes of the node in dir.
func runscRSS(dir string) int {
	total := 0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		exe, _ := os.Readlink("/proc/" + e.Name() + "/exe")
		cl, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if filepath.Base(strings.TrimSuffix(exe, " (deleted)")) != "runsc" || !strings.Contains(string(cl), dir) {
			continue
		}
		pid, _ := strconv.Atoi(e.Name())
		if kb, err := strconv.Atoi(strings.Fields(rss(pid) + " 0")[0]); err == nil {
			total += kb
		}
	}
	return total
}

// assertControlPlaneOnLoopback: each control plane port answers on loopback and
// not on the node's bridge address (which every pod can route to), and etcd
// refuses a TLS client without the cluster's certificate. Connections go only
// to 127.0.0.1 and to the bridge this test's cluster created.
func assertControlPlaneOnLoopback(t *testing.T, dir string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		ControlPlane map[string]int `json:"controlPlane"`
		NodeNet      struct {
			NodeIP string `json:"nodeIP"`
		} `json:"nodeNet"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.ControlPlane) < 5 || net.ParseIP(st.NodeNet.NodeIP) == nil {
		t.Fatalf("state.json: control plane ports %v, node IP %q", st.ControlPlane, st.NodeNet.NodeIP)
	}
	for comp, port := range st.ControlPlane {
		p := strconv.Itoa(port)
		if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", p), 2*time.Second); err != nil {
			t.Errorf("%s: nothing answers on 127.0.0.1:%s: %v", comp, p, err)
		} else {
			c.Close()
		}
		if c, err := net.DialTimeout("tcp", net.JoinHostPort(st.NodeNet.NodeIP, p), 2*time.Second); err == nil {
			c.Close()
			t.Errorf("%s answers on the node's bridge address %s:%s, which pods reach", comp, st.NodeNet.NodeIP, p)
		}
	}
	conn, err := tls.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(st.ControlPlane["etcd"])), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the point is a client without the cluster's certificate
	if err == nil {
		// TLS 1.3 reports a missing client certificate on the first read.
		conn.SetDeadline(time.Now().Add(2 * time.Second))
		_, err = conn.Write([]byte("GET /version HTTP/1.1\r\nHost: x\r\n\r\n"))
		if err == nil {
			_, err = conn.Read(make([]byte, 64))
		}
		conn.Close()
	}
	if err == nil {
		t.Error("etcd answered a client without the cluster's certificate")
	} else {
		t.Logf("etcd refuses a client without the cluster's certificate: %v", err)
	}
}
