# pin: KWOK_VERSION
# kwok: fakes the nodes (and their pods) of a local cluster started with `--nodes fake`.
# Paddock starts the control plane itself, so kwokctl is not built.
ld="-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${KUBERNETES_VERSION#v}"
echo "step: build kwok"
go build -v -trimpath -o "$OUT/kwok" -ldflags "$ld" sigs.k8s.io/kwok/cmd/kwok
