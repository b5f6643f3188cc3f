# pin: KUBE_STATE_METRICS_VERSION
# kube-state-metrics, for tests only (Makefile TEST_TOOLS): `paddock local up
# --observability` runs it out of cluster on loopback, against the local
# kubeconfig, for the metrics Paddock's alerts read of objects (resource quotas,
# the claim label of sandbox pods).
echo "step: build kube-state-metrics"
go build -v -trimpath -o "$OUT/kube-state-metrics" \
  -ldflags "-s -w -X github.com/prometheus/common/version.Version=$KUBE_STATE_METRICS_VERSION -X github.com/prometheus/common/version.Branch=module-proxy" \
  k8s.io/kube-state-metrics/v2
