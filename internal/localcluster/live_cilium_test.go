package localcluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/paddock-platform/paddock/internal/localcluster"
	"github.com/paddock-platform/paddock/internal/manifests"
	"github.com/paddock-platform/paddock/internal/model"
	"github.com/paddock-platform/paddock/internal/paths"
)

// TestLiveCiliumDataplane runs the real node on the Cilium dataplane and shows
// a tenant's named egress hold with traffic: under the policies Paddock renders
// for a tenant that may reach one name, a gVisor pod resolves that name and
// connects to it on 443; the resolver does not answer a name off the list; the
// other destination, by address, and the allowed one on port 80 are refused;
// the agent counts the drops; and Down leaves the machine as it found it.
//
// "Outside the cluster" is two network namespaces this test makes on this
// machine (Cilium applies toFQDNs only to destinations it sees as world), named
// through the resolver's hosts ConfigMap. A third namespace, on a link not named
// as the pod guard allows, stands for everything beyond the machine: a pod with
// no policy at all must not reach it. No traffic leaves the machine.
func TestLiveCiliumDataplane(t *testing.T) {
	if os.Getenv("PADDOCK_LIVE") != "1" {
		t.Skip("live local stack not requested; set PADDOCK_LIVE=1 (make e2e does)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
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
	name := fmt.Sprintf("cilium-%d", os.Getpid())
	before := hostSnapshot(name, dir)
	beforeC := ciliumSnapshot()

	// The world: the stack's own hosts (an allowed one, an unlisted one), and
	// one this test puts behind a link the pod guard does not pass.
	allowed, unlisted := localcluster.WorldHosts[0], localcluster.WorldHosts[2]
	beyondHost := newWorldHost(t, "pdkx-b", 9, 443)

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
	t.Logf("TIMING Up with a real node on Cilium (tools built): %s", time.Since(start))
	cs, dyn := clients(t, info.Kubeconfig)
	assertControlPlaneOnLoopback(t, dir)

	if v, _ := os.ReadFile("/proc/sys/kernel/unprivileged_bpf_disabled"); strings.TrimSpace(string(v)) != beforeC.unprivBPF {
		t.Errorf("kernel.unprivileged_bpf_disabled is %s with the agent running, was %s: the shield did not hold", strings.TrimSpace(string(v)), beforeC.unprivBPF)
	}

	createGVisorRuntimeClass(ctx, t, cs)
	tenant := model.DefaultTenant("fqdn")
	tenant.Egress.FQDNs = []string{allowed.Name}
	open := "open" // no policy: what the pod guard alone holds
	for _, ns := range []string{tenant.Namespace, open} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitSA(ctx, t, cs, ns)
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, probePod("agent", "agent", []string{"sleep", "3600"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	podStart := time.Now()
	waitRunning(ctx, t, cs, tenant.Namespace, "agent")
	waitRunning(ctx, t, cs, open, "agent")
	t.Logf("TIMING two gVisor pods Running on Cilium: %s", time.Since(podStart))

	kexec := func(ns string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", info.Kubeconfig, "-n", ns, "exec", "agent", "--"}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// connects reports whether the pod's TCP connection to target:port
	// reached the world host h, by h's own greeting.
	connects := func(ns string, h localcluster.WorldHost, target string, port int) bool {
		out, _ := kexec(ns, "sh", "-c", fmt.Sprintf("nc -w 2 %s %d </dev/null", target, port))
		return strings.Contains(out, localcluster.WorldGreeting+h.Name)
	}
	// beyond reports whether the pod reached the test's own host (its accept
	// count rose).
	beyond := func(ns string) bool {
		n := beyondHost.accepted(443)
		_, _ = kexec(ns, "sh", "-c", fmt.Sprintf("nc -w 2 %s 443 </dev/null", beyondHost.ip))
		return beyondHost.accepted(443) > n
	}
	resolves := func(ns, name, want string) bool {
		out, err := kexec(ns, "nslookup", "-timeout=2", name+".")
		return err == nil && strings.Contains(out, want)
	}
	expectOf := func(probe func() bool, want bool, what string) { t.Helper(); expectProbe(t, probe, want, what) }

	// Before any policy: every world host answers (a refusal later means the
	// policy refused, not a broken path); the host beyond the guard does not.
	expectOf(func() bool { return resolves(tenant.Namespace, unlisted.Name, unlisted.Addr()) }, true, "no policy: resolves "+unlisted.Name)
	expectOf(func() bool { return connects(tenant.Namespace, allowed, allowed.Addr(), 443) }, true, "no policy: reaches the allowed host on 443")
	expectOf(func() bool { return connects(tenant.Namespace, allowed, allowed.Addr(), 80) }, true, "no policy: reaches the allowed host on 80")
	expectOf(func() bool { return connects(tenant.Namespace, unlisted, unlisted.Addr(), 443) }, true, "no policy: reaches the unlisted host on 443")
	expectOf(func() bool { return beyond(open) }, false, "no policy: reaches a host beyond the pod guard")

	// The tenant's policies, as Paddock renders them for the local target.
	p := &model.Platform{Name: "cilium-live", Target: model.Target{Kind: model.TargetLocal, FQDNPolicy: model.FQDNPolicyCilium}}
	nps, err := manifests.NetworkPolicies(p, tenant)
	if err != nil {
		t.Fatal(err)
	}
	for _, np := range nps {
		if _, err := cs.NetworkingV1().NetworkPolicies(tenant.Namespace).Create(ctx, np, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cnp := manifests.FQDNPolicy(p, tenant)
	cnpGVR := schema.GroupVersionResource{Group: "cilium.io", Version: "v2", Resource: "ciliumnetworkpolicies"}
	if _, err := dyn.Resource(cnpGVR).Namespace(tenant.Namespace).Create(ctx, cnp, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
		t.Fatal(err)
	}
	policyStart := time.Now()
	expectOf(func() bool { return connects(tenant.Namespace, unlisted, unlisted.Addr(), 443) }, false, "tenant policy: reaches the unlisted host by address")
	t.Logf("TIMING tenant policy enforced: %s", time.Since(policyStart))
	expectOf(func() bool { return resolves(tenant.Namespace, allowed.Name, allowed.Addr()) }, true, "tenant policy: resolves "+allowed.Name)
	expectOf(func() bool { return connects(tenant.Namespace, allowed, allowed.Name, 443) }, true, "tenant policy: reaches "+allowed.Name+" on 443")
	expectOf(func() bool { return connects(tenant.Namespace, allowed, allowed.Name, 80) }, false, "tenant policy: reaches "+allowed.Name+" on 80")
	expectOf(func() bool { return resolves(tenant.Namespace, unlisted.Name, unlisted.Addr()) }, false, "tenant policy: resolves "+unlisted.Name)
	expectOf(func() bool { return connects(tenant.Namespace, unlisted, unlisted.Name, 443) }, false, "tenant policy: reaches "+unlisted.Name+" by name")
	// The search path still ends: cluster names are answered (NXDOMAIN here).
	if out, err := kexec(tenant.Namespace, "nslookup", "-timeout=2", localcluster.DNSProbeName); err != nil || !strings.Contains(out, localcluster.DNSProbeAddress) {
		t.Errorf("tenant policy: the cluster domain is not answered (err %v):\n%s", err, out)
	}

	// The agent counted the refusals.
	drops := agentMetric(t, dir, "agentMetricsPort", `cilium_drop_count_total{`, `reason="Policy denied"`)
	l7 := agentMetric(t, dir, "agentMetricsPort", `cilium_policy_l7_total{`, `proxy_type="fqdn"`)
	t.Logf("agent metrics: %v policy drops, %v DNS proxy decisions", drops, l7)
	if drops == 0 || l7 == 0 {
		t.Errorf("the agent counted %v policy drops and %v DNS proxy decisions, want both above zero", drops, l7)
	}
	// And Hubble attributed them to the tenant's namespace, as the drop
	// alert reads them.
	tenantDrops := agentMetric(t, dir, "hubbleMetricsPort", `hubble_drop_total{`, `source="`+tenant.Namespace+`"`)
	t.Logf("hubble: %v drops from %s", tenantDrops, tenant.Namespace)
	if tenantDrops == 0 {
		t.Errorf("hubble_drop_total counts no drop from %s, whose pod was refused", tenant.Namespace)
	}
	// The reason the alert selects (PaddockSandboxPolicyDrops) is how Hubble
	// names a policy drop.
	if n := agentMetric(t, dir, "hubbleMetricsPort", `hubble_drop_total{`, `reason="POLICY_DENIED"`); n == 0 {
		t.Errorf(`hubble_drop_total counts no drop with reason="POLICY_DENIED"`)
	}

	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, comp := range st.Components {
		switch comp.Name {
		case "containerd", "kubelet", "cilium-agent", "world-" + allowed.Name, "world-" + unlisted.Name:
			if comp.State != localcluster.Running {
				t.Errorf("%s is %s (%s)", comp.Name, comp.State, comp.Detail)
			}
			t.Logf("MEMORY %s: %s", comp.Name, rss(comp.PID))
		}
	}

	if err := c.Down(ctx); err != nil {
		t.Fatalf("Down: %v", err)
	}
	downed = true
	after, afterC := hostSnapshot(name, dir), ciliumSnapshot()
	if after.cgroup || after.mounts != 0 || after.procs != 0 || after.ipForward != before.ipForward {
		t.Errorf("Down left: cgroup=%v mounts under %s=%d node processes=%d ip_forward %s -> %s", after.cgroup, dir, after.mounts, after.procs, before.ipForward, after.ipForward)
	}
	if extra := diff(after.chains, before.chains); len(extra) > 0 {
		t.Errorf("Down left iptables chains %v", extra)
	}
	if extra := diff(after.rules, before.rules); len(extra) > 0 {
		t.Errorf("Down left iptables rules %v", extra)
	}
	if d := beforeC.compare(afterC); d != "" {
		t.Errorf("Down did not restore the machine: %s", d)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Down left %s", dir)
	}
}

// worldHost is a network namespace this test made, linked to the machine by a
// veth pair, that accepts TCP connections on its ports and counts them.
type worldHost struct {
	ip    string
	count map[int]*atomic.Int64
}

func (h *worldHost) accepted(port int) int64 { return h.count[port].Load() }

// newWorldHost makes the namespace (held by a sleeping `unshare --net`), the
// link (host side named link, 10.215.N.1/30; inside 10.215.N.2/30 with a
// default route back), and a listener per port inside it.
func newWorldHost(t *testing.T, link string, n int, ports ...int) *worldHost {
	t.Helper()
	hostIP, ip := fmt.Sprintf("10.215.%d.1", n), fmt.Sprintf("10.215.%d.2", n)
	if out, _ := exec.Command("ip", "-4", "route", "show", "table", "all").Output(); strings.Contains(string(out), fmt.Sprintf("10.215.%d.", n)) {
		t.Fatalf("this machine already routes 10.215.%d.0/24, where the test's namespace goes:\n%s", n, out)
	}
	holder := exec.Command("unshare", "--net", "sleep", "3600")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = holder.Process.Kill()
		_ = holder.Wait()
		_ = exec.Command("ip", "link", "del", link).Run() // gone with the namespace already, normally
	})
	// The holder runs in the machine's namespace until unshare has made its
	// own: wait for that, or the link would land in the machine's.
	self, _ := os.Readlink("/proc/self/ns/net")
	for i := 0; ; i++ {
		if ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", holder.Process.Pid)); err == nil && ns != self {
			break
		}
		if i > 200 {
			t.Fatalf("unshare --net (pid %d) has no namespace of its own after 10s", holder.Process.Pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
	pid := strconv.Itoa(holder.Process.Pid)
	ns := func(args ...string) []string { return append([]string{"-t", pid, "-n"}, args...) }
	for _, cmd := range [][]string{
		{"ip", "link", "add", link, "type", "veth", "peer", "name", "w0", "netns", pid},
		{"ip", "addr", "add", hostIP + "/30", "dev", link},
		{"ip", "link", "set", link, "up"},
		append([]string{"nsenter"}, ns("ip", "addr", "add", ip+"/30", "dev", "w0")...),
		append([]string{"nsenter"}, ns("ip", "link", "set", "w0", "up")...),
		append([]string{"nsenter"}, ns("ip", "link", "set", "lo", "up")...),
		append([]string{"nsenter"}, ns("ip", "route", "add", "default", "via", hostIP)...),
	} {
		if out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", cmd, err, out)
		}
	}
	h := &worldHost{ip: ip, count: map[int]*atomic.Int64{}}
	for _, port := range ports {
		l, err := localcluster.ListenInNetns(holder.Process.Pid, fmt.Sprintf("%s:%d", ip, port))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		cnt := &atomic.Int64{}
		h.count[port] = cnt
		go func() {
			for {
				conn, err := l.Accept()
				if err != nil {
					return
				}
				cnt.Add(1)
				_, _ = io.WriteString(conn, "hello\n")
				conn.Close()
			}
		}()
	}
	return h
}

// agentMetric sums the agent's samples of a metric whose line starts with
// prefix and contains label, read from one of its loopback metrics listeners
// (port names the state.json field: agentMetricsPort, hubbleMetricsPort).
func agentMetric(t *testing.T, dir, port, prefix, label string) float64 {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		NodeNet map[string]any `json:"nodeNet"`
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	p, _ := st.NodeNet[port].(float64)
	if p == 0 {
		t.Fatalf("state.json names no %s", port)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", int(p)))
	if err != nil {
		t.Fatalf("agent metrics: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	sum := 0.0
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, prefix) && strings.Contains(l, label) {
			f := strings.Fields(l)
			if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
				sum += v
			}
		}
	}
	return sum
}

// ciliumHost is what the Cilium agent changes on the machine.
type ciliumHost struct {
	unprivBPF, multipathNeigh, timerMigration string
	ipRules, nftTables, links                 string
	bpffs                                     bool
	runCilium                                 bool
}

func ciliumSnapshot() ciliumHost {
	r := func(k string) string { b, _ := os.ReadFile("/proc/sys/" + k); return strings.TrimSpace(string(b)) }
	out := func(name string, args ...string) string {
		b, _ := exec.Command(name, args...).Output()
		return string(b)
	}
	var links []string
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		if strings.HasPrefix(i.Name, "cilium_") || strings.HasPrefix(i.Name, "lxc") || strings.HasPrefix(i.Name, "pdk-") || strings.HasPrefix(i.Name, localcluster.WorldLinkPrefix) {
			links = append(links, i.Name)
		}
	}
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	_, err := os.Stat("/var/run/cilium")
	return ciliumHost{
		unprivBPF: r("kernel/unprivileged_bpf_disabled"), multipathNeigh: r("net/ipv4/fib_multipath_use_neigh"), timerMigration: r("kernel/timer_migration"),
		ipRules: out("ip", "-4", "rule", "show"), nftTables: out("nft", "list", "tables"), links: strings.Join(links, " "),
		bpffs: strings.Contains(string(mi), " /sys/fs/bpf "), runCilium: err == nil,
	}
}

func (a ciliumHost) compare(b ciliumHost) string {
	if a == b {
		return ""
	}
	return fmt.Sprintf("before %+v\nafter  %+v", a, b)
}
