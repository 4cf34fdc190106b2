# kubectl-terminating: the two commands that matter are `make demo` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := build

VERSION ?= $(shell git describe --tags --match 'v*' --dirty 2>/dev/null || echo v0.0.0-dev+$(shell git rev-parse --short HEAD 2>/dev/null || echo unknown))
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
DATE    ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
PKG     := github.com/kubectl-terminating/kubectl-terminating/pkg/version
LDFLAGS := -s -w -X $(PKG).Version=$(VERSION) -X $(PKG).Commit=$(COMMIT) -X $(PKG).Date=$(DATE)

LAB_BIN   := $(CURDIR)/.lab/bin
LAB_RUN   := $(CURDIR)/.lab/run
TOOLS     := $(CURDIR)/.lab/tools
# The commit's time, for reproducible release archives (.goreleaser.yaml).
export COMMIT_DATE      ?= $(shell git log -1 --format=%cI 2>/dev/null)
export COMMIT_TIMESTAMP ?= $(shell git log -1 --format=%ct 2>/dev/null)
STATICCHECK_VERSION := v0.8.2
GORELEASER_VERSION  := v2.15.0
# make test's snapshot is built for this machine only; `make release-check
# RELEASE_PLATFORMS=all` cross-builds all six platforms, as `make release` does.
RELEASE_PLATFORMS   ?= host
HOST_RELEASE_CONFIG := $(CURDIR)/.lab/run/goreleaser-host.yaml

# Every build here but the race detector's (which needs cgo) is static and
# path-trimmed, as the release is, so one compile of each package serves the
# lint, the tests, the plugin, goreleaser and the lab's binaries: mixed, a
# cold make test compiled the plugin's dependencies four ways and Kubernetes
# twice over (the control plane with cgo, the kubelet without).
# test/e2e/lab/build.sh and test/e2e/realnode/setup.sh build so on their own.
export CGO_ENABLED := 0
export GOFLAGS := $(strip $(filter-out -trimpath,$(GOFLAGS)) -trimpath)

# Static, as the release builds it: with cgo, kustomize's import of `plugin`
# makes the linker export every symbol (74 MB against 56), which costs each run
# its page faults and about 5% of list -A's time.
.PHONY: build
build: ## Build bin/kubectl-terminating (static, as the release builds it)
	go build -ldflags "$(LDFLAGS)" -o bin/kubectl-terminating ./cmd/kubectl-terminating

.PHONY: lab-bin
lab-bin: ## Build the lab's etcd, kube-apiserver, kube-controller-manager, kubectl and kwok, and the version matrix's control planes (once)
	test/e2e/lab/build.sh $(LAB_BIN)

# The demo needs the lab's five binaries, not the version matrix (e2e's);
# hack/demo.sh builds what it needs, each step with its time.
.PHONY: demo
demo: ## Replay the shipped diagnosis of a gallery of stuck objects, then start the lab, build the gallery and diagnose it live
	@LDFLAGS="$(LDFLAGS)" hack/demo.sh

.PHONY: fixtures
fixtures: build lab-bin ## Rewrite pkg/cmd/testdata/snapshots from the lab's gallery (snapshots and live reports)
	hack/fixtures.sh

.PHONY: lab-down
lab-down: ## Stop the lab that `make demo` left running
	@cd test/e2e && go run ./cmd/lab down -dir $(LAB_RUN)

.PHONY: test
test: checks-and-builds suites bench-smoke release-check ## Everything: lint, unit and golden tests, fuzzing, e2e on the lab and on a real node, a tiny bench, release files

# make test's first half: the checks beside the builds the suites and the
# release check need. With empty Go caches the builds are most of a run (the
# lab's nine binaries alone took 30 minutes), downloading modules and linking
# on one core at times, while the checks' tests leave a core idle; with warm
# caches the builds take seconds. host-tools goes first: realnode-bin runs apt
# too, and apt takes a lock.
.PHONY: checks-and-builds checks builds
checks-and-builds: host-tools
	@$(MAKE) --no-print-directory -j2 --output-sync=target checks builds
checks: ## Lint, unit and golden tests, fuzzing, one after the other (no cluster)
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory fuzz
builds: build lab-bin $(TOOLS)/goreleaser ## What the suites and the release check run: the plugin, the lab's binaries, goreleaser and, as root, the real node's
	@if [ "$$(id -u)" = 0 ]; then $(MAKE) --no-print-directory realnode-bin; fi

.PHONY: unit
unit: host-tools ## Unit, golden-output and command tests (no cluster)
	CGO_ENABLED=1 go test -race -count=1 ./...
	# Memory bounds are the plugin's without the race detector's shadow memory.
	go test -count=1 -run '^TestLargestAcceptedSnapshotReplaysBounded$$' ./pkg/cmd

# Inputs that gain coverage are kept unminimized: minimizing a snapshot-sized
# input takes longer than the whole bound.
FUZZTIME ?= 30s
MODEL_RUNS ?= 20000
.PHONY: fuzz
fuzz: ## Fuzz a stranger's snapshot through load, diagnosis and every output format, for FUZZTIME; the write path's model over MODEL_RUNS interleavings of a new seed
	go test -run='^$$' -fuzz='^FuzzReplay$$' -fuzztime=$(FUZZTIME) -fuzzminimizetime=1x ./pkg/cmd/
	go test -count=1 -run='^TestWritePathModel$$' ./pkg/fix/ -model-runs=$(MODEL_RUNS) -model-seed=$$(date +%s)

.PHONY: host-tools
host-tools: ## jq, which the suggested commands use and the tests run for real (apt, once)
	@command -v jq >/dev/null || { apt-get update -qq && apt-get install -y -qq jq; }

# E2E_PARALLEL is how many e2e tests run at once: they mostly wait on the
# lab (its controllers, kwok's stages), so more than the cores (go test's
# default): 4 ran the suite in 691 s on 2 cores, the default in 1,248 s.
E2E_PARALLEL ?= 4

.PHONY: e2e
e2e: build lab-bin host-tools ## Black-box tests of the built plugin against the lab
	$(MAKE) --no-print-directory e2e-run

# The suites alone, once what they need is built (suites runs them side by side).
.PHONY: e2e-run realnode-run
e2e-run:
	cd test/e2e && PLUGIN_BIN=$(CURDIR)/bin/kubectl-terminating LAB_BIN_DIR=$(LAB_BIN) go test -count=1 -parallel $(E2E_PARALLEL) -timeout 30m .
realnode-run:
	cd test/e2e && REALNODE_E2E=$(REALNODE_E2E) PLUGIN_BIN=$(CURDIR)/bin/kubectl-terminating LAB_BIN_DIR=$(LAB_BIN) REALNODE_BIN_DIR=$(LAB_BIN)/realnode go test -count=1 -v -timeout 10m ./realnode/

.PHONY: realnode-bin
realnode-bin: ## Prepare a real node (issue 28): apt containerd, runc, CNI plugins, busybox; the kubelet from Go modules; local images (once)
	test/e2e/realnode/setup.sh $(LAB_BIN)/realnode

# 1: the suite must run (a machine that cannot run a node fails it); auto:
# where it cannot, it says why and passes (make test on a workstation).
REALNODE_E2E ?= 1
.PHONY: e2e-realnode
e2e-realnode: build lab-bin realnode-bin ## The plugin against a real kubelet and containerd (root, cgroups)
	$(MAKE) --no-print-directory realnode-run

# make test's suites: the lab's and, where a node can run (root, cgroups;
# elsewhere it says why it did not run), the real node's, side by side once
# what they need is built. Each runs labs of its own and mostly waits on them
# (a whole make test kept 0.8 of the two cores busy when they ran one after
# the other); each one's output is printed when it ends.
.PHONY: suites
suites: build lab-bin host-tools ## The e2e suite and, as root, the real-node suite, side by side
	@if [ "$$(id -u)" = 0 ]; then $(MAKE) --no-print-directory realnode-bin && \
		$(MAKE) --no-print-directory -j2 --output-sync=target e2e-run realnode-run REALNODE_E2E=auto; \
	else echo "realnode: NOT RUN: not root (the real-node suite needs root: apt, network namespaces, cgroups; make e2e-realnode as root)"; \
		$(MAKE) --no-print-directory e2e-run; fi

.PHONY: bench
bench: build lab-bin ## Measure the plugin against the one-liner and the floor on the cases of issues 6, 12, 24 and 38; writes docs/performance.md (about 30 minutes on two cores)
	cd test/e2e && go run ./cmd/bench -scale full -runs 5 -quick-runs 15 -plugin $(CURDIR)/bin/kubectl-terminating -bin $(LAB_BIN) -out $(CURDIR)/docs/performance.md

.PHONY: bench-smoke
bench-smoke: build lab-bin ## The bench at a tiny size: every program must see the same objects (no figures judged)
	cd test/e2e && go run ./cmd/bench -scale smoke -runs 1 -quick-runs 1 -plugin $(CURDIR)/bin/kubectl-terminating -bin $(LAB_BIN)

.PHONY: generate
generate: ## Write what is generated from the code: docs/causes.md, pkg/catalog/codes.go (the code constants) and pkg/catalog/data.go (the catalogues as Go values) from pkg/catalog/causes.yaml and finalizers.yaml, docs/rbac.md's table from the readers' declarations
	go run ./hack/gencatalog
	go run ./hack/gendocs

.PHONY: golden
golden: ## Rewrite the golden files after an intended output change
	go test ./pkg/cmd/ ./pkg/report/ ./pkg/catalog/ -update

.PHONY: lint
lint: $(TOOLS)/staticcheck ## gofmt, go vet and staticcheck on both modules
	@unformatted=$$(gofmt -l cmd pkg test); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	go vet ./...
	cd test/e2e && go vet ./...
	$(TOOLS)/staticcheck ./...
	cd test/e2e && $(TOOLS)/staticcheck ./...

$(TOOLS)/staticcheck:
	GOBIN=$(TOOLS) go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

$(TOOLS)/goreleaser:
	GOBIN=$(TOOLS) go install github.com/goreleaser/goreleaser/v2@$(GORELEASER_VERSION)

.PHONY: release-check
release-check: $(TOOLS)/goreleaser ## goreleaser check + snapshot build (this machine's platform; RELEASE_PLATFORMS=all for all six), the krew manifest checked against it
	$(TOOLS)/goreleaser check
ifeq ($(RELEASE_PLATFORMS),all)
	$(TOOLS)/goreleaser release --snapshot --clean --skip=publish
else
	@# The same configuration with goos/goarch narrowed to this machine's.
	mkdir -p $(dir $(HOST_RELEASE_CONFIG))
	sed -e 's/^\(    goos:\).*/\1 [$(shell go env GOOS)]/' -e 's/^\(    goarch:\).*/\1 [$(shell go env GOARCH)]/' .goreleaser.yaml > $(HOST_RELEASE_CONFIG)
	test "$$(grep -c -e '^    goos: \[$(shell go env GOOS)\]$$' -e '^    goarch: \[$(shell go env GOARCH)\]$$' $(HOST_RELEASE_CONFIG))" = 2
	$(TOOLS)/goreleaser release --snapshot --clean --skip=publish -f $(HOST_RELEASE_CONFIG)
endif
	cd test/e2e && RELEASE_PLATFORMS=$(RELEASE_PLATFORMS) DIST_DIR=$(CURDIR)/dist MANIFEST=$(CURDIR)/plugins.yaml go test -count=1 ./release/...

.PHONY: release
release: $(TOOLS)/goreleaser ## Publish a tagged release (docs/releasing.md): archives dated by the commit, reproducible
	$(TOOLS)/goreleaser release --clean

.PHONY: clean
clean: lab-down
	rm -rf bin dist .lab/run

.PHONY: help
help:
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'
