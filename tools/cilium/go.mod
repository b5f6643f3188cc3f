module github.com/paddock-platform/paddock/tools/cilium

go 1.26

// Nothing is built from Cilium: the module pins the CiliumNetworkPolicy CRDs that
// the local cluster installs so the real API server validates Paddock's FQDN
// policies against Cilium's own schema (hack/cilium-crds copies them out).
require github.com/cilium/cilium v1.19.0
