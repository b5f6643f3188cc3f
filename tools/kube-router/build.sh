# pin: KUBE_ROUTER_VERSION
# kube-router, run by the local stack's real node with only its network policy
# firewall on (iptables + ipset; no routing, no service proxy): the NetworkPolicy
# enforcer. v2.1.0 is the only v2 release the module proxy serves.
module=github.com/cloudnativelabs/kube-router/v2
echo "step: build kube-router"
go build -v -trimpath -o "$OUT/kube-router" \
  -ldflags "-s -w -X $module/pkg/version.Version=$KUBE_ROUTER_VERSION -X $module/pkg/version.BuildDate=pinned" \
  "$module/cmd/kube-router"
