// The cluster DNS address of the real node: every pod's resolv.conf names a fixed
// address, as on GKE, although no Service proxy runs here (no kube-proxy, and the
// kernels this runs on may lack IPVS).
//
// The design, and why:
//
//   - The kubelet writes `nameserver DNSServiceIP` (the conventional kube-dns
//     ClusterIP, inside the API server's service range ServiceCIDR, which the
//     real node's API server is started with) and the cluster.local search path
//     into every pod, and the Service kube-system/kube-dns carries that clusterIP,
//     so the cluster's own view agrees with what pods use. Pointing the kubelet at
//     the resolver pod's IP instead would break every running pod the moment the
//     pod is recreated (its IP changes; resolv.conf is written once per pod).
//   - Paddock is the Service proxy for that one address, in the machine's network
//     namespace, where the node (bridge, kubelet, kube-router) lives: nat
//     PREROUTING (packets from the bridge) and OUTPUT (the machine's own) jump to
//     PADDOCK-DNS-<id>, which DNATs UDP and TCP port 53 to the resolver pod's
//     current IP. Up points it before it returns; the supervisor re-points it
//     within seconds when the pod comes back with another IP, recreates the pod
//     when it is gone, and empties the chain while no resolver runs.
//   - Pods have no route off the bridge, so the CNI configuration gives each one
//     the single route DNSServiceIP/32 via the node IP. A frame to the bridge that
//     is DNATed back onto the bridge is only passed on when the bridge forwards
//     IPv4, so forwarding is switched on for the bridge alone (the machine-wide
//     ip_forward is left as it was), and mangle FORWARD drops, in
//     PADDOCK-NOFWD-<id>, whatever the bridge would route anywhere else: pods
//     still reach each other and the node, nothing beyond. A host route sends
//     DNSServiceIP/32 to the bridge, so that a query no rule rewrote (no resolver
//     yet) dies there instead of leaving the machine.
//   - NetworkPolicy still decides: the DNAT happens in PREROUTING, before
//     kube-router's filter chains, which therefore see the resolver pod's IP as
//     destination. The tenants' DNS rule (kube-system pods labelled
//     k8s-app=kube-dns, port 53) matches it; default deny holds for the rest.
//     Replies are un-DNATed by conntrack as they cross the bridge
//     (bridge-nf-call-iptables, which the node needs anyway).
//
// `paddock local down` removes both chains and the jumps to them; the route and
// the bridge's forwarding setting go with the bridge.

package localcluster

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

const (
	// ServiceCIDR is the real node's service range (the API server's
	// --service-cluster-ip-range, and kube-router's).
	ServiceCIDR = "10.96.0.0/12"
	// DNSServiceName and DNSServiceIP are the cluster resolver's Service in
	// DNSNamespace and the nameserver in every pod's resolv.conf.
	DNSServiceName = "kube-dns"
	DNSServiceIP   = "10.96.0.10"
	// ClusterDomain is the kubelet's clusterDomain: pods search
	// <namespace>.svc.cluster.local, svc.cluster.local and cluster.local.
	ClusterDomain = "cluster.local"
)

// dnsPath names what the machine holds for one node's DNS address.
type dnsPath struct {
	bridge, nodeIP       string
	natChain, guardChain string // at most 28 bytes each
}

func dnsPathFor(nn nodeNet) dnsPath {
	id := strings.TrimPrefix(nn.Bridge, "pdk-")
	return dnsPath{bridge: nn.Bridge, nodeIP: nn.NodeIP, natChain: "PADDOCK-DNS-" + id, guardChain: "PADDOCK-NOFWD-" + id}
}

// owns says whether table/chain is one of this path's chains.
func (p dnsPath) owns(tableChain string) bool {
	return tableChain == "nat/"+p.natChain || tableChain == "mangle/"+p.guardChain
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

func jumpsTo(rules [][]string, chain string) bool {
	for _, r := range rules {
		if v, _, _ := flagValue(r, "-j"); v == chain {
			return true
		}
	}
	return false
}

// dnatMatches says whether rules are exactly the DNAT of UDP and TCP port 53 to
// podIP (none at all when podIP is "").
func dnatMatches(rules [][]string, podIP string) bool {
	if podIP == "" {
		return len(rules) == 0
	}
	if len(rules) != 2 {
		return false
	}
	seen := map[string]bool{}
	for _, r := range rules {
		proto, _, _ := flagValue(r, "-p")
		port, _, _ := flagValue(r, "--dport")
		target, _, _ := flagValue(r, "-j")
		to, _, _ := flagValue(r, "--to-destination")
		if port != "53" || target != "DNAT" || to != net.JoinHostPort(podIP, "53") {
			return false
		}
		seen[proto] = true
	}
	return seen["udp"] && seen["tcp"]
}

func (p dnsPath) guardMatches(rules [][]string) bool {
	if len(rules) != 1 {
		return false
	}
	in, inNeg, _ := flagValue(rules[0], "-i")
	out, outNeg, _ := flagValue(rules[0], "-o")
	target, _, _ := flagValue(rules[0], "-j")
	return in == p.bridge && !inNeg && out == p.bridge && outNeg && target == "DROP"
}

// restoreInput is the `iptables-restore --noflush` input that brings the rules in
// save to this path's: always the forwarding guard, and the DNAT to podIP unless
// withNAT is false. Declaring a chain flushes it, so a chain is rewritten whole,
// in one transaction, or left alone; a missing jump is inserted first in its
// chain. "" when nothing is to change. Pure, for the unit tests.
func (p dnsPath) restoreInput(save, podIP string, withNAT bool) string {
	t := parseSaved(save)
	var b strings.Builder
	vip := DNSServiceIP + "/32"
	if withNAT {
		var lines []string
		if rules, ok := t["nat"][p.natChain]; !ok || !dnatMatches(rules, podIP) {
			lines = append(lines, ":"+p.natChain+" - [0:0]")
			if podIP != "" {
				for _, proto := range []string{"udp", "tcp"} {
					lines = append(lines, fmt.Sprintf(`-A %s -p %s -m %s --dport 53 -m comment --comment "paddock: cluster DNS to the resolver pod" -j DNAT --to-destination %s`,
						p.natChain, proto, proto, net.JoinHostPort(podIP, "53")))
				}
			}
		}
		if !jumpsTo(t["nat"]["PREROUTING"], p.natChain) {
			lines = append(lines, fmt.Sprintf(`-I PREROUTING 1 -i %s -d %s -m comment --comment "paddock: cluster DNS address, from pods" -j %s`, p.bridge, vip, p.natChain))
		}
		if !jumpsTo(t["nat"]["OUTPUT"], p.natChain) {
			lines = append(lines, fmt.Sprintf(`-I OUTPUT 1 -d %s -m comment --comment "paddock: cluster DNS address, from the node" -j %s`, vip, p.natChain))
		}
		if len(lines) > 0 {
			b.WriteString("*nat\n" + strings.Join(lines, "\n") + "\nCOMMIT\n")
		}
	}
	var lines []string
	if rules, ok := t["mangle"][p.guardChain]; !ok || !p.guardMatches(rules) {
		lines = append(lines, ":"+p.guardChain+" - [0:0]",
			fmt.Sprintf(`-A %s -i %s ! -o %s -m comment --comment "paddock: pods reach nothing beyond the node" -j DROP`, p.guardChain, p.bridge, p.bridge))
	}
	if !jumpsTo(t["mangle"]["FORWARD"], p.guardChain) {
		lines = append(lines, fmt.Sprintf("-I FORWARD 1 -i %s -j %s", p.bridge, p.guardChain))
	}
	if len(lines) > 0 {
		b.WriteString("*mangle\n" + strings.Join(lines, "\n") + "\nCOMMIT\n")
	}
	return b.String()
}

// hasHostRoute says whether /proc/net/route (the main table) holds the route
// dst/32 on dev with no gateway. Pure, for the unit tests.
func hasHostRoute(procNetRoute, dev string, dst net.IP) bool {
	want := dst.To4()
	if want == nil {
		return false
	}
	for _, l := range strings.Split(procNetRoute, "\n")[1:] {
		f := strings.Fields(l)
		if len(f) < 8 || f[0] != dev {
			continue
		}
		d, gw, mask := procRouteIP(f[1]), procRouteIP(f[2]), procRouteIP(f[7])
		if d.Equal(want) && gw.Equal(net.IPv4zero) && mask.Equal(net.IPv4(255, 255, 255, 255)) {
			return true
		}
	}
	return false
}

// procRouteIP decodes an address of /proc/net/route: the four bytes in network
// order, printed as a host-order number.
func procRouteIP(s string) net.IP {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 4 {
		return nil
	}
	ip := make(net.IP, 4)
	binary.NativeEndian.PutUint32(ip, binary.BigEndian.Uint32(b))
	return ip
}

// applyDNSPath brings the machine to this path (see restoreInput) and reports
// whether it changed any rule. The guard is in place before the bridge forwards.
// Up and the supervisor both call it: they take lockPath in turn.
func applyDNSPath(lockPath string, nn nodeNet, podIP string, withNAT bool) (bool, error) {
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return false, fmt.Errorf("lock %s: %w", lockPath, err)
	}
	p := dnsPathFor(nn)
	save, err := exec.Command("iptables-save").Output()
	if err != nil {
		return false, fmt.Errorf("iptables-save: %w", err)
	}
	in := p.restoreInput(string(save), podIP, withNAT)
	if in != "" {
		cmd := exec.Command("iptables-restore", "-w", "--noflush")
		cmd.Stdin = strings.NewReader(in)
		if out, err := cmd.CombinedOutput(); err != nil {
			return false, fmt.Errorf("iptables-restore: %v: %s\ninput:\n%s", err, strings.TrimSpace(string(out)), in)
		}
	}
	routes, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return false, err
	}
	if !hasHostRoute(string(routes), nn.Bridge, net.ParseIP(DNSServiceIP)) {
		if _, err := run("ip", "route", "replace", DNSServiceIP+"/32", "dev", nn.Bridge, "src", nn.NodeIP); err != nil {
			return false, fmt.Errorf("route the cluster DNS address to bridge %s: %w", nn.Bridge, err)
		}
	}
	key := "net/ipv4/conf/" + nn.Bridge + "/forwarding"
	if v, _ := readSysctl(key); v != "1" {
		if err := writeSysctl(key, "1"); err != nil {
			return false, fmt.Errorf("let bridge %s forward (its DNATed cluster DNS traffic): %w", nn.Bridge, err)
		}
	}
	return in != "", nil
}

func (d nodeDirs) dnsLock() string { return d.path("clusterdns.lock") }

// pointClusterDNS sends the cluster DNS address to podIP ("": to nothing).
func (c *cluster) pointClusterDNS(podIP string) (bool, error) {
	return applyDNSPath(c.nodeDirs().dnsLock(), c.state.NodeNet, podIP, true)
}

// dnsService is kube-system/kube-dns: the cluster's record of the address
// Paddock's rules serve (no proxy reads it).
func dnsService() *corev1.Service {
	port := func(name string, proto corev1.Protocol) corev1.ServicePort {
		return corev1.ServicePort{Name: name, Port: 53, Protocol: proto, TargetPort: intstr.FromInt32(53)}
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: DNSServiceName, Namespace: DNSNamespace,
			Labels: map[string]string{"k8s-app": "kube-dns", "app.kubernetes.io/managed-by": "paddock"},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP: DNSServiceIP,
			Selector:  map[string]string{"k8s-app": "kube-dns"},
			Ports:     []corev1.ServicePort{port("dns", corev1.ProtocolUDP), port("dns-tcp", corev1.ProtocolTCP)},
		},
	}
}

// ensureDNSService creates the kube-dns Service when it is missing. It looks
// first: the API server judges the address before the name, so creating it again
// fails as "already allocated", not as "already exists".
func ensureDNSService(ctx context.Context, cs kubernetes.Interface) error {
	svcs := cs.CoreV1().Services(DNSNamespace)
	cur, err := svcs.Get(ctx, DNSServiceName, metav1.GetOptions{})
	switch {
	case err == nil && cur.Spec.ClusterIP == DNSServiceIP:
		return nil
	case err == nil:
		return fmt.Errorf("Service %s/%s has clusterIP %q, not %s, the address pods are given; delete it and run `paddock local up` again",
			DNSNamespace, DNSServiceName, cur.Spec.ClusterIP, DNSServiceIP)
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("read Service %s/%s: %w", DNSNamespace, DNSServiceName, err)
	}
	_, err = svcs.Create(ctx, dnsService(), metav1.CreateOptions{FieldManager: "paddock"})
	switch {
	case err == nil || apierrors.IsAlreadyExists(err):
		return nil
	case apierrors.IsInvalid(err):
		return fmt.Errorf("create Service %s/%s at %s: %w (a cluster made before its API server was given the service range %s cannot hold it: `paddock local down`, then `paddock local up`)",
			DNSNamespace, DNSServiceName, DNSServiceIP, err, ServiceCIDR)
	default:
		return fmt.Errorf("create Service %s/%s: %w", DNSNamespace, DNSServiceName, err)
	}
}

// resolverTarget looks at the resolver pod once and repairs what it can: it
// creates the pod when it is missing and deletes it when it has ended (the next
// look creates it again). It returns the address the cluster DNS address must
// lead to ("" while no resolver runs) and what it did, if anything.
func resolverTarget(ctx context.Context, cs kubernetes.Interface) (podIP, did string, err error) {
	p, err := cs.CoreV1().Pods(DNSNamespace).Get(ctx, DNSPodName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := cs.CoreV1().Pods(DNSNamespace).Create(ctx, dnsPod(), metav1.CreateOptions{FieldManager: "paddock"}); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", "", fmt.Errorf("create the cluster resolver pod %s/%s: %w", DNSNamespace, DNSPodName, err)
		}
		return "", "created the missing resolver pod", nil
	case err != nil:
		return "", "", err
	case p.DeletionTimestamp != nil:
		return "", "", nil
	case p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded:
		if err := cs.CoreV1().Pods(DNSNamespace).Delete(ctx, DNSPodName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return "", "", fmt.Errorf("delete the ended resolver pod: %w", err)
		}
		return "", "deleted the resolver pod, which had ended (" + string(p.Status.Phase) + ")", nil
	case p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "":
		return p.Status.PodIP, "", nil
	}
	return "", "", nil
}
