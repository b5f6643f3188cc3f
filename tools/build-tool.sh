#!/usr/bin/env bash
# Builds one pinned upstream tool from its own module under tools/NAME and caches it
# under $PADDOCK_HOME/tools/NAME-KEY, where KEY is the pinned version plus a hash of the
# tool module (go.mod, go.sum, sources). A cached build is reused; a failed build leaves
# nothing behind and says which tool and where its log is.
set -euo pipefail

name=${1:?usage: build-tool.sh NAME}
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck disable=SC1091
set -a; source "$root/pins/versions.env"; set +a
home=${PADDOCK_HOME:-$HOME/.paddock}
src="$root/tools/$name"
[ -d "$src" ] || { echo "build-tool: no tool module tools/$name" >&2; exit 2; }

case $name in
  pulumi)            version=$PULUMI_VERSION ;;
  pulumi-kubernetes) version=$PULUMI_KUBERNETES_VERSION ;;
  kubernetes)        version=$KUBERNETES_VERSION ;;
  etcd)              version=$ETCD_VERSION ;;
  kwok)              version=$KWOK_VERSION ;;
  agent-sandbox)     version=$AGENT_SANDBOX_VERSION ;;
  *) echo "build-tool: unknown tool $name" >&2; exit 2 ;;
esac

hash=$(cd "$src" && cat go.mod go.sum $(ls *.go 2>/dev/null) "$root/tools/build-tool.sh" | sha256sum | cut -c1-12)
dest="$home/tools/$name-$version-$hash"
mkdir -p "$home/bin" "$home/tools" "$home/logs"

link() { for f in "$dest"/bin/*; do ln -sfn "$f" "$home/bin/$(basename "$f")"; done; }

if [ -f "$dest/.complete" ]; then
  link
  echo "tools: $name $version (cached)"
  exit 0
fi

tmp="$dest.partial"
rm -rf "$tmp"; mkdir -p "$tmp/bin"
log="$home/logs/build-$name.log"
start=$(date +%s)
echo "tools: building $name $version (log: $log)"

build() {
  cd "$src"
  export CGO_ENABLED=0
  local b="$tmp/bin"
  case $name in
    pulumi)
      go build -trimpath -o "$b/pulumi" \
        -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
        github.com/pulumi/pulumi/pkg/v3/cmd/pulumi ;;
    pulumi-kubernetes)
      # Upstream's main embeds a generated schema the module lacks: take the two JSON
      # files from the pinned module itself (its go.sum hash pins them).
      local mod
      mod=$(go list -m -f '{{.Dir}}' github.com/pulumi/pulumi-kubernetes/provider/v4)
      install -m 0644 "$mod/cmd/pulumi-resource-kubernetes/schema.json" schema.json
      install -m 0644 "$mod/cmd/pulumi-resource-kubernetes/terraform-mapping.json" terraform-mapping.json
      go build -trimpath -o "$b/pulumi-resource-kubernetes" \
        -ldflags "-s -w -X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$PULUMI_KUBERNETES_VERSION" . ;;
    kubernetes)
      local minor=${KUBERNETES_VERSION#v1.}; minor=${minor%%.*}
      local ld="-s -w"
      for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ld+=" -X $p.gitVersion=$KUBERNETES_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
      done
      # kubectl is the baseline `make bench` compares Paddock with.
      for c in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
        go build -trimpath -o "$b/$c" -ldflags "$ld" "k8s.io/kubernetes/cmd/$c"
      done ;;
    etcd)
      go build -trimpath -o "$b/etcd" -ldflags "-s -w" . ;;
    kwok)
      local ld="-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${KUBERNETES_VERSION#v}"
      go build -trimpath -o "$b/kwokctl" -ldflags "$ld" sigs.k8s.io/kwok/cmd/kwokctl
      go build -trimpath -o "$b/kwok" -ldflags "$ld" sigs.k8s.io/kwok/cmd/kwok ;;
    agent-sandbox)
      go build -trimpath -o "$b/agent-sandbox-controller" \
        -ldflags "-s -w -X sigs.k8s.io/agent-sandbox/internal/version.gitVersion=$AGENT_SANDBOX_VERSION" \
        sigs.k8s.io/agent-sandbox/cmd/agent-sandbox-controller ;;
  esac
}

if ! (build) >"$log" 2>&1; then
  rm -rf "$tmp"
  echo "tools: building $name $version FAILED after $(( $(date +%s) - start ))s; last lines of $log:" >&2
  tail -n 20 "$log" >&2
  echo "tools: fix the cause (network to the Go module proxy? disk space?) and run 'make tools' again." >&2
  exit 1
fi
rm -rf "$dest"; mv "$tmp" "$dest"; touch "$dest/.complete"
link
echo "tools: built $name $version in $(( $(date +%s) - start ))s"
