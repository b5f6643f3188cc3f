// The real node's dataplane: what carries pod traffic and enforces policy.
//
//   - DataplaneKubeRouter (kept for machines that cannot run Cilium's agent):
//     the CNI bridge plugin on Paddock's bridge, host-local
//     addresses from the node subnet, kube-router's iptables firewall for
//     NetworkPolicy, and Paddock's DNAT for the cluster DNS address
//     (clusterdns.go). CiliumNetworkPolicies are validated by the API server
//     and enforced by nothing.
//   - DataplaneCilium (the default): the pinned cilium-agent as the node's only CNI, policy
//     engine and Service proxy (ciliumagent.go). Pods get addresses from the
//     node's PodCIDR (kube-controller-manager allocates it), NetworkPolicy and
//     CiliumNetworkPolicy are enforced in BPF, toFQDNs rules through the agent's
//     DNS proxy, and the kube-dns Service is a real ClusterIP. This is the
//     closest local stand-in for GKE Dataplane V2.

package localcluster

import "fmt"

// Dataplanes: state.json's nodeNet.dataplane.
const (
	DataplaneKubeRouter = "kube-router"
	DataplaneCilium     = "cilium"
)

// The pinned tools each dataplane adds to the real node's.
var dataplaneTools = map[string][]string{
	DataplaneKubeRouter: {"kube-router"},
	DataplaneCilium:     {"cilium-agent", "cilium-cni", "cilium-dbg"},
}

// nodeToolsFor lists every pinned tool a real node on dataplane runs.
func nodeToolsFor(dataplane string) []string {
	if dataplane == "" {
		dataplane = DataplaneKubeRouter
	}
	return append(append([]string(nil), realNodeTools...), dataplaneTools[dataplane]...)
}

// allNodeTools is every tool any real node runs (Down recognises stragglers by them).
func allNodeTools() []string {
	out := append([]string(nil), realNodeTools...)
	for _, d := range []string{DataplaneCilium, DataplaneKubeRouter} {
		out = append(out, dataplaneTools[d]...)
	}
	return out
}

// retiredNode reports whether st is a real node on kube-router, which Paddock
// no longer runs: its state names that dataplane, or none (written before
// Cilium). Down still removes all it left; nothing else may run it.
func (st *clusterState) retiredNode() bool { return st.real() && !st.NodeNet.cilium() }

// errRetiredNode says what to do about a cluster whose node is retired.
func errRetiredNode(name string) error {
	return fmt.Errorf("local cluster %q has a real node on kube-router, which this paddock no longer runs (a new node runs Cilium); run `paddock local down`, then `paddock local up`", name)
}

// cilium reports whether the node's dataplane is Cilium ("" in a state written
// before there was a choice: kube-router).
func (nn nodeNet) cilium() bool { return nn.Dataplane == DataplaneCilium }

// nodeProcessNames are the node's supervised processes, in start order.
func (nn nodeNet) nodeProcessNames() []string {
	if nn.cilium() {
		names := []string{"containerd", "kubelet", "cilium-agent"}
		for _, h := range WorldHosts {
			names = append(names, h.procName())
		}
		return names
	}
	return []string{"containerd", "kubelet", "kube-router"}
}

// WorldLinkPrefix starts the name of every host-side link of a network
// namespace that stands in for a destination outside the cluster (an LLM API,
// a package mirror): the stack's world hosts (worldhosts.go) and a test's own. On the Cilium dataplane the only traffic from pods the
// machine forwards off the node goes to such links (podGuard): Cilium sees those
// namespaces as "world", where toFQDNs rules apply, and nothing leaves the
// machine.
const WorldLinkPrefix = "pdkw"
