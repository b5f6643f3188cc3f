// The Cilium dataplane's agent (see dataplane.go): its command line, what it
// needs on the host before it starts, and what Down undoes after it. Facts it
// rests on, measured on this machine kind: the agent compiles its BPF programs at
// run time with a binary named exactly `clang` from PATH; it needs bpffs at
// /sys/fs/bpf and a cgroup2 mount; it writes 1 to
// kernel.unprivileged_bpf_disabled, which nobody can undo until reboot, so it
// runs in a mount namespace of its own where a file is bound over that sysctl;
// it moves the `lookup local` ip rule to preference 100 and adds its own; and
// it leaves CILIUM_* iptables chains and an nftables table behind.

package localcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// ciliumClangDir holds Debian's clang-19 (the LLVM release upstream's image
// ships); the agent finds `clang` there through its PATH.
const ciliumClangDir = "/usr/lib/llvm-19/bin"

var ciliumClang = filepath.Join(ciliumClangDir, "clang")

// Commands the Cilium dataplane's host side runs besides the node's usual ones.
var ciliumHostCommands = []struct{ Name, Package string }{
	{"unshare", "util-linux"},
	{"nft", "nftables"},
}

const (
	bpffsRoot = "/sys/fs/bpf"
	// unprivBPFSysctl is the sysctl the agent sets and nobody can reset.
	unprivBPFSysctl = "/proc/sys/kernel/unprivileged_bpf_disabled"
	// ciliumCNIConf is the CNI configuration the agent writes once it is
	// ready (and removes when it stops): until containerd has it, the node
	// stays NotReady. The agent writes it beside itself and the supervisor
	// moves each version into containerd's directory whole (syncCNIConf):
	// containerd, watching that directory, once missed the agent's own
	// write-then-rename and never became ready.
	ciliumCNIConf = "05-cilium.conflist"
)

func (d nodeDirs) ciliumLib() string          { return d.path("cilium", "lib") }
func (d nodeDirs) ciliumCNIStaged() string    { return d.path("cilium", "cni", ciliumCNIConf) }
func (d nodeDirs) ciliumSysctlShield() string { return d.path("cilium", "unprivileged_bpf_disabled") }

// ciliumShare is the pinned build's share/cilium (the BPF sources the agent
// compiles, the CRDs it needs), beside its bin directory.
func ciliumShare(agentBin string) string {
	if p, err := filepath.EvalSymlinks(agentBin); err == nil {
		agentBin = p
	}
	return filepath.Join(filepath.Dir(filepath.Dir(agentBin)), "share", "cilium")
}

// cgroup2Mount is where the unified cgroup hierarchy is mounted ("" if nowhere).
func cgroup2Mount() string {
	for _, m := range mounts() {
		if m.fstype == "cgroup2" {
			return m.point
		}
	}
	return ""
}

// ciliumAgentArgs is the agent's command line: one node, IPv4, native routing
// on the node's bridge and nothing else (left alone it would take the machine's
// own interface), no operator (CRD identities, the node's PodCIDR from
// kube-controller-manager), no masquerade, kube-proxy replacement for the
// cluster's Services (socket load balancing in the host's namespace only: gVisor
// pods cannot use it), the kernel's routing and netfilter on the way off the
// node (so the pod guard applies), no Hubble, Envoy or health prober, and its
// listeners on loopback.
func ciliumAgentArgs(d nodeDirs, logs, kubeconfig, cgroupRoot string, nn nodeNet) []string {
	return []string{
		"--k8s-kubeconfig-path=" + kubeconfig,
		"--identity-allocation-mode=crd",
		"--ipam=kubernetes",
		"--k8s-require-ipv4-pod-cidr=true",
		"--routing-mode=native",
		"--ipv4-native-routing-cidr=" + nn.PodCIDR,
		"--auto-direct-node-routes=false",
		"--enable-ipv4=true",
		"--enable-ipv6=false",
		"--devices=" + nn.Bridge,
		"--enable-ipv4-masquerade=false",
		"--enable-bpf-masquerade=false",
		"--enable-host-legacy-routing=true",
		"--kube-proxy-replacement=true",
		"--bpf-lb-sock-hostns-only=true",
		"--enable-health-checking=false",
		"--enable-endpoint-health-checking=false",
		"--enable-l7-proxy=true",
		"--disable-envoy-version-check=true",
		// Hubble only for its drop counter by source namespace, on loopback:
		// a tenant's policy drops are a signal (the PaddockSandboxPolicyDrops
		// alert reads hubble_drop_total{source=<namespace>}).
		"--enable-hubble=true",
		"--hubble-monitor-events=drop",
		"--hubble-metrics=drop:sourceContext=namespace",
		"--hubble-metrics-server=127.0.0.1:" + strconv.Itoa(nn.HubbleMetricsPort),
		"--enable-gops=false",
		"--prometheus-serve-addr=127.0.0.1:" + strconv.Itoa(nn.AgentMetricsPort),
		"--agent-health-port=" + strconv.Itoa(nn.AgentHealthPort),
		"--cni-exclusive=false",
		"--write-cni-conf-when-ready=" + d.ciliumCNIStaged(),
		"--cni-log-file=" + filepath.Join(logs, "cilium-cni.log"),
		"--cgroup-root=" + cgroupRoot,
		"--lib-dir=" + d.ciliumLib(),
	}
}

// ciliumAgentProc runs the agent in a mount namespace of its own, in which
// shield is bound over kernel.unprivileged_bpf_disabled: the agent's write
// lands in the file and the machine's setting stays as it was. unshare and sh
// exec in turn, so the supervisor's pid is the agent's.
func ciliumAgentProc(agentBin, shield string, args, env []string) nodeProcSpec {
	script := `mount --bind "$1" ` + unprivBPFSysctl + ` && shift && exec "$@"`
	argv := append([]string{"--mount", "--propagation", "private", "--", "/bin/sh", "-c", script, "cilium-agent", shield, agentBin}, args...)
	exe := agentBin
	if p, err := filepath.EvalSymlinks(agentBin); err == nil {
		exe = p
	}
	return nodeProcSpec{Name: "cilium-agent", Bin: "unshare", Args: argv, Env: env, Exe: exe}
}

// prepareCiliumHost readies the machine for the agent: bpffs mounted (noting
// whether Paddock mounted it), the sysctl shield, the lib directory holding the
// pinned BPF sources, and the pod guard before anything can forward.
func (c *cluster) prepareCiliumHost(d nodeDirs, nn nodeNet, rec *hostRecord) error {
	mounted := false
	for _, m := range mounts() {
		if m.point == bpffsRoot && m.fstype == "bpf" {
			mounted = true
		}
	}
	if !mounted {
		if _, err := run("mount", "-t", "bpf", "bpf", bpffsRoot); err != nil {
			return fmt.Errorf("mount bpffs at %s (the agent pins its maps there): %w", bpffsRoot, err)
		}
		rec.BPFMounted = true
		if err := writeJSON(d.hostFile(), rec); err != nil {
			return err
		}
	}
	cur, err := os.ReadFile(unprivBPFSysctl)
	if err != nil {
		return fmt.Errorf("read %s: %w", unprivBPFSysctl, err)
	}
	if err := os.MkdirAll(d.ciliumLib(), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(d.ciliumSysctlShield(), cur, 0o644); err != nil {
		return err
	}
	bpf := filepath.Join(ciliumShare(c.state.Binaries["cilium-agent"]), "bpf")
	if _, err := os.Stat(filepath.Join(bpf, "bpf_lxc.c")); err != nil {
		return fmt.Errorf("the pinned Cilium build has no BPF sources at %s: run `make tool-cilium`", bpf)
	}
	link := filepath.Join(d.ciliumLib(), "bpf")
	if t, err := os.Readlink(link); err != nil || t != bpf {
		_ = os.Remove(link)
		if err := os.Symlink(bpf, link); err != nil {
			return err
		}
	}
	return applyPodGuard(nn)
}

// podGuard names the chain that keeps pods' traffic on the machine.
func podGuardChain(nn nodeNet) string {
	return "PADDOCK-PODS-" + strings.TrimPrefix(nn.Bridge, "pdk-")
}

// podGuardRules are the guard's rules: what the kernel forwards from the pod
// range may go to another pod (the agent's lxc links and its own), to a network
// namespace a test made (WorldLinkPrefix), and nowhere else. Cilium enables
// ip_forward for the whole machine; this is why that reaches nothing beyond it.
func podGuardRules(chain string) []string {
	return []string{
		"-A " + chain + " -o lxc+ -j RETURN",
		"-A " + chain + " -o cilium_+ -j RETURN",
		"-A " + chain + " -o " + WorldLinkPrefix + "+ -j RETURN",
		"-A " + chain + ` -m comment --comment "paddock: pods reach nothing beyond the node" -j DROP`,
	}
}

// podGuardRestore is the `iptables-restore --noflush` input that brings save to
// the guard ("" when it is in place). Pure, for the unit tests.
func podGuardRestore(save string, nn nodeNet) string {
	chain := podGuardChain(nn)
	want := podGuardRules(chain)
	t := parseSaved(save)
	var lines []string
	have, ok := t["mangle"][chain]
	same := ok && len(have) == len(want)
	for i := 0; same && i < len(want); i++ {
		w := splitRule(strings.TrimPrefix(want[i], "-A "+chain+" "))
		same = strings.Join(w, "\x00") == strings.Join(have[i], "\x00")
	}
	if !same {
		lines = append(lines, ":"+chain+" - [0:0]")
		lines = append(lines, want...)
	}
	jumped := false
	for _, r := range t["mangle"]["FORWARD"] {
		src, neg, _ := flagValue(r, "-s")
		if v, _, _ := flagValue(r, "-j"); v == chain && src == nn.PodCIDR && !neg {
			jumped = true
		}
	}
	if !jumped {
		lines = append(lines, "-I FORWARD 1 -s "+nn.PodCIDR+" -j "+chain)
	}
	if len(lines) == 0 {
		return ""
	}
	return "*mangle\n" + strings.Join(lines, "\n") + "\nCOMMIT\n"
}

func applyPodGuard(nn nodeNet) error {
	save, err := exec.Command("iptables-save").Output()
	if err != nil {
		return fmt.Errorf("iptables-save: %w", err)
	}
	in := podGuardRestore(string(save), nn)
	if in == "" {
		return nil
	}
	cmd := exec.Command("iptables-restore", "-w", "--noflush")
	cmd.Stdin = strings.NewReader(in)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("install the pod guard: iptables-restore: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ipRule is one line of `ip -4 rule show`: its preference and the rest.
type ipRule struct {
	Pref int    `json:"pref"`
	Spec string `json:"spec"`
}

func parseIPRules(out string) []ipRule {
	var rules []ipRule
	for _, l := range strings.Split(out, "\n") {
		pref, spec, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok {
			continue
		}
		p, err := strconv.Atoi(pref)
		if err != nil {
			continue
		}
		rules = append(rules, ipRule{p, strings.Join(strings.Fields(spec), " ")})
	}
	return rules
}

func ipRules() []ipRule {
	out, err := exec.Command("ip", "-4", "rule", "show").Output()
	if err != nil {
		return nil
	}
	return parseIPRules(string(out))
}

// ipRuleRepairs are the `ip` commands that bring the rules now back to before:
// missing rules are added first (the `lookup local` one above all: deleting the
// agent's copy of it at 100 while none is at 0 would cut the machine off its
// own addresses), then the rules before lacked are deleted, then the routing
// tables only those rules used are flushed. Pure, for the unit tests.
func ipRuleRepairs(before, now []ipRule) [][]string {
	has := func(list []ipRule, r ipRule) bool {
		for _, x := range list {
			if x == r {
				return true
			}
		}
		return false
	}
	tables := func(list []ipRule) map[string]bool {
		m := map[string]bool{}
		for _, r := range list {
			f := strings.Fields(r.Spec)
			for i := 0; i+1 < len(f); i++ {
				if f[i] == "lookup" {
					m[f[i+1]] = true
				}
			}
		}
		return m
	}
	var add, del, flush [][]string
	for _, r := range before {
		if !has(now, r) {
			add = append(add, append([]string{"-4", "rule", "add", "pref", strconv.Itoa(r.Pref)}, strings.Fields(r.Spec)...))
		}
	}
	var gone []ipRule
	for _, r := range now {
		if !has(before, r) {
			del = append(del, append([]string{"-4", "rule", "del", "pref", strconv.Itoa(r.Pref)}, strings.Fields(r.Spec)...))
			gone = append(gone, r)
		}
	}
	kept := tables(before)
	for t := range tables(gone) {
		if _, err := strconv.Atoi(t); err == nil && !kept[t] {
			flush = append(flush, []string{"-4", "route", "flush", "table", t})
		}
	}
	sortArgs(flush)
	return append(append(add, del...), flush...)
}

func sortArgs(cmds [][]string) {
	for i := 1; i < len(cmds); i++ {
		for j := i; j > 0 && strings.Join(cmds[j], " ") < strings.Join(cmds[j-1], " "); j-- {
			cmds[j], cmds[j-1] = cmds[j-1], cmds[j]
		}
	}
}

// nftTables lists "family name" for every nftables table (nil without nft).
func nftTables() []string {
	out, err := exec.Command("nft", "list", "tables").Output()
	if err != nil {
		return nil
	}
	tables := []string{} // listed, even if none: not nil
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "table" {
			tables = append(tables, f[1]+" "+f[2])
		}
	}
	return tables
}

// nftTableHasRules says whether table ("family name") holds any rule.
func nftTableHasRules(table string) (bool, error) {
	out, err := exec.Command("nft", append([]string{"-j", "list", "table"}, strings.Fields(table)...)...).Output()
	if err != nil {
		return false, err
	}
	var doc struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return false, err
	}
	for _, o := range doc.Nftables {
		if _, ok := o["rule"]; ok {
			return true, nil
		}
	}
	return false, nil
}

// cleanupCilium undoes what the agent did to the machine, once every node
// process is gone and the pods' namespaces unmounted: its pinned maps, links,
// routes and state (by cilium-dbg itself), its ip rules, its iptables chains
// (by cleanupHost's chain removal), the empty nftables tables iptables-nft left
// behind, and bpffs when Paddock mounted it.
func (c *cluster) cleanupCilium(rec hostRecord) error {
	var errs []error
	dbg := ""
	if c.state != nil {
		dbg = c.state.Binaries["cilium-dbg"]
	}
	if err := removeStaleAgentPidfile(ciliumPidfile, c.state.Binaries["cilium-agent"]); err != nil {
		errs = append(errs, err)
	}
	if dbg != "" {
		if out, err := exec.Command(dbg, "post-uninstall-cleanup", "--all-state", "--force").CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("cilium-dbg post-uninstall-cleanup: %v: %s", err, strings.TrimSpace(string(out))))
		}
	}
	for _, args := range ipRuleRepairs(rec.IPRules, ipRules()) {
		if _, err := run("ip", args...); err != nil {
			errs = append(errs, err)
		}
	}
	if rec.NFTables != nil {
		for _, t := range nftTables() {
			if contains(rec.NFTables, t) {
				continue
			}
			if used, err := nftTableHasRules(t); err == nil && !used {
				if _, err := run("nft", append([]string{"delete", "table"}, strings.Fields(t)...)...); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	// A `local down` run again after a failure finds it unmounted already.
	if rec.BPFMounted && mountedAt(bpffsRoot, "bpf") {
		if _, err := run("umount", bpffsRoot); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ciliumPidfile is where the agent records its pid; it removes the file as it
// stops, but not when it dies (a crash loop the supervisor ended).
const ciliumPidfile = "/var/run/cilium/cilium.pid"

// removeStaleAgentPidfile removes the agent's pidfile when no agent of this
// build runs under that pid: cilium-dbg's cleanup refuses to run while the
// file exists, and `local down` stops the agent before it gets here.
func removeStaleAgentPidfile(pidfile, agentBin string) error {
	b, err := os.ReadFile(pidfile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
		if info, err := inspect(pid); err == nil && info.State != 'Z' && (agentBin == "" || info.Exe == resolveExe(agentBin)) {
			return fmt.Errorf("a Cilium agent still runs as pid %d (%s): stop it, then run `paddock local down` again", pid, pidfile)
		}
	}
	if err := os.Remove(pidfile); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the stale Cilium agent pidfile: %w", err)
	}
	return nil
}

// syncCNIConf brings containerd's copy of the agent's CNI configuration to the
// agent's: installed by a rename (one event, a whole file) when it is missing
// or differs, removed when the agent removed its own. It reports what it did
// ("" when nothing).
func syncCNIConf(staged, confDir string) (string, error) {
	want, err := os.ReadFile(staged)
	dst := filepath.Join(confDir, ciliumCNIConf)
	if errors.Is(err, os.ErrNotExist) {
		if rerr := os.Remove(dst); rerr == nil {
			return "removed the CNI configuration the agent withdrew", nil
		} else if !errors.Is(rerr, os.ErrNotExist) {
			return "", rerr
		}
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if have, err := os.ReadFile(dst); err == nil && string(have) == string(want) {
		return "", nil
	}
	// A name containerd's loader skips (no .conf/.conflist/.json suffix), in the
	// same directory so the rename is atomic.
	tmp := filepath.Join(confDir, "."+ciliumCNIConf+".paddock-tmp")
	if err := os.WriteFile(tmp, want, 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dst); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return "installed the agent's CNI configuration for containerd", nil
}
