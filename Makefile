# svc: `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
# One `go test` invocation builds the Temporal server once; -vet=off because `make lint` vets.
TESTFLAGS ?= -vet=off -timeout 25m

.PHONY: help dev build test test-ui test-short lint tools fmt bench fuzz fuzz-canonical clean

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-12s %s\n", $$1, $$2}'

dev: build ## run svc dev: embedded Temporal + SQLite store + API + worker, data in ./.svc
	bin/svc dev

build: ## build bin/svc and bin/svc-shim (the local runtime's per-job supervisor, found beside svc)
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ ./cmd/svc ./cmd/svc-shim

test: build ## run every test, SQLite and PostgreSQL (starts a throwaway PostgreSQL when DATABASE_URL is unset), then fuzz-canonical
	SVC_BIN=$(CURDIR)/bin/svc $(GO) run ./internal/cmd/withpg -- $(GO) test $(TESTFLAGS) ./...
	@$(MAKE) --no-print-directory fuzz-canonical

test-ui: build ## the web view's browser test alone (Debian's chromium; installs playwright-core into /tmp/svc-ui-js)
	./ui/test/install.sh
	SVC_BIN=$(CURDIR)/bin/svc $(GO) test $(TESTFLAGS) -run TestWebView -v ./e2e

test-short: ## fast tests only: no PostgreSQL cluster, no embedded Temporal, no end-to-end
	$(GO) test -short $(TESTFLAGS) ./...

lint: ## gofmt, go vet, staticcheck and workflowcheck (when installed)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@sc=$$(command -v staticcheck || echo "$$($(GO) env GOPATH)/bin/staticcheck"); \
	if [ -x "$$sc" ]; then echo "$$sc ./..."; "$$sc" ./...; else echo "staticcheck not installed: skipped (make tools installs it)"; fi
	@wc=$$(command -v workflowcheck || echo "$$($(GO) env GOPATH)/bin/workflowcheck"); \
	if [ -x "$$wc" ]; then echo "$$wc ./workflows/..."; "$$wc" ./workflows/...; else echo "workflowcheck not installed: skipped (make tools installs it)"; fi

tools: ## install the linters make lint uses (staticcheck, Temporal's workflowcheck)
	$(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2
	$(GO) install go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0

fmt: ## gofmt -w every Go file
	gofmt -w $$(git ls-files '*.go')

bench: ## run the Go benchmarks (both store backends); see docs/benchmarks.md
	$(GO) run ./internal/cmd/withpg -- $(GO) test -run '^$$' -bench . -benchmem ./...

fuzz: ## run each fuzz target for FUZZTIME (default 20s)
	@for t in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
	  for f in $$(grep -h '^func Fuzz' $$t/*_test.go | sed 's/func \(Fuzz[A-Za-z0-9_]*\).*/\1/'); do \
	    echo "== $$t $$f"; $(GO) test $$t -run '^$$' -fuzz "^$$f$$" -fuzztime $${FUZZTIME:-20s} || exit 1; \
	  done; done

# The ledger's digests are written by two writers of one canonical JSON (registry's and trace's event writer);
# their committed corpora run with every go test, and these fuzz them for a bounded time (about 35 s in all).
# -fuzzminimizetime bounds the minimising of each new input, which otherwise stalls a short run.
FUZZ_CANONICAL_TIME ?= 18s
FUZZ_CANONICAL_REGISTRY_TIME ?= 6s
fuzz-canonical: ## fuzz the canonical JSON writers against each other for a bounded time (part of make test)
	$(GO) test -vet=off -run '^$$' -fuzz '^FuzzCanonicalEvent$$' -fuzztime $(FUZZ_CANONICAL_TIME) -fuzzminimizetime 1s ./internal/domain/trace
	$(GO) test -vet=off -run '^$$' -fuzz '^FuzzCanonicalJSON$$' -fuzztime $(FUZZ_CANONICAL_REGISTRY_TIME) -fuzzminimizetime 1s ./internal/domain/registry
	$(GO) test -vet=off -run '^$$' -fuzz '^FuzzCanonicalPrimitives$$' -fuzztime $(FUZZ_CANONICAL_REGISTRY_TIME) -fuzzminimizetime 1s ./internal/domain/registry

clean: ## remove bin/ and the dev data dir ./.svc
	rm -rf bin .svc
