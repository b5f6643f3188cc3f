# pin: COREDNS_VERSION
# CoreDNS, the local stack's cluster resolver: it runs in a pod labelled
# k8s-app=kube-dns on the real node (the peer Paddock's DNS-only egress rule
# allows), from an image the node builds around this binary. main.go compiles in
# only the plugins the node's Corefile uses.
echo "step: build coredns"
go build -v -trimpath -o "$OUT/coredns" -ldflags "-s -w -X github.com/coredns/coredns/coremain.GitCommit=$COREDNS_VERSION" .
