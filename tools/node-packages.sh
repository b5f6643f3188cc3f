#!/usr/bin/env bash
# Installs the Debian packages the local stack's real node runs beside the pinned
# tools built from Go modules: runc (system pods), the CNI plugins (containerd runs
# loopback from /usr/lib/cni in every pod), iptables and ipset (the Cilium agent's
# chains, the pod guard, and `local down`, which removes what the node created),
# busybox-static (the rootfs of the images the node imports; nothing is pulled
# from a registry), clang-19 (the Cilium agent compiles its BPF programs at run
# time; LLVM 19 is what upstream's image ships), ccache (keeps those objects, so an
# up after the first compiles nothing) and nftables (`local down` removes
# the empty tables iptables-nft leaves). Only missing packages are installed; with
# all of them present this touches nothing and needs no network.
#
# Where apt-get is missing or this is not root (macOS, a laptop without sudo) it
# says so and exits 0: `paddock local up` then explains why it uses kwok nodes.
# PADDOCK_NODE_PACKAGES=required makes that an error (CI on a machine that must run
# the real node).
set -euo pipefail

packages=(runc containernetworking-plugins iptables ipset busybox-static clang-19 ccache nftables)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f '${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "tools: node packages (${packages[*]}) installed"
  exit 0
fi

why=""
if ! command -v apt-get >/dev/null 2>&1; then
  why="no apt-get on this machine"
elif [ "$(id -u)" -ne 0 ]; then
  why="not root"
fi
if [ -n "$why" ]; then
  msg="tools: cannot install ${missing[*]} ($why); the local stack will use kwok nodes"
  if [ "${PADDOCK_NODE_PACKAGES:-}" = required ]; then echo "$msg" >&2; exit 1; fi
  echo "$msg"
  exit 0
fi

echo "tools: installing ${missing[*]} (apt-get)"
start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
# A stale or empty package list cannot find them: refresh it once, then install.
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "tools: installed ${missing[*]} in $(( $(date +%s) - start ))s"
