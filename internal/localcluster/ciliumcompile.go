package localcluster

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/paddock-platform/paddock/internal/manifests"
)

// The Cilium agent compiles its BPF datapath with clang every time it starts
// (two templates, ~3 s of both cores on the 2-core machine: the largest part of
// `local up` after the API server). Its inputs are the pinned release's BPF
// sources and headers the agent writes, the same on every up of a cluster once
// the router's address is pinned (seedCiliumNode), so the objects are
// cached with Debian's ccache. The agent compiles to stdout (`-o -`), which
// ccache cannot cache: the agent's `clang` is a shim that compiles to a file
// through ccache and prints it. Without ccache, or with a cache it cannot
// write, the shim is plain clang.

// bpfCacheDir keeps the compiled objects beside the pinned build whose BPF
// sources they came from: a new release or recipe gets a cache of its own, and
// every PADDOCK_HOME linking that build (the e2e suite's) shares it.
func bpfCacheDir(agentBin string) string {
	return filepath.Join(filepath.Dir(ciliumShare(agentBin)), "bpf-object-cache")
}

func (d nodeDirs) ciliumCompilerDir() string { return d.path("cilium", "compiler") }

// clangShim is the script the agent runs as `clang`. It keeps clang's exit
// status and messages; only `-o -` is rewritten.
func clangShim(realClang, cacheDir string) string {
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	return strings.NewReplacer("@REAL@", q(realClang), "@CACHE@", q(cacheDir)).Replace(`#!/bin/bash
# Written by paddock local up: the Cilium agent's clang, through ccache (see
# internal/localcluster/ciliumcompile.go). The agent compiles to stdout, which
# ccache cannot cache: this compiles to a file, then prints it.
set -u
real=@REAL@
cache=@CACHE@
if ! command -v ccache >/dev/null 2>&1 || ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
  exec "$real" "$@"
fi
args=() out= prev=
for a in "$@"; do
  if [ "$prev" = -o ] && [ "$a" = - ] && [ -z "$out" ]; then
    out=$(mktemp "${TMPDIR:-/tmp}/paddock-bpf.XXXXXX") || exec "$real" "$@"
    a=$out
  fi
  args+=("$a")
  prev=$a
done
[ -n "$out" ] || exec "$real" "$@"
trap 'rm -f "$out"' EXIT
# The headers are written just before each compile: without the sloppiness
# ccache would not trust their times and preprocess every time. The working
# directory (the cluster's) only names the debug info's compile directory.
CCACHE_DIR=$cache CCACHE_MAXSIZE=256M CCACHE_NOHASHDIR=1 \
  CCACHE_SLOPPINESS=include_file_mtime,include_file_ctime,time_macros \
  ccache "$real" "${args[@]}" || exit
cat "$out"
`)
}

// writeClangShim writes the shim the agent finds first on its PATH.
func (c *cluster) writeClangShim() error {
	d := c.nodeDirs()
	if err := os.MkdirAll(d.ciliumCompilerDir(), 0o755); err != nil {
		return err
	}
	body := clangShim(ciliumClang, bpfCacheDir(c.state.Binaries["cilium-agent"]))
	return os.WriteFile(filepath.Join(d.ciliumCompilerDir(), "clang"), []byte(body), 0o755)
}

// ciliumNodes is the agent's record of its node. An agent that finds one
// takes its router address (the cilium_host device's) from it, reserving it
// in its IPAM, instead of a random address of the node's PodCIDR.
var ciliumNodes = schema.GroupVersionResource{Group: manifests.CiliumNetworkPolicies.Group, Version: manifests.CiliumNetworkPolicies.Version, Resource: "ciliumnodes"}

// ciliumRouterIP is the router address every up uses: the PodCIDR's first
// host address. The agent writes it into the headers it compiles, so a random
// one would make every up's datapath a new compile.
func ciliumRouterIP(nn nodeNet) string {
	p, err := netip.ParsePrefix(nn.PodCIDR)
	if err != nil || !p.Addr().Is4() {
		return ""
	}
	return p.Masked().Addr().Next().String()
}

// seedCiliumNode creates the agent's CiliumNode, naming ip as the router
// address, before the agent first starts; the agent fills in the rest. An
// existing one (a restarted agent's) is left alone. An API server that does
// not serve the CRD yet (it was applied moments ago) is waited for, up to
// wait.
func seedCiliumNode(ctx context.Context, dc dynamic.Interface, node, ip string, wait time.Duration) error {
	if ip == "" {
		return nil
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": ciliumNodes.GroupVersion().String(),
		"kind":       "CiliumNode",
		"metadata":   map[string]any{"name": node, "labels": map[string]any{"app.kubernetes.io/managed-by": "paddock"}},
		"spec": map[string]any{"addresses": []any{
			map[string]any{"type": "CiliumInternalIP", "ip": ip},
		}},
	}}
	deadline := time.Now().Add(wait)
	for {
		_, err := dc.Resource(ciliumNodes).Create(ctx, u, metav1.CreateOptions{FieldManager: "paddock-local"})
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		if !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			return fmt.Errorf("seed the Cilium agent's CiliumNode %s with router address %s: %w", node, ip, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
