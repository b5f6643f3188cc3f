# pin: COREDNS_VERSION
# CoreDNS, the local stack's cluster resolver: it runs in a pod labelled
# k8s-app=kube-dns on the real node (the peer Paddock's DNS-only egress rule
# allows), from an image the node builds around this binary.
module=github.com/coredns/coredns
echo "step: build coredns"
CGO_ENABLED=0 go build -v -trimpath -o "$OUT/coredns" -ldflags "-s -w" "$module"
