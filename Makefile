# Drover's commands. `make help` lists them. Every target works on a fresh machine with Go:
# Postgres comes from DATABASE_URL when it answers, else from a private cluster under .data/
# (scripts/devdb.sh).

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

BIN := .data/bin
TOOLS := .data/tools
GOLANGCI_LINT_VERSION := v2.15.0
SQLC_VERSION := v1.31.1
# Every module of the workspace, from go.work.
MODULES := $(shell go work edit -json | sed -n 's/.*"DiskPath": "\.\/\(.*\)".*/\1/p')
# Every store package whose queries sqlc compiles: the folders holding a sqlc.yaml.
SQLC_DIRS = $(shell find $(MODULES) -name sqlc.yaml -exec dirname {} \; | sort)

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

.PHONY: build
build: ## build every command into .data/bin
	@mkdir -p $(BIN)
	@go build -o $(BIN)/ $$(go list -f '{{if eq .Name "main"}}{{.Dir}}{{end}}' work)

.PHONY: run
run: build ## migrate, start all services and Jaeger, run the demos, serve until Ctrl-C (ONCE=1: exit after the demos)
	@[ -n "$${OTEL_EXPORTER_OTLP_ENDPOINT:-}$${OTEL_EXPORTER_OTLP_TRACES_ENDPOINT:-}" ] || scripts/jaeger.sh background
	@url=$$(scripts/devdb.sh app-url) && $(BIN)/devrun -bin $(BIN) -database-url "$$url" -jaeger "$$(scripts/jaeger.sh path)" $(if $(ONCE),-once)

.PHONY: test
test: ## run every module's tests with the race detector against a real Postgres (and Jaeger, built first); failures again at the end
	@scripts/jaeger.sh build >/dev/null
	@url=$$(scripts/devdb.sh url) && DATABASE_URL="$$url" scripts/gotest.sh -race -count=1 -timeout 30m work
	@$(MAKE) --no-print-directory rules

.PHONY: docs-check
docs-check: ## run every README command marked docs-check against a fresh make run fleet (scripts/docs-check.sh)
	@scripts/docs-check.sh

.PHONY: bench
bench: ## run the benchmarks; each prints our figure, its floor and the ratio (scripts/bench.sh; BENCH=build runs one, BENCH=build-list the group list)
	@url=$$(scripts/devdb.sh url) && DATABASE_URL="$$url" scripts/bench.sh

.PHONY: generate
generate: $(TOOLS)/sqlc ## regenerate every store's dbsqlc package from its queries (sqlc)
	@for d in $(SQLC_DIRS); do echo "sqlc $$d"; (cd $$d && $(abspath $(TOOLS))/sqlc generate) || exit 1; done

.PHONY: lint
lint: $(TOOLS)/golangci-lint $(TOOLS)/sqlc ## commit subjects, docs stand alone, every module tidy and building with GOWORK=off, alert rules load, no test bounds elapsed time, no SQL writes River's tables, gofmt, sqlc diff, golangci-lint
	@scripts/check-commits.sh
	@scripts/check-docs.sh
	@$(MAKE) --no-print-directory rules
	@scripts/check-river-writes.sh
	@scripts/check-test-clock.sh
	@scripts/check-modules.sh
	@test -z "$$(gofmt -l $(MODULES) infra)" || { gofmt -l $(MODULES) infra; echo "gofmt: the files above need formatting"; exit 1; }
	@for d in $(SQLC_DIRS); do (cd $$d && $(abspath $(TOOLS))/sqlc diff) || { echo "sqlc: $$d/dbsqlc is stale, run make generate"; exit 1; }; done
	@for m in $(MODULES); do echo "lint $$m"; (cd $$m && $(abspath $(TOOLS))/golangci-lint run ./...) || exit 1; done
	@echo "lint infra" && cd infra && GOWORK=off $(abspath $(TOOLS))/golangci-lint run ./...

# infra is a module outside go.work: the Prometheus module's dependencies stay out of the services'.
.PHONY: rules
rules: ## load the alert rules and the dashboards' queries with Prometheus's own parsers (infra)
	@cd infra && GOWORK=off go test -count=1 ./...

.PHONY: hooks
hooks: ## install the git hooks of scripts/githooks (commit-msg refuses a subject over 72 characters)
	@git config core.hooksPath scripts/githooks && echo "git hooks: core.hooksPath = scripts/githooks"

$(TOOLS)/golangci-lint:
	@mkdir -p $(TOOLS)
	GOBIN=$(abspath $(TOOLS)) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

$(TOOLS)/sqlc:
	@mkdir -p $(TOOLS)
	GOBIN=$(abspath $(TOOLS)) go install github.com/sqlc-dev/sqlc/cmd/sqlc@$(SQLC_VERSION)

.PHONY: migrate
migrate: build ## apply migrations to the database make run uses
	@url=$$(scripts/devdb.sh app-url) && DATABASE_URL="$$url" $(BIN)/migrate up && DATABASE_URL="$$url" $(BIN)/migrate status

.PHONY: stop-db
stop-db: ## stop the private Postgres under .data/
	@scripts/devdb.sh stop

.PHONY: compose-check
compose-check: ## validate docker-compose.yml and infra/k8s; run every binary's check-config with their environments
	@bash infra/compose-check.sh

.PHONY: fmt
fmt: ## format every Go file
	@gofmt -w $(MODULES) infra
