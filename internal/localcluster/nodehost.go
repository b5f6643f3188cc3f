// The host side of the real node: what Up changes on the machine before the node
// starts, recorded in Dir/node/host.json, and what Down undoes. Everything the node
// creates lives under Dir, under the cgroup root /paddock-NAME, on the bridge
// pdk-XXXXXXXX, in iptables chains and ipsets that did not exist before Up, in
// the pod guard's chain, in what the Cilium agent leaves (cleanupCilium), or in
// the few places the programs hard-code (/var/log/containers, /run/containerd/s):
// Down removes exactly those, and what a node of the kube-router era left
// (dataplane.go).

package localcluster

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// hostRecord is Dir/node/host.json.
type hostRecord struct {
	Net nodeNet `json:"net"`
	// Sysctls changed while the node ran are put back to these values.
	Sysctls map[string]string `json:"sysctls"`
	// Chains (table/chain) and ipsets that existed before Up: never removed.
	Chains []string `json:"chains"`
	IPSets []string `json:"ipsets"`
	// RunContainerd and VarLibCNI say whether /run/containerd and /var/lib/cni
	// existed before Up.
	RunContainerd    bool `json:"runContainerd"`
	VarLibCNI        bool `json:"varLibCNI"`
	VarLogContainers bool `json:"varLogContainers"`
	// BridgeCreated is set once the bridge exists (created by Up).
	BridgeCreated bool `json:"bridgeCreated"`
	// The Cilium agent's: the ip rules and nftables tables before Up (nil
	// NFTables: nft could not list them; both nil in the record of a node of
	// the kube-router era), and whether Up mounted bpffs.
	IPRules    []ipRule `json:"ipRules,omitempty"`
	NFTables   []string `json:"nfTables"`
	BPFMounted bool     `json:"bpfMounted,omitempty"`
}

// Sysctls the node's programs change, or may: the Cilium agent (ip_forward and
// the last two), the kubelet (its kernel tunables: overcommit, panic on oops, key
// quotas), and bridged traffic through iptables, which nodes of the kube-router
// era switched on. Down puts back any that changed.
var nodeSysctls = []string{
	"net/ipv4/ip_forward",
	"net/bridge/bridge-nf-call-iptables",
	"net/bridge/bridge-nf-call-ip6tables",
	"net/ipv4/conf/all/route_localnet",
	"vm/overcommit_memory",
	"vm/panic_on_oom",
	"kernel/panic",
	"kernel/panic_on_oops",
	"kernel/keys/root_maxkeys",
	"kernel/keys/root_maxbytes",
	// The Cilium agent's.
	"net/ipv4/fib_multipath_use_neigh",
	"kernel/timer_migration",
}

// Chain and ipset name prefixes the node's programs create (KUBE-: Kubernetes'
// own, and kube-router's on nodes of its era); only those created after Up are
// removed.
var nodeChainPrefixes = []string{"KUBE-", "CNI-", "CILIUM_"}

func ownedName(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func readSysctl(key string) (string, bool) {
	b, err := os.ReadFile(filepath.Join("/proc/sys", key))
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

func writeSysctl(key, v string) error {
	return os.WriteFile(filepath.Join("/proc/sys", key), []byte(v+"\n"), 0o644)
}

// run runs a command and returns its combined output as the error text.
func run(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// iptablesChains lists table/chain for every chain iptables-save shows.
func iptablesChains() []string {
	out, err := exec.Command("iptables-save").Output()
	if err != nil {
		return nil
	}
	return parseChains(string(out))
}

func parseChains(save string) []string {
	var chains []string
	table := ""
	for _, l := range strings.Split(save, "\n") {
		switch {
		case strings.HasPrefix(l, "*"):
			table = strings.TrimPrefix(l, "*")
		case strings.HasPrefix(l, ":"):
			name := strings.Fields(strings.TrimPrefix(l, ":"))[0]
			chains = append(chains, table+"/"+name)
		}
	}
	sort.Strings(chains)
	return chains
}

func ipsetNames() []string {
	out, err := exec.Command("ipset", "list", "-n").Output()
	if err != nil {
		return nil
	}
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			names = append(names, l)
		}
	}
	sort.Strings(names)
	return names
}

// mount is one line of /proc/self/mountinfo: where it is mounted and its
// filesystem type.
type mount struct{ point, fstype string }

// mounts reads /proc/self/mountinfo (nil where it cannot be read).
func mounts() []mount {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 1 {
			continue
		}
		out = append(out, mount{point: unescapeMount(pf[4]), fstype: qf[0]})
	}
	return out
}

// mountedAt reports whether a filesystem of type fstype is mounted at point.
func mountedAt(point, fstype string) bool {
	for _, m := range mounts() {
		if m.point == point && m.fstype == fstype {
			return true
		}
	}
	return false
}

// cgroupMounts returns the mount points of every cgroup hierarchy (v1 controllers,
// named hierarchies and the v2 unified one).
func cgroupMounts() []string {
	var out []string
	for _, m := range mounts() {
		if m.fstype == "cgroup" || m.fstype == "cgroup2" {
			out = append(out, m.point)
		}
	}
	return out
}

// mountsUnder returns every mount point under dir, deepest first.
func mountsUnder(dir string) []string {
	var out []string
	for _, m := range mounts() {
		if m.point == dir || strings.HasPrefix(m.point, dir+"/") {
			out = append(out, m.point)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// prepareHost records what the node may change and creates the bridge and the
// cgroup roots. It is called by Up before the node starts; a second call (Up on a
// node that was prepared) keeps the first record.
func (c *cluster) prepareHost(d nodeDirs, nn nodeNet) error {
	var rec hostRecord
	if b, err := os.ReadFile(d.hostFile()); err == nil {
		if err := json.Unmarshal(b, &rec); err != nil {
			return err
		}
	} else {
		rec = hostRecord{Net: nn, Sysctls: map[string]string{}}
		for _, k := range nodeSysctls {
			if v, ok := readSysctl(k); ok {
				rec.Sysctls[k] = v
			}
		}
		rec.Chains = iptablesChains()
		rec.IPSets = ipsetNames()
		_, err := os.Stat("/run/containerd")
		rec.RunContainerd = err == nil
		_, err = os.Stat("/var/lib/cni")
		rec.VarLibCNI = err == nil
		_, err = os.Stat("/var/log/containers")
		rec.VarLogContainers = err == nil
		rec.IPRules = ipRules()
		rec.NFTables = nftTables()
		if err := writeJSON(d.hostFile(), &rec); err != nil {
			return err
		}
	}
	// The bridge carries the node IP: the kubelet's address, and the agent's only
	// device.
	if _, err := net.InterfaceByName(nn.Bridge); err != nil {
		if _, err := run("ip", "link", "add", nn.Bridge, "type", "bridge"); err != nil {
			return fmt.Errorf("create bridge %s: %w", nn.Bridge, err)
		}
	}
	rec.BridgeCreated = true
	if err := writeJSON(d.hostFile(), &rec); err != nil {
		return err
	}
	if out, err := run("ip", "-4", "addr", "show", "dev", nn.Bridge); err != nil || !strings.Contains(out, " "+nn.NodeIP+"/") {
		if _, err := run("ip", "addr", "add", nn.NodeIP+"/24", "dev", nn.Bridge); err != nil {
			return fmt.Errorf("address bridge %s: %w", nn.Bridge, err)
		}
	}
	if _, err := run("ip", "link", "set", nn.Bridge, "up"); err != nil {
		return err
	}
	if err := c.prepareCiliumHost(d, nn, &rec); err != nil {
		return err
	}
	for _, mp := range cgroupMounts() {
		for _, cg := range []string{cgroupRoot(c.name), nodeCgroup(c.name)} {
			p := filepath.Join(mp, cg)
			if err := os.MkdirAll(p, 0o755); err != nil {
				return fmt.Errorf("create cgroup %s: %w", p, err)
			}
			// A new cpuset cgroup (v1) starts without CPUs or memory nodes: copy the
			// parent's, or no process may join it.
			if filepath.Base(mp) == "cpuset" {
				for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
					if cur, _ := os.ReadFile(filepath.Join(p, f)); strings.TrimSpace(string(cur)) == "" {
						parent, _ := os.ReadFile(filepath.Join(filepath.Dir(p), f))
						_ = os.WriteFile(filepath.Join(p, f), parent, 0o644)
					}
				}
			}
		}
	}
	return nil
}

// joinNodeCgroup moves pid into the node's own cgroup in every hierarchy, so that
// Down finds it and everything it starts (shims, sandboxes).
func joinNodeCgroup(cluster string, pid int) error {
	var errs []error
	for _, mp := range cgroupMounts() {
		p := filepath.Join(mp, nodeCgroup(cluster), "cgroup.procs")
		if err := os.WriteFile(p, []byte(strconv.Itoa(pid)), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// cgroupPIDs lists every pid in the cgroup tree under cg, in any hierarchy.
func cgroupPIDs(cg string) []int {
	seen := map[int]bool{}
	var pids []int
	for _, mp := range cgroupMounts() {
		root := filepath.Join(mp, cg)
		_ = filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
			if err != nil || !e.IsDir() {
				return nil
			}
			b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && !seen[pid] && pid != os.Getpid() {
					seen[pid] = true
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	return pids
}

// cleanupHost removes every trace of the real node from the machine. It is safe to
// run when the node never started, or half started, and twice.
func (c *cluster) cleanupHost(d nodeDirs) error {
	var rec hostRecord
	recorded := false
	if b, err := os.ReadFile(d.hostFile()); err == nil && json.Unmarshal(b, &rec) == nil {
		recorded = true
	} else {
		rec.Net = planNodeNet(c.name)
	}
	var errs []error

	// 1. Every process in the node's cgroups: pods, sandboxes, shims, and the node
	// processes should the supervisor not have stopped them.
	cg := cgroupRoot(c.name)
	for i := 0; i < 50; i++ {
		pids := cgroupPIDs(cg)
		if len(pids) == 0 {
			break
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if left := cgroupPIDs(cg); len(left) > 0 {
		errs = append(errs, fmt.Errorf("processes %v in cgroup %s survived SIGKILL", left, cg))
	}
	// Processes of the node that escaped its cgroup (none should): recognised by
	// their binary and a command line naming Dir/node.
	c.killNodeStragglers(d)

	// 2. Every KUBE-*/CNI-*/CILIUM_* chain and ipset that did not exist before Up
	// (a node of the kube-router era: kube-router's firewall too), and the chains
	// named after the bridge, always the node's: the pod guard's, and those of the
	// kube-router era's DNS address (retiredChains).
	isNew, named := createdSince(rec.Chains), append(retiredChains(rec.Net), "mangle/"+podGuardChain(rec.Net))
	if err := removeChains(func(tc string) bool { return contains(named, tc) || (recorded && isNew(tc)) }); err != nil {
		errs = append(errs, err)
	}
	if recorded {
		for _, s := range ipsetNames() {
			if ownedName(strings.TrimPrefix(s, "inet6:"), nodeChainPrefixes) && !contains(rec.IPSets, s) {
				if _, err := run("ipset", "destroy", s); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}

	// 3. Mounts under Dir (pod volumes, overlay snapshots, network namespaces).
	for _, mp := range mountsUnder(c.dir) {
		if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", mp, err))
		}
	}

	// 4. What the programs write outside Dir: kubelet's /var/log/containers links
	// into Dir's pod logs, and shim sockets no process serves any more.
	if entries, err := os.ReadDir("/var/log/containers"); err == nil {
		for _, e := range entries {
			p := filepath.Join("/var/log/containers", e.Name())
			if t, err := os.Readlink(p); err == nil && strings.HasPrefix(t, c.dir+"/") {
				_ = os.Remove(p)
			}
		}
	}
	// libcni caches each attachment in /var/lib/cni/results/NETWORK-ID-IFNAME, for
	// the pod network and for containerd's own "cni-loopback": the IDs are the
	// sandboxes' containerd made, each named in its log. A node of the
	// kube-router era named its network after its bridge.
	ids := containerIDs(filepath.Join(c.logsDir(), "containerd.log"))
	network := ""
	if !rec.Net.cilium() {
		network = "paddock-" + rec.Net.Bridge
	}
	if entries, err := os.ReadDir("/var/lib/cni/results"); err == nil {
		for _, e := range entries {
			if ownedCNIResult(e.Name(), network, ids) {
				_ = os.Remove(filepath.Join("/var/lib/cni/results", e.Name()))
			}
		}
	}
	if recorded && !rec.VarLogContainers {
		_ = os.Remove("/var/log/containers") // only when empty
	}
	if recorded && !rec.VarLibCNI {
		_ = os.Remove("/var/lib/cni/results")
		_ = os.Remove("/var/lib/cni")
	}
	removeDeadSockets("/run/containerd/s")
	if recorded && !rec.RunContainerd {
		_ = os.Remove("/run/containerd/s")
		_ = os.Remove("/run/containerd")
	}

	// 4b. What the Cilium agent left: its maps, links, routes and state, its ip
	// rules, empty nftables tables, bpffs (cleanupCilium). A node of the
	// kube-router era ran no agent.
	if recorded && rec.Net.cilium() {
		if err := c.cleanupCilium(rec); err != nil {
			errs = append(errs, err)
		}
	}

	// 5. The bridge (the pods' veths went with their network namespaces).
	if _, err := net.InterfaceByName(rec.Net.Bridge); err == nil {
		if _, err := run("ip", "link", "del", rec.Net.Bridge); err != nil {
			errs = append(errs, err)
		}
	}

	// 6. The cgroups, deepest first, in every hierarchy.
	for _, mp := range cgroupMounts() {
		root := filepath.Join(mp, cg)
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
			if err == nil && e.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, p := range dirs {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", p, err))
			}
		}
	}

	// 7. Sysctls back to what they were.
	for k, v := range rec.Sysctls {
		if cur, ok := readSysctl(k); ok && cur != v {
			if err := writeSysctl(k, v); err != nil {
				errs = append(errs, fmt.Errorf("restore %s=%s: %w", k, v, err))
			}
		}
	}
	if len(errs) == 0 {
		if err := os.RemoveAll(d.root); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

var hexID = regexp.MustCompile(`[0-9a-f]{64}`)

// containerIDs returns every 64-hex-digit ID a containerd log mentions.
func containerIDs(log string) map[string]bool {
	ids := map[string]bool{}
	b, err := os.ReadFile(log)
	if err != nil {
		return ids
	}
	for _, id := range hexID.FindAllString(string(b), -1) {
		ids[id] = true
	}
	return ids
}

// ownedCNIResult says whether a libcni cache file belongs to this node: it is on
// the node's own network (when it has one: network not ""), or on another
// (cilium, cni-loopback) for one of the node's sandboxes.
func ownedCNIResult(name, network string, ids map[string]bool) bool {
	if network != "" && strings.HasPrefix(name, network+"-") {
		return true
	}
	for _, id := range hexID.FindAllString(name, -1) {
		if ids[id] {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// createdSince says whether table/chain is a KUBE-*/CNI-* chain not in before.
func createdSince(before []string) func(string) bool {
	return func(tc string) bool {
		_, chain, _ := strings.Cut(tc, "/")
		return ownedName(chain, nodeChainPrefixes) && !contains(before, tc)
	}
}

// removeChains deletes every iptables chain owned says is the node's, after
// deleting the rules elsewhere that jump to it.
func removeChains(owned func(tableChain string) bool) error {
	out, err := exec.Command("iptables-save").Output()
	if err != nil {
		return nil // no iptables: nothing was created
	}
	cmds := chainRemovals(string(out), owned)
	var errs []error
	for _, args := range cmds {
		if _, err := run("iptables", args...); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// chainRemovals computes the iptables commands that remove the chains isOwned
// picks (jumps into them from other chains first, then flush, then delete).
// Pure, for the unit tests.
func chainRemovals(save string, isOwned func(tableChain string) bool) [][]string {
	owned := map[string]bool{} // table/chain
	for _, tc := range parseChains(save) {
		if isOwned(tc) {
			owned[tc] = true
		}
	}
	if len(owned) == 0 {
		return nil
	}
	var jumps, flush, del [][]string
	table := ""
	for _, l := range strings.Split(save, "\n") {
		if strings.HasPrefix(l, "*") {
			table = strings.TrimPrefix(l, "*")
			continue
		}
		if !strings.HasPrefix(l, "-A ") {
			continue
		}
		f := strings.Fields(l)
		if len(f) < 2 || owned[table+"/"+f[1]] {
			continue
		}
		for i := 2; i+1 < len(f); i++ {
			if (f[i] == "-j" || f[i] == "-g") && owned[table+"/"+f[i+1]] {
				jumps = append(jumps, append([]string{"-t", table, "-D"}, splitRule(strings.TrimPrefix(l, "-A "))...))
				break
			}
		}
	}
	var keys []string
	for k := range owned {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t, ch, _ := strings.Cut(k, "/")
		flush = append(flush, []string{"-t", t, "-F", ch})
		del = append(del, []string{"-t", t, "-X", ch})
	}
	return append(append(jumps, flush...), del...)
}

// savedRules is iptables-save output by table and chain: each rule's arguments
// after "-A CHAIN". A chain that exists without rules maps to an empty slice.
type savedRules map[string]map[string][][]string

func parseSaved(save string) savedRules {
	t := savedRules{}
	table := ""
	for _, l := range strings.Split(save, "\n") {
		switch {
		case strings.HasPrefix(l, "*"):
			table = strings.TrimPrefix(l, "*")
			if t[table] == nil {
				t[table] = map[string][][]string{}
			}
		case table == "":
		case strings.HasPrefix(l, ":"):
			if f := strings.Fields(l[1:]); len(f) > 0 && t[table][f[0]] == nil {
				t[table][f[0]] = [][]string{}
			}
		case strings.HasPrefix(l, "-A "):
			if f := splitRule(l[3:]); len(f) > 0 {
				t[table][f[0]] = append(t[table][f[0]], f[1:])
			}
		}
	}
	return t
}

// flagValue returns the argument after flag in rule, and whether "!" negates it.
func flagValue(rule []string, flag string) (value string, negated, ok bool) {
	for i := 0; i+1 < len(rule); i++ {
		if rule[i] == flag {
			return rule[i+1], i > 0 && rule[i-1] == "!", true
		}
	}
	return "", false, false
}

// splitRule splits an iptables-save rule into arguments, keeping quoted strings
// (comments) whole.
func splitRule(s string) []string {
	var out []string
	var cur strings.Builder
	inQ, have := false, false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\\' && inQ && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case ch == '"':
			inQ, have = !inQ, true
		case ch == ' ' && !inQ:
			if have {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteByte(ch)
			have = true
		}
	}
	if have {
		out = append(out, cur.String())
	}
	return out
}

// removeDeadSockets removes the unix sockets in dir that no process listens on.
func removeDeadSockets(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if e.Type()&os.ModeSocket == 0 {
			continue
		}
		conn, err := net.DialTimeout("unix", p, 200*time.Millisecond)
		if err == nil {
			conn.Close()
			continue
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			_ = os.Remove(p)
		}
	}
}

// killNodeStragglers SIGKILLs processes running a node binary whose command line
// names Dir/node.
func (c *cluster) killNodeStragglers(d nodeDirs) {
	names := map[string]bool{}
	for _, t := range nodeTools() {
		names[t] = true
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		info, err := inspect(pid)
		if err != nil || !names[filepath.Base(info.Exe)] {
			continue
		}
		if ok, _ := matchBinary(info, info.Exe, d.root); ok {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
