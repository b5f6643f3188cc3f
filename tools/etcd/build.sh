# pin: ETCD_VERSION
# etcd through the five-line main.go beside this file.
echo "step: build etcd"
go build -v -trimpath -o "$OUT/etcd" -ldflags "-s -w" .
