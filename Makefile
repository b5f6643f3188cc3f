# Paddock — build, local stack and tests. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

include pins/versions.env

PADDOCK_HOME ?= $(HOME)/.paddock
export PADDOCK_HOME
BIN          := $(CURDIR)/bin
PADDOCK      := $(BIN)/paddock
# Longest builds first, so the last of two parallel builds is a short one.
TOOLS        := kubernetes pulumi-kubernetes kwok pulumi agent-sandbox coredns kube-router etcd gvisor containerd
# Only the test and bench suites run kubectl (terratest's k8s helpers, the bench baseline) and the
# previous Agent Sandbox controller (the release upgrade and rollback e2e test).
TEST_TOOLS   := kubectl agent-sandbox-previous seaweedfs
GO_LDFLAGS   := -s -w
EXAMPLE      ?= examples/local

.PHONY: help
help: ## list targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: tools tools-test
# Two builds at a time (PADDOCK_TOOLS_JOBS). With PADDOCK_TOOLS_MIRROR set, each tool is
# first fetched from the mirror (`paddock tools fetch`) and built only without a usable bundle.
tools: $(if $(PADDOCK_TOOLS_MIRROR),build) ## build every pinned upstream tool the local platform runs into $(PADDOCK_HOME) (cached by version and recipe; fetched from $PADDOCK_TOOLS_MIRROR when set), install the real node's Debian packages
	@PADDOCK=$(PADDOCK) tools/build-tools.sh $(TOOLS)
	@$(MAKE) --no-print-directory pulumi-plugins node-packages

tools-test: $(if $(PADDOCK_TOOLS_MIRROR),build) ## build the tools only the test and bench suites use (kubectl, the previous Agent Sandbox controller, SeaweedFS's weed for s3://), install their Debian packages (postgresql)
	@PADDOCK=$(PADDOCK) tools/build-tools.sh $(TEST_TOOLS)
	@tools/test-packages.sh

# The real node's Debian packages (runc, CNI plugins, iptables, ipset, busybox-static):
# installs only what is missing; without root or apt-get it says so and the local
# stack uses kwok nodes. PADDOCK_NODE_PACKAGES=required makes that an error.
.PHONY: node-packages
node-packages: ## install the Debian packages the local stack's real node needs (only the missing ones)
	@tools/node-packages.sh

tool-%: ## build one tool, e.g. make tool-kubernetes
	@tools/build-tool.sh $*

# The engine must never download a plugin: install the provider we built into
# Paddock's own PULUMI_HOME (run by `make tools`, after the builds).
.PHONY: pulumi-plugins
pulumi-plugins:
	@plugin="$(PADDOCK_HOME)/pulumi/plugins/resource-kubernetes-v$(PULUMI_KUBERNETES_VERSION)"; \
	src=$$(readlink -f "$(PADDOCK_HOME)/bin/pulumi-resource-kubernetes"); \
	if [ "$$(cat "$$plugin.paddock-src" 2>/dev/null)" != "$$src" ]; then \
	  PULUMI_HOME="$(PADDOCK_HOME)/pulumi" PULUMI_SKIP_UPDATE_CHECK=true \
	    "$(PADDOCK_HOME)/bin/pulumi" plugin install resource kubernetes v$(PULUMI_KUBERNETES_VERSION) --file "$$src" --reinstall >/dev/null; \
	  echo "$$src" > "$$plugin.paddock-src"; \
	  echo "tools: installed kubernetes provider v$(PULUMI_KUBERNETES_VERSION) into $(PADDOCK_HOME)/pulumi"; \
	else echo "tools: kubernetes provider v$(PULUMI_KUBERNETES_VERSION) plugin (cached)"; fi

# target "gke" also needs the GCP provider plugin at the SDK's pinned version.
# Pulumi publishes it as a release asset; this fetches it once into Paddock's
# own PULUMI_HOME (the engine itself never downloads a plugin). Needs network
# to get.pulumi.com / GitHub, so it is not part of `make tools` or CI.
.PHONY: tools-gcp
tools-gcp: tool-pulumi ## fetch the pinned GCP provider plugin (target "gke" only; needs network)
	PULUMI_HOME="$(PADDOCK_HOME)/pulumi" PULUMI_SKIP_UPDATE_CHECK=true \
	  "$(PADDOCK_HOME)/bin/pulumi" plugin install resource gcp v$(PULUMI_GCP_VERSION)

.PHONY: build
build: ## build the paddock CLI into ./bin (it reports its commit: bin/paddock version)
	@mkdir -p $(BIN)
	go build -trimpath -ldflags '$(GO_LDFLAGS) -X main.commit=$(shell git describe --always --dirty --abbrev=12 2>/dev/null) -X main.commitTime=$(shell git show -s --format=%ct HEAD 2>/dev/null)' -o $(PADDOCK) ./cmd/paddock

# The demo's node kind: empty lets `local up` choose (a real node running gVisor
# where the machine allows it, else kwok saying why); real or fake forces one.
DEMO_NODES   ?=

.PHONY: demo
demo: tools build ## fresh machine to a running local platform: tools, local cluster, paddock up and verify of $(EXAMPLE), then a summary with a running sandbox to exec into
	$(PADDOCK) local up $(if $(DEMO_NODES),--nodes $(DEMO_NODES))
	$(PADDOCK) up $(EXAMPLE)
	$(PADDOCK) verify $(EXAMPLE)
	@echo
	@$(PADDOCK) status $(EXAMPLE)

.PHONY: bench
bench: tools tools-test build ## benchmarks on a throwaway local cluster: provisioning vs kubectl and an SSA floor, validate, no-op up and drift on each state backend, claims -> bench/results/
	go run ./cmd/paddock-bench -paddock $(PADDOCK) -out bench/results $(BENCH_FLAGS)

.PHONY: unit
unit: ## unit tests (no cluster)
	go test -count=1 ./...
	$(PROMRULES)

# The PrometheusRule checked with Prometheus' own rule parser: a module of its
# own (test/promrules), so Prometheus' dependencies never move the main module's.
PROMRULES = cd test/promrules && go vet ./... && go test -count=1 ./...

# The terratest suite, its log kept in $(E2E_LOG); on failure the failed tests
# are listed again at the end, with the lines the tests logged, where CI's tail shows them.
E2E_LOG ?= $(BIN)/e2e.log
E2E_RUN = mkdir -p $(BIN) && PADDOCK_BIN=$(PADDOCK) go test -tags e2e -count=1 -timeout 75m -v ./test/e2e/... 2>&1 | tee $(E2E_LOG) \
	  || { echo; echo "e2e: failed tests (full log: $(E2E_LOG)):"; awk '/^=== (RUN|CONT|PAUSE)/{buf=""} {buf=buf $$0 "\n"} /^ *--- FAIL|^panic:/{printf "%s", buf; buf=""}' $(E2E_LOG) | tail -n 150; exit 1; }

.PHONY: e2e
e2e: tools tools-test build ## live tests: the local cluster lifecycle, then terratest end to end (each starts and stops its own cluster)
	PADDOCK_LIVE=1 go test -count=1 -timeout 10m -run TestLive ./localcluster/
	$(E2E_RUN)

.PHONY: test
test: tools tools-test build ## everything CI runs: vet, unit tests, live end-to-end tests
	go vet ./...
	go vet -tags e2e ./test/...
	go vet -tags gke ./components/gcp/ ./program/
	go test -count=1 ./...
	$(PROMRULES)
	PADDOCK_LIVE=1 go test -count=1 -timeout 10m -run TestLive ./localcluster/
	$(E2E_RUN)

.PHONY: local-down
local-down: ## stop the local cluster and remove its state
	$(PADDOCK) local down

.PHONY: clean
clean: ## remove build output (keeps the tools cache)
	rm -rf $(BIN)
