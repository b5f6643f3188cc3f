# pin: CILIUM_VERSION
# Cilium, the real node's dataplane: the agent (the node's only CNI and
# NetworkPolicy enforcer, FQDN policy through its DNS proxy, kube-proxy
# replacement for ClusterIP Services), its CNI plugin and cilium-dbg (status,
# and the cleanup `local down` runs). No operator: the node's CIDR comes from
# kube-controller-manager and identities are CRDs. Beside the binaries, in
# share/cilium: the BPF sources the agent compiles at run time (with Debian's
# clang, installed by the node packages step) and the CRDs it needs, which in
# this release only the operator would register.
module=github.com/cilium/cilium
ldflags="-s -w -X $module/pkg/version.ciliumVersion=${CILIUM_VERSION#v}"
echo "step: build cilium-agent"
go build -v -trimpath -tags osusergo -o "$OUT/cilium-agent" -ldflags "$ldflags" "$module/daemon"
echo "step: build cilium-cni"
go build -v -trimpath -tags osusergo -o "$OUT/cilium-cni" -ldflags "$ldflags" "$module/plugins/cilium-cni"
echo "step: build cilium-dbg"
go build -v -trimpath -tags osusergo -o "$OUT/cilium-dbg" -ldflags "$ldflags" "$module/cilium-dbg"
echo "step: copy the BPF sources and CRDs"
src=$(go list -m -f '{{.Dir}}' "$module")
share="$OUT/../share/cilium"
mkdir -p "$share/crds"
cp -R "$src/bpf" "$share/bpf"
cp "$src"/pkg/k8s/apis/cilium.io/client/crds/*/*.yaml "$share/crds/"
chmod -R u+w "$share"
