// The real node: kubelet + containerd + gVisor's runsc (runc for system pods) and
// the Cilium agent as its dataplane (dataplane.go), all pinned and run from the
// cluster's own directory. This file decides whether the machine can run
// it and renders its configuration; nodehost.go prepares and cleans the host,
// nodeproc.go runs the processes (under the supervisor).

package localcluster

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/paddock-platform/paddock/internal/paths"
	"github.com/paddock-platform/paddock/internal/pins"
	"github.com/paddock-platform/paddock/internal/procfs"
)

// Node modes: Options.Nodes and state.json's "nodes".
const (
	NodesAuto = ""     // real where the machine allows it, otherwise fake (saying why)
	NodesReal = "real" // kubelet + containerd + runsc; an error where the machine cannot
	NodesFake = "fake" // kwok nodes: nothing runs
)

// The Debian packages' files the real node uses (tools/node-packages.sh installs them).
var (
	runcBinary = "/usr/sbin/runc"
	cniBinDir  = "/usr/lib/cni"
	// What the real node runs besides the pinned tools, each with its Debian package.
	nodeHostCommands = []struct{ Name, Package string }{
		{"iptables", "iptables"},
		{"ipset", "ipset"},
		{"ip", "iproute2"},
		{"mount", "mount"},
	}
	busyboxBinary = "/bin/busybox"
)

// The pinned tools every real node needs; its dataplane adds its own (dataplane.go).
var realNodeTools = []string{"kubelet", "containerd", "ctr", "containerd-shim-runc-v2", "runsc", "containerd-shim-runsc-v1", "coredns"}

// Images the real node imports (built from busybox-static, see image.go). Tags are
// the image layout version; a change of the layout bumps them.
const (
	PauseImage   = "localhost/paddock/pause:v1"
	SandboxImage = "localhost/paddock/busybox:v1"
)

// CoreDNSImage is busybox plus the pinned CoreDNS: the cluster resolver.
var CoreDNSImage = "localhost/paddock/coredns:" + pins.CoreDNS

// RealNodeLabel marks the node that runs containers (value "real"), apart from
// kwok's nodes.
const RealNodeLabel = "paddock.dev/node"

// nodeNet is the node's network: a bridge Paddock creates, carrying the node IP
// (the subnet's first address), and the pods' range PodCIDR. Both are picked by
// the cluster name (from 10.213.0.0/16 and 10.214.0.0/16), and refused when any
// route of the machine overlaps them: the stack never talks to an address it did
// not create.
type nodeNet struct {
	Bridge string `json:"bridge"` // interface name, at most 15 bytes
	Subnet string `json:"subnet"` // e.g. 10.213.7.0/24
	NodeIP string `json:"nodeIP"` // e.g. 10.213.7.1
	// Dataplane is DataplaneCilium; "kube-router" or "" in the state of a
	// retired node (dataplane.go).
	Dataplane string `json:"dataplane,omitempty"`
	// PodCIDR is the pods' range (kube-controller-manager's --cluster-cidr, all
	// of it the one node's PodCIDR), e.g. 10.214.7.0/24.
	PodCIDR string `json:"podCIDR,omitempty"`
	// The Cilium agent's metrics and health listeners, on loopback.
	AgentMetricsPort int `json:"agentMetricsPort,omitempty"`
	AgentHealthPort  int `json:"agentHealthPort,omitempty"`
	// HubbleMetricsPort serves the agent's Hubble drop counter, on loopback.
	HubbleMetricsPort int `json:"hubbleMetricsPort,omitempty"`
}

func planNodeNet(cluster string) nodeNet {
	sum := sha256.Sum256([]byte(cluster))
	third := int(sum[0])%250 + 1
	br := "pdk-" + hex.EncodeToString(sum[:])[:8] // "pdk-" + 8 = 12 bytes
	return nodeNet{
		Bridge:    br,
		Subnet:    fmt.Sprintf("10.213.%d.0/24", third),
		NodeIP:    fmt.Sprintf("10.213.%d.1", third),
		Dataplane: DataplaneCilium,
		PodCIDR:   fmt.Sprintf("10.214.%d.0/24", third),
	}
}

// realNodeSupport says why this machine cannot run the real node ("" when it can).
// Pure inputs come from the machine through probeMachine, so tests drive it.
type machineFacts struct {
	GOOS          string
	EUID          int
	CgroupV1      bool     // per-controller hierarchies under /sys/fs/cgroup
	CgroupV2      bool     // unified hierarchy
	MissingTools  []string // pinned tools `make tools` did not build
	MissingFiles  []string // Debian files absent (runc, CNI plugins, busybox)
	MissingCmds   []string // commands absent from PATH
	OverlayFS     bool     // overlay in /proc/filesystems
	RouteConflict string   // a route of the machine that overlaps the node subnet or DNSServiceIP
	OtherNode     string   // another Paddock cluster whose real node runs here
}

func realNodeSupport(f machineFacts) string {
	var why []string
	if f.GOOS != "linux" {
		return "the real node needs Linux (this is " + f.GOOS + ")"
	}
	if f.EUID != 0 {
		why = append(why, "it needs root (kubelet, containerd, mounts, iptables)")
	}
	if !f.CgroupV1 && !f.CgroupV2 {
		why = append(why, "no cgroup hierarchy is mounted under /sys/fs/cgroup")
	}
	if !f.OverlayFS {
		why = append(why, "the kernel has no overlay filesystem (containerd's snapshotter)")
	}
	if len(f.MissingTools) > 0 {
		why = append(why, "pinned tools not built: "+strings.Join(f.MissingTools, ", ")+" (run `make tools`)")
	}
	if len(f.MissingFiles) > 0 {
		why = append(why, "missing "+strings.Join(f.MissingFiles, ", ")+" (run `make node-packages`)")
	}
	if len(f.MissingCmds) > 0 {
		why = append(why, "missing commands "+strings.Join(f.MissingCmds, ", ")+" (run `make node-packages`)")
	}
	if f.OtherNode != "" {
		why = append(why, "the real node of local cluster "+strconv.Quote(f.OtherNode)+" runs on this machine, and only one fits (its rules are machine-wide); `paddock local down --name "+f.OtherNode+"` first")
	}
	if f.RouteConflict != "" {
		why = append(why, "the node subnet or the cluster DNS address "+DNSServiceIP+" overlaps a route of this machine ("+f.RouteConflict+")")
	}
	return strings.Join(why, "; ")
}

// probeMachine reads the facts realNodeSupport judges.
func probeMachine(cluster string, nn nodeNet, tool func(string) (string, error)) machineFacts {
	f := machineFacts{GOOS: runtime.GOOS, EUID: os.Geteuid()}
	if f.GOOS != "linux" {
		return f
	}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		f.CgroupV2 = true
	} else if _, err := os.Stat("/sys/fs/cgroup/memory"); err == nil {
		f.CgroupV1 = true
	}
	if b, err := os.ReadFile("/proc/filesystems"); err == nil {
		f.OverlayFS = strings.Contains(string(b), "\toverlay\n")
	}
	for _, t := range nodeTools() {
		if _, err := tool(t); err != nil {
			f.MissingTools = append(f.MissingTools, t)
		}
	}
	// containerd runs the loopback plugin in every pod besides the agent's own.
	files := []string{runcBinary, filepath.Join(cniBinDir, "loopback"), busyboxBinary, ciliumClang}
	cmds := append(append([]struct{ Name, Package string }(nil), nodeHostCommands...), ciliumHostCommands...)
	for _, p := range files {
		if _, err := os.Stat(p); err != nil {
			f.MissingFiles = append(f.MissingFiles, p)
		}
	}
	for _, c := range cmds {
		if _, err := exec.LookPath(c.Name); err != nil {
			f.MissingCmds = append(f.MissingCmds, c.Name+" ("+c.Package+")")
		}
	}
	f.RouteConflict = routeConflict(nn)
	f.OtherNode = otherRealNode(cluster)
	return f
}

// otherRealNode returns the name of another local cluster whose real node has
// processes on this machine ("" if none): its cgroup /paddock-NAME/node is not empty.
func otherRealNode(cluster string) string {
	for _, mp := range cgroupMounts() {
		dirs, _ := filepath.Glob(filepath.Join(mp, "paddock-*", "node", "cgroup.procs"))
		for _, p := range dirs {
			name := strings.TrimPrefix(filepath.Base(filepath.Dir(filepath.Dir(p))), "paddock-")
			if b, err := os.ReadFile(p); err == nil && name != cluster && strings.TrimSpace(string(b)) != "" {
				return name
			}
		}
		break // one hierarchy tells
	}
	return ""
}

// nodeCgroupPrefix names a cluster's cgroup (/paddock-NAME); a variable so
// that a unit test's cgroup is never taken for a real node by a `local up`
// running beside it.
var nodeCgroupPrefix = "paddock-"

// sameNameNodeElsewhere reports whether a real node of cluster already has
// processes on this machine although this PADDOCK_HOME holds no state of it:
// it was started from another PADDOCK_HOME, and a second one would take the
// same bridge, addresses and cgroup (one up would break the other). home is
// that PADDOCK_HOME when a node process says it ("" if none does).
func sameNameNodeElsewhere(cluster string) (running bool, home string) {
	for _, mp := range cgroupMounts() {
		b, err := os.ReadFile(filepath.Join(mp, nodeCgroupPrefix+cluster, "node", "cgroup.procs"))
		if err != nil {
			return false, ""
		}
		for _, pid := range strings.Fields(string(b)) {
			// An exited process (a zombie not yet reaped) runs nothing.
			if n, err := strconv.Atoi(pid); err == nil {
				if st, err := procfs.ReadStat(n); err == nil && st.Exited() {
					continue
				}
			}
			running = true
			if h := processEnv(pid, "PADDOCK_HOME"); h != "" {
				return true, h
			}
			if h := homeInCmdline(pid); h != "" {
				return true, h
			}
		}
		return running, ""
	}
	return false, ""
}

// processEnv is variable name in process pid's environment ("" when unset
// or unreadable).
func processEnv(pid, name string) string {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "environ"))
	if err != nil {
		return ""
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// homeInCmdline is the PADDOCK_HOME a node process's arguments name: every
// node process is given files under HOME/local/ ("" when none is).
func homeInCmdline(pid string) string {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
	if err != nil {
		return ""
	}
	for _, arg := range strings.Split(string(b), "\x00") {
		if _, v, ok := strings.Cut(arg, "="); ok {
			arg = v
		}
		if i := strings.Index(arg, "/local/"); i > 0 && filepath.IsAbs(arg) {
			return arg[:i]
		}
	}
	return ""
}

// checksNodeElsewhere says Up refuses to start beside a real node of the
// same name from another PADDOCK_HOME: only a cluster that may run a real
// node would share its bridge, address range and cgroup. One of kwok nodes
// shares nothing with it (its ports are chosen free, its directory is its
// home's own), so a benchmark on kwok nodes runs beside a real-node e2e.
func (c *cluster) checksNodeElsewhere() bool { return c.nodes != NodesFake }

// errNodeElsewhere is Up's refusal when another PADDOCK_HOME runs the real
// node of a cluster of the same name.
func errNodeElsewhere(cluster, home string) error {
	where := "another PADDOCK_HOME"
	stop := "`paddock local down --name " + cluster + "` with that PADDOCK_HOME"
	if home != "" {
		where = "PADDOCK_HOME " + home
		stop = "`PADDOCK_HOME=" + home + " paddock local down --name " + cluster + "`"
	}
	return fmt.Errorf("the real node of local cluster %q already runs on this machine, started from %s (this PADDOCK_HOME, %s, holds no such cluster); two would share one bridge, address range and cgroup: stop it with %s, or give this one another name (--name)", cluster, where, paths.Home(), stop)
}

// routeConflict returns a route of the machine that overlaps the node subnet, the
// pod range or the cluster DNS address, other than the node's own (on its bridge,
// and the agent's cilium_host). The agent translates the DNS address in BPF; a
// route of the machine for it would catch whatever the agent does not.
func routeConflict(nn nodeNet) string {
	_, want, err := net.ParseCIDR(nn.Subnet)
	if err != nil {
		return err.Error()
	}
	out, err := exec.Command("ip", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		return ""
	}
	if r := overlappingRoute(string(out), want, nn.Bridge); r != "" {
		return r
	}
	_, pods, err := net.ParseCIDR(nn.PodCIDR)
	if err != nil {
		return err.Error()
	}
	// The agent routes the pod range to its own cilium_host link.
	if r := overlappingRoute(string(out), pods, "cilium_host"); r != "" {
		return r
	}
	return overlappingRoute(string(out), &net.IPNet{IP: net.ParseIP(DNSServiceIP).To4(), Mask: net.CIDRMask(32, 32)}, nn.Bridge)
}

// overlappingRoute scans `ip route` output for a destination overlapping want that
// is not on the bridge skip. Pure, for the unit tests.
func overlappingRoute(routes string, want *net.IPNet, skip string) string {
	for _, line := range strings.Split(routes, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] == "default" || fields[0] == "broadcast" || fields[0] == "local" || fields[0] == "unreachable" {
			continue
		}
		if strings.Contains(" "+line+" ", " dev "+skip+" ") {
			continue
		}
		dst := fields[0]
		if !strings.Contains(dst, "/") {
			dst += "/32"
		}
		_, n, err := net.ParseCIDR(dst)
		if err != nil {
			continue
		}
		if n.Contains(want.IP) || want.Contains(n.IP) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// nodeDirs is the layout of Dir/node: everything the real node writes, except what
// the programs hard-code (see nodehost.go).
type nodeDirs struct{ root string }

func (d nodeDirs) path(p ...string) string  { return filepath.Join(append([]string{d.root}, p...)...) }
func (d nodeDirs) containerdConfig() string { return d.path("containerd", "config.toml") }
func (d nodeDirs) containerdSocket() string { return d.path("containerd", "containerd.sock") }
func (d nodeDirs) runscConfig() string      { return d.path("runsc", "runsc.toml") }
func (d nodeDirs) kubeletConfig() string    { return d.path("kubelet", "config.yaml") }
func (d nodeDirs) kubeletRoot() string      { return d.path("kubelet", "root") }
func (d nodeDirs) podLogs() string          { return d.path("pod-logs") }
func (d nodeDirs) cniConf() string          { return d.path("cni", "net.d") }
func (d nodeDirs) images() string           { return d.path("images") }
func (d nodeDirs) hostFile() string         { return d.path("host.json") }

// cgroupRoot is the cgroup every pod of the node lives under (kubelet's
// cgroupRoot), and nodeCgroup the one the node's own processes run in: removing
// both trees removes every process the node started, whatever it was.
func cgroupRoot(cluster string) string { return "/paddock-" + cluster }
func nodeCgroup(cluster string) string { return cgroupRoot(cluster) + "/node" }

// containerdConfigTOML renders containerd's configuration: every directory and
// socket under Dir/node, the CRI plugin with runc (default, system pods) and runsc
// (RuntimeClass gvisor), the locally imported pause image, and no TCP listener.
func containerdConfigTOML(d nodeDirs, cniBinDirs ...string) string {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	bins := []string{q(cniBinDir)}
	for _, b := range cniBinDirs {
		bins = append(bins, q(b))
	}
	return `# Written by paddock (localcluster): the local stack's real node.
version = 3
root = ` + q(d.path("containerd", "root")) + `
state = ` + q(d.path("containerd", "state")) + `
# Shims keep their sockets under /run/containerd/s (containerd hard-codes it);
# paddock local down removes the stale ones.

[grpc]
  address = ` + q(d.containerdSocket()) + `

[ttrpc]
  address = ` + q(d.containerdSocket()+".ttrpc") + `

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = ` + q(d.path("containerd", "opt")) + `

[plugins."io.containerd.nri.v1.nri"]
  disable = true

[plugins."io.containerd.grpc.v1.cri"]
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = ` + q(PauseImage) + `

[plugins."io.containerd.cri.v1.runtime"]
  # kubelet asks for negative OOM scores; without CAP_SYS_RESOURCE they cannot be
  # set, so keep them no lower than containerd's own.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_selinux = false
  disable_apparmor = true
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = [` + strings.Join(bins, ", ") + `]
    conf_dir = ` + q(d.cniConf()) + `
    max_conf_num = 1
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = ` + q(runcBinary) + `
        Root = ` + q(d.path("runc")) + `
        SystemdCgroup = false
    # "gvisor" is the handler of GKE Sandbox's RuntimeClass; "runsc" its usual name.
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.gvisor]
      runtime_type = "io.containerd.runsc.v1"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.gvisor.options]
        TypeUrl = "io.containerd.runsc.v1.options"
        ConfigPath = ` + q(d.runscConfig()) + `
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runsc]
      runtime_type = "io.containerd.runsc.v1"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runsc.options]
        TypeUrl = "io.containerd.runsc.v1.options"
        ConfigPath = ` + q(d.runscConfig()) + `
`
}

// runscConfigTOML is the runsc shim's configuration: the pinned runsc, its state
// and logs under Dir/node, and the systrap platform (KVM needs hardware
// virtualisation that nested machines often lack, and hangs there).
func runscConfigTOML(d nodeDirs, runsc string) string {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	return `# Written by paddock (localcluster): gVisor for RuntimeClass gvisor.
binary_name = ` + q(runsc) + `
root = ` + q(d.path("runsc", "root")) + `
log_path = ` + q(d.path("runsc", "logs")+"/shim-%ID%.log") + `
log_level = "info"

[runsc_config]
  platform = "systrap"
  root = ` + q(d.path("runsc", "root")) + `
  debug-log = ` + q(d.path("runsc", "logs")+"/") + `
`
}

// kubeletConfigYAML is the kubelet's configuration: cgroupfs under the cluster's
// cgroup root, cgroup v1 allowed, the API server's client CA for authentication,
// nothing listening beyond the node IP, pod logs and state under Dir/node, and
// the cluster resolver's fixed address in every pod's resolv.conf.
func kubeletConfigYAML(d nodeDirs, cluster, clientCA string, nn nodeNet) string {
	return fmt.Sprintf(`# Written by paddock (localcluster): the local stack's real node.
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 0
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: %q
authorization:
  mode: AlwaysAllow
cgroupDriver: cgroupfs
cgroupRoot: %s
cgroupsPerQOS: true
failCgroupV1: false
containerRuntimeEndpoint: unix://%s
podLogsDir: %q
staticPodPath: ""
failSwapOn: false
makeIPTablesUtilChains: false
# Pods (dnsPolicy ClusterFirst, the default) get "nameserver %s" and
# "search <namespace>.svc.%s svc.%s %s": the kube-dns Service's
# address, which the Cilium agent sends to the resolver pod. Nothing of the
# machine's own resolv.conf.
clusterDNS:
- %s
clusterDomain: %s
resolvConf: ""
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "100Mi"
evictionSoftGracePeriod: {}
enforceNodeAllocatable: ["pods"]
# Templates request and limit ephemeral storage; without isolation the node
# reports no ephemeral-storage capacity and such pods never schedule.
localStorageCapacityIsolation: true
protectKernelDefaults: false
oomScoreAdj: 0
maxPods: 110
registerNode: true
registerWithTaints:
- key: %s
  value: %s
  effect: NoSchedule
`, nn.NodeIP, clientCA, cgroupRoot(cluster), d.containerdSocket(), d.podLogs(),
		DNSServiceIP, ClusterDomain, ClusterDomain, ClusterDomain, DNSServiceIP, ClusterDomain,
		gvisorLabelKey, gvisorLabelValue)
}

// kubeletArgs is the kubelet command line (what KubeletConfiguration cannot say).
// The node registers itself with the GKE Sandbox label and taint, like the kwok node.
func kubeletArgs(d nodeDirs, cluster, kubeconfig string, nn nodeNet) []string {
	return []string{
		"--config", d.kubeletConfig(),
		"--kubeconfig", kubeconfig,
		"--root-dir", d.kubeletRoot(),
		"--cert-dir", d.path("kubelet", "pki"),
		"--hostname-override", nodeName(cluster, 0),
		"--node-ip", nn.NodeIP,
		// A kubelet may not set labels in the kubernetes.io namespace
		// (app.kubernetes.io/managed-by): Up adds that one once the node exists.
		"--node-labels", strings.Join([]string{
			gvisorLabelKey + "=" + gvisorLabelValue,
			"paddock.dev/local-cluster=" + cluster,
			RealNodeLabel + "=real",
		}, ","),
		"--v", "1",
	}
}

// containerdArgs is containerd's command line.
func containerdArgs(d nodeDirs) []string {
	return []string{"--config", d.containerdConfig(), "--log-level", "info"}
}

// writeNodeFiles writes the real node's configuration and images under Dir/node.
func (c *cluster) writeNodeFiles() error {
	d := c.nodeDirs()
	for _, p := range []string{d.path("containerd"), d.path("runsc", "logs"), d.path("kubelet", "pki"), d.kubeletRoot(), d.podLogs(), d.cniConf(), d.path("runc")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return err
		}
	}
	// The agent writes the CNI configuration itself once it is ready; its
	// plugin is in the pinned build's bin directory.
	cni := c.state.Binaries["cilium-cni"]
	if p, err := filepath.EvalSymlinks(cni); err == nil {
		cni = p
	}
	files := map[string]string{
		d.runscConfig():      runscConfigTOML(d, c.state.Binaries["runsc"]),
		d.kubeletConfig():    kubeletConfigYAML(d, c.name, c.pki(pkiCA, ".crt"), c.state.NodeNet),
		d.containerdConfig(): containerdConfigTOML(d, filepath.Dir(cni)),
	}
	for p, body := range files {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return err
		}
	}
	if err := c.writeClangShim(); err != nil {
		return err
	}
	return writeNodeImages(d.images(), busyboxBinary, c.state.Binaries)
}
