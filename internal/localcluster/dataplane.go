// The real node's dataplane: the pinned cilium-agent as the node's only CNI,
// policy engine and Service proxy (ciliumagent.go). Pods get addresses from the
// node's PodCIDR (kube-controller-manager allocates it), NetworkPolicy and
// CiliumNetworkPolicy are enforced in BPF, toFQDNs rules through the agent's DNS
// proxy, and the kube-dns and kubernetes Services are ordinary ClusterIPs, served
// by the agent's kube-proxy replacement. This is the closest local stand-in for
// GKE Dataplane V2, and one policy enforcer, as there.
//
// Nodes made before ran kube-router's iptables firewall on the CNI bridge plugin,
// with a DNAT of Paddock's own for the cluster DNS address. Paddock no longer
// builds or runs it: such a cluster is only taken down, and Down removes what
// its node left (retiredChains, and the KUBE-* chains and ipsets it created).

package localcluster

import (
	"fmt"
	"strings"
)

// DataplaneCilium is what state.json's nodeNet.dataplane says of a real node.
// A node whose state says anything else ("kube-router", or nothing: written
// before Cilium) is retired.
const DataplaneCilium = "cilium"

// nodeTools lists every pinned tool a real node runs (Down also recognises
// stragglers by them).
func nodeTools() []string {
	return append(append([]string(nil), realNodeTools...), "cilium-agent", "cilium-cni", "cilium-dbg")
}

// retiredNode reports whether st is a real node on kube-router, which Paddock
// no longer runs: its state names that dataplane, or none (written before
// Cilium). Down still removes all it left; nothing else may run it.
func (st *clusterState) retiredNode() bool { return st.real() && !st.NodeNet.cilium() }

// errRetiredNode says what to do about a cluster whose node is retired.
func errRetiredNode(name string) error {
	return fmt.Errorf("local cluster %q has a real node on kube-router, which this paddock no longer runs (a new node runs Cilium); run `paddock local down`, then `paddock local up`", name)
}

// retiredChains are the chains (table/chain) a node of the kube-router era kept
// for the cluster DNS address: its DNAT and its forwarding guard. They are named
// after the bridge, so they are always this node's, and Down removes them
// whatever the state says.
func retiredChains(nn nodeNet) []string {
	id := strings.TrimPrefix(nn.Bridge, "pdk-")
	return []string{"nat/PADDOCK-DNS-" + id, "mangle/PADDOCK-NOFWD-" + id}
}

// cilium reports whether the node's dataplane is Cilium (see retiredNode).
func (nn nodeNet) cilium() bool { return nn.Dataplane == DataplaneCilium }

// nodeProcessNames are the node's supervised processes, in start order (of a
// retired node, only those it shares with a Cilium one).
func (nn nodeNet) nodeProcessNames() []string {
	if !nn.cilium() {
		return []string{"containerd", "kubelet"}
	}
	names := []string{"containerd", "kubelet", "cilium-agent"}
	for _, h := range WorldHosts {
		names = append(names, h.procName())
	}
	return names
}

// WorldLinkPrefix starts the name of every host-side link of a network
// namespace that stands in for a destination outside the cluster (an LLM API,
// a package mirror): the stack's world hosts (worldhosts.go) and a test's own.
// The only traffic from pods the machine forwards off the node goes to such
// links (podGuard): Cilium sees those namespaces as "world", where toFQDNs
// rules apply, and nothing leaves the machine.
const WorldLinkPrefix = "pdkw"
