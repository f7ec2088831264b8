# Sluice build, test and tool targets.
#
# Tools are installed at pinned versions into ./bin so that a fresh machine
# needs nothing but Go. Every target that needs a tool depends on it.

SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
export PATH := $(BIN):$(PATH)
export GOBIN := $(BIN)

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/sluicehq/sluice/internal/version.Version=$(VERSION)

STATICCHECK_VERSION := v0.8.2
# workflowcheck is pinned in tools/go.mod (built from there: its own
# golang.org/x/tools is too old for this Go).
VERSITYGW_VERSION := v1.8.0

# Test flags: -race for every package but e2e (see test-e2e). -race also turns on checkptr, which checks every
# unsafe.Pointer conversion; modernc.org's SQLite (machine-translated C,
# under the embedded Temporal server and the watch store) makes millions,
# and checking them was a third of those tests' CPU. Sluice's own code has
# no unsafe, and the race detector still covers every package, these too.
#
# -p 3: three test binaries at once on two cores: cmd/sluice's and
# ratelimit's longest tests wait on Temporal's timers and the simulated
# providers' rates more than they compute.
#
# -ldflags=-w: test binaries without DWARF (stack traces and race reports
# come from the symbol table, not DWARF); linking cmd/sluice's 290 MB test
# binary took 14.8 s of CPU with DWARF, 10.6 s without.
# RACE_BUILD is how test-race compiles: vet and staticcheck read the same
# race-instrumented export data go test then links, so that tree is
# compiled once (test-e2e's non-race sluice is the other compile).
RACE_BUILD := -race -gcflags=modernc.org/...=-d=checkptr=0
TEST_FLAGS ?= $(RACE_BUILD) -count=1 -timeout 20m -p 3 -ldflags=-w

# The slowest packages first: `go test` builds and starts packages in the
# order given, so the long ones start at once instead of running alone at
# the end. ./... adds the rest (each package is tested once).
TEST_FIRST := ./cmd/sluice ./ratelimit ./workflows ./sink ./status

.PHONY: all build run docs test test-race test-e2e e2e-build test-hosts test-setup modules pg-check chromium lint vet fmt-check staticcheck workflowcheck bench tools fuzz clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/sluice ./cmd/sluice

## run: the main job: embedded Temporal + Web UI, simulator, worker and local
## lake; one daily ingest of the whole registry for yesterday, a summary,
## then up for the Web UI until Ctrl-C. RUN_ARGS=--once exits after the batch.
RUN_ARGS ?=
run: build
	$(BIN)/sluice dev $(RUN_ARGS)

## docs: regenerate the command reference in docs/cli from the command
## tree (TestDocsCLIIsCurrent fails when it is stale).
docs:
	rm -f docs/cli/*.md
	$(GO) run ./cmd/sluice gen-docs docs/cli

## test: lint and every test: two chains side by side, so that e2e's
## tests, which mostly wait on Temporal's timers and the simulator's rate
## limits (≈ 140 s of CPU in 400 s), run while the other chain compiles.
##  - e2e: the sluice binary its tests run as server and workers (without
##    the race detector, as users run it), then e2e's tests, built the
##    same way so that they share that one compile of the dependency tree;
##    the processes under test are that binary, not the test driver.
##  - the rest: go vet's race build (go test links from it, staticcheck
##    reads its export data), then every other package with -race, the
##    slowest first, staticcheck, workflowcheck and gofmt's check beside.
## The chromium install and the tools' builds run beside both. go test runs
## no vet of its own (-vet=off): `go vet ./...` in lint is a superset.
##
## e2e's build goes first: vet's race build runs at a lower priority
## (VET_NICE) until it is done, so that e2e's long, mostly idle tests start
## early and wait while the race tree compiles. A fresh clone on a quiet
## 2-core machine: 20 min 44 s with both builds sharing the CPU evenly;
## 18 min 18 s and 26 min 11 s on two other such machines. On the slower
## one the non-race build of cmd/sluice alone, modules downloaded and the
## build cache empty, took 386 s (717 s of CPU): the Temporal server's
## tree (≈ 1,860 packages, Kubernetes' and Google Cloud's clients among
## them, which its worker service and archivers import) compiled twice is
## most of make test's time. (e2e on a race-built sluice, to compile that
## tree once, ran 313 s instead of 187 s and failed TestWorkerKilled and
## TestDeploy on their timing.)
test: pg-check
	@$(MAKE) --no-print-directory -j6 -Oline VET_NICE='nice -n 10' test-e2e test-race lint

# test-race: every package but e2e, with -race.
test-race: vet chromium $(BIN)/versitygw
	$(GO) test $(TEST_FLAGS) -vet=off $(TEST_FIRST) $$($(GO) list ./... | grep -v '/e2e$$')

## test-e2e: e2e's tests on a sluice binary built first (E2E_BINARY, passed
## as SLUICE_E2E_BINARY; built inside the tests, its compile and link were
## in e2e's time). Without -race: e2e's subjects are that binary's
## processes; the driver's own packages are tested with -race in test-race.
E2E_BINARY := $(BIN)/sluice-e2e
E2E_TEST_FLAGS ?= -count=1 -timeout 20m -ldflags=-w
test-e2e: e2e-build $(BIN)/versitygw
	SLUICE_E2E_BINARY=$(E2E_BINARY) $(GO) test $(E2E_TEST_FLAGS) -vet=off ./e2e

e2e-build:
	$(GO) build -o $(E2E_BINARY) ./cmd/sluice

## test-hosts: e2e's TestAcrossHosts (build tag hosts): three workers on
## hosts of their own (network namespaces, internal/netns), a worker
## killed and another's network cut mid-run. About four minutes on a
## loaded two-core machine, which make test's 20-minute budget has not
## left, hence a target of its own; .ci/run calls it after make test.
## Needs root and iproute2 (skips loudly without, fails when CI is set).
test-hosts: $(BIN)/versitygw $(BIN)/staticcheck
	$(GO) vet -tags hosts ./e2e
	$(BIN)/staticcheck -tags hosts ./e2e
	$(GO) test $(E2E_TEST_FLAGS) -vet=off -tags hosts -run 'TestAcrossHosts$$' -v ./e2e

test-setup: tools chromium modules

## modules: download the module graphs of the module and of tools/.
modules:
	$(GO) mod download
	cd tools && $(GO) mod download

## pg-check: say out loud, before the tests, when the PostgreSQL half of the
## watch store's conformance suite will be skipped (go test shows no skip
## message of a passing package); on CI (CI set) those tests fail instead.
pg-check:
	@if [ -z "$$SLUICE_TEST_POSTGRES_URL" ] && ! (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null; then \
	  if [ -n "$$CI" ]; then echo "PostgreSQL is not reachable at 127.0.0.1:5432: on CI the watch store's PostgreSQL tests will FAIL"; \
	  else echo "WARNING: PostgreSQL is not reachable at 127.0.0.1:5432: the watch store's PostgreSQL tests will be SKIPPED" \
	    "(start it: pg_ctlcluster --skip-systemctl-redirect \$$(ls /etc/postgresql) main start; or set SLUICE_TEST_POSTGRES_URL)"; fi; \
	fi

## chromium: the status pages' browser test drives Debian's headless
## chromium (and a Korean font for the pages' Hangul); installed here when
## missing and we are root. Elsewhere the test skips, saying so (on CI it
## fails).
chromium:
	@if ! command -v chromium >/dev/null 2>&1 || ! fc-list :lang=ko 2>/dev/null | grep -q .; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium and fonts-nanum for the browser tests"; \
	    (apt-get install -y -qq chromium fonts-nanum >/dev/null 2>&1 || \
	     (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium fonts-nanum >/dev/null)) || \
	      echo "WARNING: could not install chromium: the browser tests will be SKIPPED (on CI they fail)"; \
	  else echo "WARNING: chromium is missing and cannot be installed here (not root): the browser tests will be SKIPPED (on CI they fail)"; fi; \
	fi

lint: fmt-check vet staticcheck workflowcheck

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null; git ls-files --others --exclude-standard '*.go' 2>/dev/null)); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# VET_NICE: make test runs vet's build at a lower priority (see test).
VET_NICE ?=
vet:
	$(VET_NICE) $(GO) vet $(RACE_BUILD) ./...

# staticcheck reads the export data `go vet` compiles into the build cache
# (GOFLAGS gives its `go list -export` the same build as vet's and go
# test's): after vet, not beside it, or a fresh machine compiles every
# package twice.
staticcheck: $(BIN)/staticcheck vet
	GOFLAGS='$(RACE_BUILD)' $(BIN)/staticcheck ./...

workflowcheck: $(BIN)/workflowcheck
	$(BIN)/workflowcheck ./workflows/... ./ratelimit/... ./events/...

## bench: every benchmark, among them e2e's BenchmarkBackfillDefaultRegistry:
## the default registry's 2016-01-01..2026-08-31 backfill on the embedded
## server against the simulator at rate scale 10 (SLUICE_BENCH_RATE_SCALE),
## a few minutes on its own, hence the timeout. `make test` runs no
## benchmark. BENCH=regexp selects benchmarks.
BENCH ?= .
bench: tools
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -timeout 60m ./...

## fuzz: run every fuzz target for FUZZTIME each.
FUZZTIME ?= 30s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

tools: $(BIN)/staticcheck $(BIN)/versitygw $(BIN)/workflowcheck

$(BIN)/staticcheck:
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

$(BIN)/workflowcheck: tools/go.mod tools/go.sum
	cd tools && $(GO) build -o $(BIN)/workflowcheck go.temporal.io/sdk/contrib/tools/workflowcheck

$(BIN)/versitygw:
	$(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

clean:
	rm -rf $(BIN) var
