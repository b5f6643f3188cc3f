# pin: PROMETHEUS_VERSION
# Prometheus, for tests only (Makefile TEST_TOOLS): `paddock local up
# --observability` runs it on loopback, scraping the controller, kube-state-metrics
# and the Cilium agent and evaluating Paddock's own alert rules. The module carries
# no web UI assets (upstream embeds them with -tags builtinassets after an npm
# build), so the UI answers with an error page; the HTTP API is what Paddock reads.
# remove_all_sd leaves out every service discovery but static and file targets,
# which is all the local stack scrapes with (and two thirds of the packages).
echo "step: build prometheus"
v=${PROMETHEUS_VERSION#v0.}; v="3.${v#3}"   # module v0.316.0 is release 3.16.0
go build -v -trimpath -tags remove_all_sd -o "$OUT/prometheus" \
  -ldflags "-s -w -X github.com/prometheus/common/version.Version=$v -X github.com/prometheus/common/version.Branch=module-proxy" \
  github.com/prometheus/prometheus/cmd/prometheus
