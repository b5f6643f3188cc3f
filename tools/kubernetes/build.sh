# pin: KUBERNETES_VERSION
# The control plane, kubectl (the baseline `make bench` compares Paddock with) and the
# kubelet of the local stack's real node.
# Versions are linked in, or clients fail to parse the placeholder version.
minor=${KUBERNETES_VERSION#v1.}; minor=${minor%%.*}
ld="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld+=" -X $p.gitVersion=$KUBERNETES_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done
for c in kube-apiserver kube-controller-manager kube-scheduler kubectl kubelet; do
  echo "step: build $c"
  go build -v -trimpath -o "$OUT/$c" -ldflags "$ld" "k8s.io/kubernetes/cmd/$c"
done
