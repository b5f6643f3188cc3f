# Paddock — build, local stack and tests. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

include internal/pins/versions.env

PADDOCK_HOME ?= $(HOME)/.paddock
export PADDOCK_HOME
BIN          := $(CURDIR)/bin
PADDOCK      := $(BIN)/paddock
# What the local platform runs on a real node.
TOOLS        := kubernetes pulumi-kubernetes pulumi agent-sandbox coredns cilium etcd gvisor containerd
# Only the test and bench suites run kubectl (terratest's k8s helpers, the bench baseline), the
# previous Agent Sandbox controller (the release upgrade and rollback e2e test), weed (s3://) and
# kwok (the kwok-node cluster's lifecycle test; `local up --nodes fake`, or where a real node
# cannot run, needs it too: `make tool-kwok`) and the Go language host (the e2e suite's runs of
# `pulumi preview/up/refresh/destroy`; a standard Pulumi install brings its own:
# `make tool-pulumi-language-go` for the pinned CLI), and kube-state-metrics and Prometheus
# (`paddock local up --observability`, which evaluates Paddock's own alerts; the e2e suite).
TEST_TOOLS   := kubectl agent-sandbox-previous seaweedfs kwok pulumi-language-go kube-state-metrics prometheus
# Every tool, longest cold build first (wall seconds on the 2-core machine, 2026-12-04: 806 587;
# cilium 567 alone, 750 beside another build; 547 373 269 229 174 128 122, pulumi-language-go 94
# on 2026-12-04, 88 76 55; kube-state-metrics 804 and prometheus 698 on 2026-12-05, each alone but
# beside other engineers' builds at load average 9: 1,086 and 1,042 packages, which at
# pulumi-language-go's 270 packages in 94 s would be about seaweedfs' 373 on a quiet machine): two builds
# run at a time, so the last to finish is a short one. `make test` queues both lists together, so
# weed does not build alone at the end.
TOOL_ORDER   := kubernetes pulumi cilium pulumi-kubernetes kube-state-metrics prometheus seaweedfs agent-sandbox kwok gvisor containerd agent-sandbox-previous pulumi-language-go kubectl etcd coredns
$(if $(filter-out $(TOOL_ORDER),$(TOOLS) $(TEST_TOOLS)),$(error TOOL_ORDER lacks $(filter-out $(TOOL_ORDER),$(TOOLS) $(TEST_TOOLS)): add it where its build time puts it))
in_build_order = $(filter $(1),$(TOOL_ORDER))
GO_LDFLAGS   := -s -w
# The commit paddock carries: paddock version prints it, and the gateway
# image it renders (and the local node imports) on target local is tagged
# with it.
LINK_REVISION = -X github.com/paddock-platform/paddock/internal/model.linkedRevision=$(shell git describe --always --dirty --abbrev=12 2>/dev/null)
EXAMPLE      ?= examples/local

.PHONY: help
help: ## list targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: tools tools-test tools-all
# Two builds at a time (PADDOCK_TOOLS_JOBS). With PADDOCK_TOOLS_MIRROR set, each tool is
# first fetched from the mirror (`paddock tools fetch`) and built only without a usable bundle.
tools: $(if $(PADDOCK_TOOLS_MIRROR),build) ## build every pinned upstream tool the local platform runs into $(PADDOCK_HOME) (cached by version and recipe; fetched from $PADDOCK_TOOLS_MIRROR when set), install the real node's Debian packages
	@PADDOCK=$(PADDOCK) tools/build-tools.sh $(call in_build_order,$(TOOLS))
	@$(MAKE) --no-print-directory pulumi-plugins node-packages

tools-test: $(if $(PADDOCK_TOOLS_MIRROR),build) ## build the tools only the test and bench suites use (kubectl, the previous Agent Sandbox controller, SeaweedFS's weed for s3://), install their Debian packages (postgresql)
	@PADDOCK=$(PADDOCK) tools/build-tools.sh $(call in_build_order,$(TEST_TOOLS))
	@tools/test-packages.sh

tools-all: $(if $(PADDOCK_TOOLS_MIRROR),build) ## tools and tools-test in one queue, longest build first
	@PADDOCK=$(PADDOCK) tools/build-tools.sh $(call in_build_order,$(TOOLS) $(TEST_TOOLS))
	@$(MAKE) --no-print-directory pulumi-plugins node-packages
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
build: ## build the paddock CLI and its egress gateway (static) into ./bin (it reports its commit: bin/paddock version)
	@mkdir -p $(BIN)
	go build -trimpath -ldflags '$(GO_LDFLAGS) $(LINK_REVISION) -X main.commitTime=$(shell git show -s --format=%ct HEAD 2>/dev/null)' -o $(PADDOCK) ./cmd/paddock
	CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o $(BIN)/paddock-gateway ./cmd/paddock-gateway

# The demo's node kind: empty lets `local up` choose (a real node running gVisor
# where the machine allows it, else kwok saying why); real or fake forces one.
DEMO_NODES   ?=

.PHONY: demo
demo: ## fresh machine to a running local platform: tools, local cluster, paddock up and verify of $(EXAMPLE), then a summary with a running sandbox to exec into
	@$(MAKE) --no-print-directory tools $(if $(filter fake,$(DEMO_NODES)),tool-kwok)
	@$(MAKE) --no-print-directory build
	$(PADDOCK) local up $(if $(DEMO_NODES),--nodes $(DEMO_NODES))
	$(PADDOCK) up $(EXAMPLE)
	$(PADDOCK) verify $(EXAMPLE)
	@echo
	@$(PADDOCK) status $(EXAMPLE)

.PHONY: bench
bench: tools-all build ## benchmarks on a throwaway local cluster: provisioning vs kubectl and an SSA floor, validate, no-op up and drift on each state backend, claims, egress gateway throughput vs a direct connection -> internal/bench/results/
	go run ./cmd/paddock-bench -paddock $(PADDOCK) -out internal/bench/results $(BENCH_FLAGS)

# The spec's limit (issue 39): provisioning alone at 1,000 tenants (kwok nodes are added,
# one per 100 pods), about an hour on 2 CPUs, so no CI run takes it. The figures join those
# of the other sizes in the results, each size named with the binary and machine that measured it.
.PHONY: bench-limit
bench-limit: tools-all build ## provisioning at the spec's limit, 1,000 tenants (about an hour, not in CI): create, no-op up, drift, destroy vs kubectl and the floors, memory, checkpoint size, API requests -> internal/bench/results/
	go run ./cmd/paddock-bench -paddock $(PADDOCK) -out internal/bench/results -tenants 1000 -every-step-max 10 -full-max 100 -skip-validate -skip-claims -backends= -gateway=false $(BENCH_FLAGS)

# Speed claims of single functions live here, not in unit tests: a unit test only
# guards against a hang (internal/hangguard).
.PHONY: bench-go
bench-go: ## Go benchmarks of the hot paths, no cluster: spec loading and many locals, the drift comparison of large and many policies
	go test -run '^$$' -bench . -benchmem ./schemas/ ./internal/drift/

.PHONY: unit
unit: ## unit tests (no cluster)
	go test -count=1 ./...
	$(PROMRULES)

# The PrometheusRule checked with Prometheus' own rule parser: a module of its
# own (test/promrules), so Prometheus' dependencies never move the main module's.
PROMRULES = cd test/promrules && go vet ./... && go test -count=1 ./...

# The live tests run in two lanes at once, each on a cluster of its own
# (test/e2e/run-lanes.sh; test/e2e/README.md says which test runs where and
# why): the local cluster's live tests and then the e2e node lane on the real
# node, and beside them the e2e control lane on kwok nodes. Each part's log is
# in $(BIN) (localcluster.log, e2e-node.log, e2e-control.log); the terminal shows
# each test's result as it ends, and on a failure the failed tests again with
# every line they wrote (test/e2e/failures.awk). Each -timeout inside is a hang
# guard, not a budget: CI's own limit bounds the run. E2E_LANES=serial runs every
# e2e test on the one real-node cluster, one after another, as before the lanes.
E2E_LANES ?= lanes

.PHONY: e2e
e2e: tools-all build ## live tests: the local cluster lifecycle, then terratest end to end (each starts and stops its own cluster)
	@$(MAKE) --no-print-directory live

# vet and the unit tests run beside the live tests, at a lower priority, since those spend
# most of their time waiting on the cluster: on the 2-core machine that takes their 13
# minutes (from empty caches) off `make test`. The unit tests start no cluster, and the
# servers they start take their ports from a band below the control plane's, both below
# the ephemeral range (internal/loopbackport). Their log is $(CHECKS_LOG), printed in full when they
# fail; either side failing fails `make test`.
# (Compiling the CLI beside the tool builds, even at nice 19, was tried from empty caches on
# that machine on 2026-12-04: the first builds took half as long again, kubernetes 1,268 s
# against 806 s, as both fetched modules and unpacked them at once; the tools stay alone.)
CHECKS_LOG  ?= $(BIN)/checks.log

.PHONY: vet
vet: ## go vet, also with the e2e and gke build tags
	go vet ./...
	go vet -tags e2e ./test/...
	go vet -tags gke ./components/gcp/ ./internal/program/

.PHONY: test
test: tools-all build ## everything CI runs: vet, unit tests, live end-to-end tests
	@echo "vet and unit tests: beside the live tests, at a lower priority (log: $(CHECKS_LOG))"
	@rm -f $(CHECKS_LOG).rc; ( u=0; nice -n 10 $(MAKE) --no-print-directory vet unit >$(CHECKS_LOG) 2>&1 || u=$$?; echo $$u >$(CHECKS_LOG).rc ) & checks=$$!; \
	  live=0; $(MAKE) --no-print-directory live || live=$$?; \
	  wait $$checks || true; u=$$(cat $(CHECKS_LOG).rc 2>/dev/null || echo "unknown"); \
	  echo; echo "vet and unit tests (log: $(CHECKS_LOG)), exit $$u:"; \
	  if [ "$$u" = 0 ]; then grep -E '^(ok|FAIL|---)' $(CHECKS_LOG) || true; else cat $(CHECKS_LOG); fi; \
	  [ "$$u" = 0 ] && [ "$$live" = 0 ]

.PHONY: live
live: ## the live tests alone (tools and CLI built): the local cluster lifecycle, then terratest end to end, in two lanes
	PADDOCK_BIN=$(PADDOCK) E2E_LANES=$(E2E_LANES) test/e2e/run-lanes.sh $(BIN)

.PHONY: local-down
local-down: ## stop the local cluster and remove its state
	$(PADDOCK) local down

.PHONY: clean
clean: ## remove build output (keeps the tools cache)
	rm -rf $(BIN)
