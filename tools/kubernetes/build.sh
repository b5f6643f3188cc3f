# pin: KUBERNETES_VERSION
# The control plane and the kubelet of the local stack's real node, in one `go build`
# (shared packages compile and link once). kubectl is its own tool (tools/kubectl):
# only the test and bench suites use it, so `make demo` does not build it.
# Versions are linked in, or clients fail to parse the placeholder version.
minor=${KUBERNETES_VERSION#v1.}; minor=${minor%%.*}
ld="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld+=" -X $p.gitVersion=$KUBERNETES_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done
echo "step: build kube-apiserver kube-controller-manager kube-scheduler kubelet"
go build -v -trimpath -o "$OUT/" -ldflags "$ld" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet
