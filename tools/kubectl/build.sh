# pin: KUBERNETES_VERSION
# kubectl, for the suites that use it: terratest's k8s helpers and `make bench`'s
# baseline. The local stack and the demo never run it (kwokctl gets a shim).
minor=${KUBERNETES_VERSION#v1.}; minor=${minor%%.*}
ld="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld+=" -X $p.gitVersion=$KUBERNETES_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done
echo "step: build kubectl"
go build -v -trimpath -o "$OUT/kubectl" -ldflags "$ld" k8s.io/kubernetes/cmd/kubectl
