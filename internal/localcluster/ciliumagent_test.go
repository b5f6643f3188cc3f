package localcluster

import (
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func ciliumNet() nodeNet {
	nn := planNodeNet("paddock")
	nn.Dataplane, nn.AgentMetricsPort, nn.AgentHealthPort, nn.HubbleMetricsPort = DataplaneCilium, 40001, 40002, 40003
	return nn
}

// The agent takes the node's bridge as its only device (left alone it picks
// the machine's own interface), the pod range natively routed, its listeners
// on loopback, its BPF sources under the cluster's directory, and the kernel's
// routing off the node (so that the pod guard sees what leaves).
func TestCiliumAgentArgs(t *testing.T) {
	nn := ciliumNet()
	d := nodeDirs{root: "/x/node"}
	args := ciliumAgentArgs(d, "/x/logs", "/x/kubeconfig", "/sys/fs/cgroup/unified", nn)
	flags := map[string]string{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || !strings.HasPrefix(k, "--") {
			t.Fatalf("argument %q is not --flag=value", a)
		}
		if _, dup := flags[k]; dup {
			t.Errorf("flag %s given twice", k)
		}
		flags[k] = v
	}
	want := map[string]string{
		"--devices":                         nn.Bridge,
		"--ipv4-native-routing-cidr":        nn.PodCIDR,
		"--ipam":                            "kubernetes",
		"--identity-allocation-mode":        "crd",
		"--enable-host-legacy-routing":      "true",
		"--bpf-lb-sock-hostns-only":         "true",
		"--kube-proxy-replacement":          "true",
		"--enable-ipv4-masquerade":          "false",
		"--prometheus-serve-addr":           "127.0.0.1:40001",
		"--agent-health-port":               "40002",
		"--write-cni-conf-when-ready":       "/x/node/cilium/cni/" + ciliumCNIConf,
		"--lib-dir":                         "/x/node/cilium/lib",
		"--cgroup-root":                     "/sys/fs/cgroup/unified",
		"--k8s-kubeconfig-path":             "/x/kubeconfig",
		"--enable-hubble":                   "true",
		"--hubble-metrics":                  "drop:sourceContext=namespace",
		"--hubble-metrics-server":           "127.0.0.1:40003",
		"--enable-ipv6":                     "false",
		"--enable-endpoint-health-checking": "false",
	}
	for k, v := range want {
		if flags[k] != v {
			t.Errorf("%s=%q, want %q", k, flags[k], v)
		}
	}
	for k, v := range flags {
		if strings.Contains(v, "0.0.0.0") || strings.Contains(v, "eth0") {
			t.Errorf("%s=%s reaches beyond loopback and the node's bridge", k, v)
		}
	}
}

// The agent's write to kernel.unprivileged_bpf_disabled lands in a file bound
// over it in a mount namespace of its own; unshare and sh exec in turn, so the
// supervisor signals the agent itself.
func TestCiliumAgentRunsBehindTheSysctlShield(t *testing.T) {
	p := ciliumAgentProc("/bin/cilium-agent", "/x/shield", []string{"--a=1", "--b=2"}, nil)
	if p.Bin != "unshare" || p.Name != "cilium-agent" {
		t.Fatalf("runs %s as %s", p.Bin, p.Name)
	}
	i := indexOf(p.Args, "-c")
	if i < 0 || i+1 >= len(p.Args) {
		t.Fatalf("no sh -c script in %q", p.Args)
	}
	if !reflect.DeepEqual(p.Args[:i-1], []string{"--mount", "--propagation", "private", "--"}) {
		t.Errorf("unshare options %q: want a private mount namespace", p.Args[:i-1])
	}
	script := p.Args[i+1]
	if !strings.Contains(script, `mount --bind "$1" `+unprivBPFSysctl) || !strings.Contains(script, `exec "$@"`) {
		t.Errorf("script %q does not bind the shield and exec the agent", script)
	}
	if got := p.Args[i+2:]; !reflect.DeepEqual(got, []string{"cilium-agent", "/x/shield", "/bin/cilium-agent", "--a=1", "--b=2"}) {
		t.Errorf("script arguments %q", got)
	}
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// The pod guard: installed whole when missing, left alone when in place,
// rewritten when a rule was loosened or the jump removed.
func TestPodGuardRestore(t *testing.T) {
	nn := ciliumNet()
	chain := podGuardChain(nn)
	empty := "*mangle\n:PREROUTING ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\nCOMMIT\n"
	in := podGuardRestore(empty, nn)
	for _, want := range append(podGuardRules(chain), ":"+chain+" - [0:0]", "-I FORWARD 1 -s "+nn.PodCIDR+" -j "+chain) {
		if !strings.Contains(in, want+"\n") {
			t.Errorf("missing %q in\n%s", want, in)
		}
	}
	// What iptables-save prints once it is in place.
	var inPlace strings.Builder
	inPlace.WriteString("*mangle\n:PREROUTING ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:" + chain + " - [0:0]\n")
	inPlace.WriteString("-A FORWARD -s " + nn.PodCIDR + " -j " + chain + "\n")
	for _, r := range podGuardRules(chain) {
		inPlace.WriteString(r + "\n")
	}
	inPlace.WriteString("COMMIT\n")
	if got := podGuardRestore(inPlace.String(), nn); got != "" {
		t.Errorf("guard in place, still restores:\n%s", got)
	}
	loosened := strings.Replace(inPlace.String(), "-j DROP", "-j ACCEPT", 1)
	if got := podGuardRestore(loosened, nn); !strings.Contains(got, ":"+chain) || strings.Contains(got, "-I FORWARD") {
		t.Errorf("a DROP turned ACCEPT: want the chain rewritten, not another jump:\n%s", got)
	}
	unjumped := strings.Replace(inPlace.String(), "-A FORWARD -s "+nn.PodCIDR+" -j "+chain+"\n", "", 1)
	if got := podGuardRestore(unjumped, nn); !strings.Contains(got, "-I FORWARD 1") || strings.Contains(got, ":"+chain) {
		t.Errorf("jump removed: want only the jump back:\n%s", got)
	}
	negated := strings.Replace(inPlace.String(), "-A FORWARD -s ", "-A FORWARD ! -s ", 1)
	if got := podGuardRestore(negated, nn); !strings.Contains(got, "-I FORWARD 1") {
		t.Errorf("a negated jump guards the wrong traffic: want the jump back:\n%s", got)
	}
}

// The agent moves `lookup local` from 0 to 100 and adds its own rule: Down
// puts 0 back before deleting 100, then flushes the agent's table.
func TestIPRuleRepairs(t *testing.T) {
	before := parseIPRules("0:\tfrom all lookup local\n32766:\tfrom all lookup main\n32767:\tfrom all lookup default\n")
	now := parseIPRules("9:\tfrom all fwmark 0x200/0xf00 lookup 2004\n100:\tfrom all lookup local\n32766:\tfrom all lookup main\n32767:\tfrom all lookup default\n")
	got := ipRuleRepairs(before, now)
	want := [][]string{
		{"-4", "rule", "add", "pref", "0", "from", "all", "lookup", "local"},
		{"-4", "rule", "del", "pref", "9", "from", "all", "fwmark", "0x200/0xf00", "lookup", "2004"},
		{"-4", "rule", "del", "pref", "100", "from", "all", "lookup", "local"},
		{"-4", "route", "flush", "table", "2004"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("repairs:\n got %q\nwant %q", got, want)
	}
	if got := ipRuleRepairs(before, before); len(got) != 0 {
		t.Errorf("nothing changed, still repairs: %q", got)
	}
}

// A real node needs the agent's tools and never kube-router's; Down
// recognises its processes by them.
func TestNodeTools(t *testing.T) {
	tools := nodeTools()
	for _, want := range []string{"kubelet", "containerd", "runsc", "coredns", "cilium-agent", "cilium-cni", "cilium-dbg"} {
		if indexOf(tools, want) < 0 {
			t.Errorf("node tools %q lack %s", tools, want)
		}
	}
	if indexOf(tools, "kube-router") >= 0 {
		t.Errorf("node tools %q name kube-router, which is no longer built", tools)
	}
}

// The pod range stays apart from the node subnet and the service range.
func TestPodCIDRApart(t *testing.T) {
	for _, name := range []string{"paddock", "e2e-1", "x"} {
		nn := planNodeNet(name)
		_, pods, err := net.ParseCIDR(nn.PodCIDR)
		if err != nil {
			t.Fatal(err)
		}
		_, sub, _ := net.ParseCIDR(nn.Subnet)
		_, svc, _ := net.ParseCIDR(ServiceCIDR)
		if pods.Contains(sub.IP) || sub.Contains(pods.IP) || svc.Contains(pods.IP) || pods.Contains(net.ParseIP(nn.NodeIP)) {
			t.Errorf("%s: pod range %s overlaps %s, %s or the node IP", name, nn.PodCIDR, nn.Subnet, ServiceCIDR)
		}
	}
}

// containerd's copy follows the agent's: installed whole, replaced when it
// changes, removed when the agent withdraws its own, left alone otherwise.
func TestSyncCNIConf(t *testing.T) {
	dir := t.TempDir()
	staged, conf := filepath.Join(dir, "agent", ciliumCNIConf), filepath.Join(dir, "net.d")
	for _, p := range []string{filepath.Dir(staged), conf} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(conf, ciliumCNIConf)
	step := func(want string, wantDid bool) {
		t.Helper()
		did, err := syncCNIConf(staged, conf)
		if err != nil || (did != "") != wantDid {
			t.Fatalf("sync: did %q, err %v; want did=%v", did, err, wantDid)
		}
		got, err := os.ReadFile(dst)
		if want == "" && !os.IsNotExist(err) || want != "" && string(got) != want {
			t.Fatalf("containerd's copy %q (err %v), want %q", got, err, want)
		}
		if left, _ := filepath.Glob(filepath.Join(conf, ".*")); len(left) != 0 {
			t.Fatalf("temporary files left: %v", left)
		}
	}
	step("", false)
	if err := os.WriteFile(staged, []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	step("v1", true)
	step("v1", false)
	if err := os.WriteFile(staged, []byte("v2"), 0o644); err != nil {
		t.Fatal(err)
	}
	step("v2", true)
	if err := os.Remove(staged); err != nil {
		t.Fatal(err)
	}
	step("", true)
}
