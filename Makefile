# arkhe — see README.md. `make run` runs the main job on real input on the embedded default;
# `make test` runs every test against a real PostgreSQL. Both install what they need.
SHELL        := /bin/bash
GO           ?= go
BIN          := bin/arkhe
SHARED       ?= $(abspath ../shared)
DUCKDB_NODE  := @duckdb/node-api@1.5.6-r.1
TOOLS        := $(CURDIR)/.tools
PG_BINDIR    := $(shell ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
TATE         := $(SHARED)/data/tategallery-collection/artworks.jsonl.gz
TATE_MAPPING := request_id=acno,what=title,who=all_artists,when=dateText,url=url

.PHONY: all build run test test-short deps pg-server duckdb vet fuzz bench bench-large clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/arkhe

# The system packages the tests and the embedded default need: PostgreSQL server binaries (14+).
pg-server:
	@if [ -z "$$(ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null)" ] && ! command -v initdb >/dev/null; then \
		echo "installing PostgreSQL server (apt)"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq postgresql >/dev/null; \
	fi

# DuckDB for Node: the independent Parquet reader the tests use.
duckdb:
	@if [ ! -d "$(TOOLS)/node_modules/@duckdb/node-api" ]; then \
		if ! command -v npm >/dev/null; then \
			if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
			$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq nodejs npm >/dev/null; \
		fi; \
		echo "installing $(DUCKDB_NODE) into $(TOOLS)"; \
		mkdir -p $(TOOLS) && npm install --silent --no-audit --no-fund --prefix $(TOOLS) $(DUCKDB_NODE) >/dev/null; \
	fi

deps: pg-server duckdb

vet:
	@test -z "$$(gofmt -l .)" || (echo "gofmt needed:"; gofmt -l .; exit 1)
	$(GO) vet ./...

# The main job on real input, on the embedded default: mint one ARK per Tate artwork (69,202).
# A second run replays them all and mints nothing.
run: pg-server build
	$(BIN) init --test-registration
	$(BIN) mint --client test-minter --map '$(TATE_MAPPING)' --out tate-mintmap.csv --rejects tate-rejects.csv $(TATE)

test: deps vet
	ARKHE_TOOLS=$(TOOLS) $(GO) test -count=1 -timeout 30m ./...

test-short: deps
	ARKHE_TOOLS=$(TOOLS) $(GO) test -count=1 -short ./...

# Fuzz every reader for FUZZTIME each: the mint manifests (CSV, JSON Lines, Parquet, and the
# layers under them: line ends, gzip/xz), every legacy export format, ARK normalization. A
# crasher is written to the package's testdata/fuzz/<target>/ and from then on runs with
# `go test` as a regression test: commit it with the fix. Minimizing an input is capped at 50
# runs (with the default 60 s the larger seeds stall the fuzzer for most of FUZZTIME).
FUZZTIME     ?= 30s
FUZZ_WORKERS ?= 1
FUZZ_TARGETS := ark:FuzzNormalize ark:FuzzCheckChar \
	pipeline:FuzzCSVManifest pipeline:FuzzCSVScanner pipeline:FuzzJSONLManifest pipeline:FuzzJSONScanner \
	pipeline:FuzzParquetManifest pipeline:FuzzLineEndReader pipeline:FuzzTextReader \
	legacy:FuzzN2TDump legacy:FuzzANVL legacy:FuzzReaders legacy:FuzzDumpObject legacy:FuzzArrayFramer

fuzz:
	@failed=; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t#*:}; echo "fuzz ./$$pkg $$name for $(FUZZTIME)"; \
		$(GO) test ./$$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 50x \
			-parallel $(FUZZ_WORKERS) || failed="$$failed ./$$pkg:$$name"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: crashers found in$$failed (each kept under the package's testdata/fuzz)"; exit 1; fi

# Macro benchmarks at 1 million rows (README decision 16); each prints the server settings it ran with.
bench: pg-server build
	$(GO) test ./ark ./pipeline ./fixtures ./bench -run '^$$' -bench . -benchmem
	$(BIN) bench mint --rows 1000000
	$(BIN) bench import --rows 1000000 --repeat 3
	$(BIN) bench verify --rows 1000000
	$(BIN) bench sizing --rows 1000000

# The same at 10 million: mint into a ledger already holding 10 million ARKs (kept between runs
# in $(BENCH_DIR)), the audit of a 10-million-ARK ledger, and reconcile in bounded memory.
BENCH_DIR ?= $(CURDIR)/.bench
bench-large: pg-server build
	$(BIN) bench mint --rows 1000000 --preload 10000000 --bench-dir $(BENCH_DIR)/mint
	$(BIN) bench verify --rows 10000000 --bench-dir $(BENCH_DIR)/verify
	$(BIN) bench import --rows 10000000 --reconcile --bench-dir $(BENCH_DIR)/import

clean:
	rm -rf bin
