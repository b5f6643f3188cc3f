# pin: KWOK_VERSION
# kwokctl (runs the control plane) and kwok (fakes nodes and pods).
ld="-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${KUBERNETES_VERSION#v}"
for c in kwokctl kwok; do
  echo "step: build $c"
  go build -v -trimpath -o "$OUT/$c" -ldflags "$ld" "sigs.k8s.io/kwok/cmd/$c"
done
