//go:build tools

// Package cilium pins the Cilium agent, its CNI plugin and cilium-dbg, which
// the local stack's real node runs as its dataplane (build.sh builds them),
// and the CRDs Paddock's Cilium policies are validated against
// (internal/gen/cilium-crds copies those out). The imports only keep go.mod
// and go.sum holding every package the recipe builds.
package cilium

import (
	_ "github.com/cilium/cilium/cilium-dbg"
	_ "github.com/cilium/cilium/daemon"
	_ "github.com/cilium/cilium/plugins/cilium-cni"
)
