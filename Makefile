# arkhe — see README.md. `make run` runs the main job on real input on the embedded default;
# `make test` runs every test against a real PostgreSQL. Both install what they need.
SHELL        := /bin/bash
GO           ?= go
BIN          := bin/arkhe
SHARED       ?= $(abspath ../shared)
DUCKDB_NODE  := @duckdb/node-api@1.5.6-r.1
TOOLS        := $(CURDIR)/.tools
TESTBIN      := $(TOOLS)/testbin
PG_BINDIR    := $(shell ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
TATE         := $(SHARED)/data/tategallery-collection/artworks.jsonl.gz
TATE_MAPPING := request_id=acno,what=title,who=all_artists,when=dateText,url=url

# staticcheck 2026.2.2, the first release built for Go 1.26; installed into $(TOOLS)/bin by `make vet`.
STATICCHECK_VERSION := v0.8.2
STATICCHECK  := $(TOOLS)/bin/staticcheck

.PHONY: all build run test test-short deps pg-server pg-server-dev citus duckdb nginx wrk arklet-deps staticcheck vet fuzz fuzz-long soak bench bench-tate bench-large clean

all: build

build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/arkhe

# The system packages the tests and the embedded default need: PostgreSQL server binaries (14+).
pg-server:
	@if [ -z "$$(ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null)" ] && ! command -v initdb >/dev/null; then \
		echo "installing PostgreSQL server (apt)"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq postgresql >/dev/null; \
	fi

# Citus, PostgreSQL's distributed-table extension, built from the vendored source (Debian has no package
# of it) into the installed server's lib and share dirs, the way the server itself is installed: apt for
# the build packages, then configure, make, make install (via sudo for an ordinary user). A no-op when
# citus.so is already in the server's lib dir. Built without LLVM bitcode (no clang run), without libcurl
# (Citus's anonymous statistics) and lz4 (a columnar compression, unused here); zstd stays: Debian's
# server headers declare it, so Citus's columnar code includes <zstd.h> whatever configure says.
# CITUS_PATCH is applied only when the server's headers export have_createdb_privilege (15.20 and
# later minors); against older minors (15.18) the unpatched source is the one that compiles.
CITUS_VERSION := 13.2.2
CITUS_SRC     := $(SHARED)/vendor/citus/citus-$(CITUS_VERSION).tar.xz
CITUS_PATCH   := $(SHARED)/vendor/citus/citus-$(CITUS_VERSION)-pg15-createdb.patch
CITUS_BUILD   := $(TOOLS)/citus-build
citus: pg-server
	@bindir=$$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1); \
	if [ -n "$$bindir" ]; then major=$$(basename "$$(dirname "$$bindir")"); \
		libdir=/usr/lib/postgresql/$$major/lib; extdir=/usr/share/postgresql/$$major/extension; \
	else libdir=$$(pg_config --pkglibdir); extdir=$$(pg_config --sharedir)/extension; fi; \
	if [ ! -f "$$libdir/citus.so" ] || [ ! -f "$$extdir/citus.control" ]; then \
		if [ -z "$$bindir" ]; then echo "citus.so is not in $$libdir and this is no Debian PostgreSQL layout: install Citus $(CITUS_VERSION) by hand" >&2; exit 1; fi; \
		test -f "$(CITUS_SRC)" || { echo "Citus source $(CITUS_SRC) not found (set SHARED to the shared folder)" >&2; exit 1; }; \
		echo "building Citus $(CITUS_VERSION) for PostgreSQL $$major in $(CITUS_BUILD) (a few minutes)"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$(MAKE) --no-print-directory pg-server-dev PG_MAJOR=$$major || exit 1; \
		rm -rf "$(CITUS_BUILD)" && mkdir -p "$(CITUS_BUILD)" && \
		tar -xJf "$(CITUS_SRC)" -C "$(CITUS_BUILD)" --strip-components=1 && \
		cd "$(CITUS_BUILD)" && \
		{ ! grep -qs have_createdb_privilege "$$("$$bindir/pg_config" --includedir-server)/commands/dbcommands.h" || \
		  patch -p1 -s < "$(CITUS_PATCH)"; } && \
		{ ./configure PG_CONFIG="$$bindir/pg_config" --without-libcurl --without-lz4 > build.log 2>&1 && \
		  MAKEFLAGS= make -j2 with_llvm=no >> build.log 2>&1 && \
		  MAKEFLAGS= $$SUDO make install with_llvm=no >> build.log 2>&1; } || { tail -n 30 build.log >&2; exit 1; }; \
		test -f "$$libdir/citus.so" || { echo "citus.so not installed into $$libdir" >&2; exit 1; }; \
	fi

# The build packages of Citus: the server's headers at exactly the installed server's version
# (dpkg-query), so that installing them never upgrades the server packages under clusters that
# run from them (an upgraded server's libraries fail to load in a running older server:
# SQLSTATE 58P01); refused, with what to do, when apt no longer offers that version. The
# tests run this target with stand-ins for dpkg-query, apt-cache and apt-get on PATH.
PG_MAJOR ?= $(notdir $(patsubst %/bin,%,$(PG_BINDIR)))
pg-server-dev:
	@major='$(PG_MAJOR)'; \
	ver=$$(dpkg-query -W -f='$${Version}' postgresql-$$major 2>/dev/null); \
	if [ -z "$$ver" ]; then \
		echo "pg-server-dev: postgresql-$$major is not installed as a Debian package: install its server headers (pg_config, server/*.h) by hand" >&2; exit 1; fi; \
	if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	$$SUDO apt-get update -qq || exit 1; \
	if ! apt-cache madison postgresql-server-dev-$$major | awk -F'|' '{gsub(/ /, "", $$2); print $$2}' | grep -qxF "$$ver"; then \
		echo "pg-server-dev: apt offers no postgresql-server-dev-$$major $$ver, the installed server's version; installing another would upgrade the server under its running clusters." >&2; \
		echo "pg-server-dev: upgrade the server first (apt-get install postgresql-$$major, then restart its clusters: arkhe db stop), or install the headers of $$ver by hand" >&2; \
		exit 1; fi; \
	echo "installing postgresql-server-dev-$$major=$$ver (the installed server's version) and the Citus build packages (apt)"; \
	$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 \
		postgresql-server-dev-$$major=$$ver libzstd-dev libkrb5-dev >/dev/null

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

# nginx (Debian's package), which the export tests run on loopback with an exported map; the
# package's own service is not needed (the tests start nginx with a configuration of their own).
nginx:
	@if [ ! -x /usr/sbin/nginx ] && ! command -v nginx >/dev/null; then \
		echo "installing nginx (apt)"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq nginx >/dev/null; \
	fi

# wrk (Debian's package), the HTTP load generator of `arkhe bench resolve`.
wrk:
	@if ! command -v wrk >/dev/null; then \
		echo "installing wrk (apt)"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq wrk >/dev/null; \
	fi

# Debian's Django and PostgreSQL driver for /usr/bin/python3, under which `arkhe bench resolve`
# runs arklet (the vendored peer resolver); Debian 12 packages Django 3.2.
arklet-deps:
	@if ! /usr/bin/python3 -c 'import django, psycopg2' 2>/dev/null; then \
		echo "installing python3-django and python3-psycopg2 (apt)"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq python3-django python3-psycopg2 >/dev/null; \
	fi

deps: pg-server citus duckdb nginx

# staticcheck at STATICCHECK_VERSION, installed when missing or at another version.
staticcheck:
	@$(STATICCHECK) -version 2>/dev/null | grep -qF '($(STATICCHECK_VERSION:v%=%))' || \
		{ echo "installing staticcheck $(STATICCHECK_VERSION) into $(TOOLS)/bin"; \
		  GOBIN=$(TOOLS)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION); }

# The gates that keep the house in order: formatting, go vet, imports pointing the way
# docs/packages.md allows, a tidy go.mod, and staticcheck.
vet: staticcheck
	@test -z "$$(gofmt -l .)" || (echo "gofmt needed:"; gofmt -l .; exit 1)
	$(GO) vet ./...
	$(GO) run ./internal/importgate
	@$(GO) mod tidy -diff || (echo "go.mod or go.sum is not tidy: run go mod tidy"; exit 1)
	$(STATICCHECK) ./...

# The main job on real input, on the embedded default: mint one ARK per Tate artwork (69,202).
# A second run replays them all and mints nothing. The mint map and any reject file go into the
# checkout (bench-tate names files in its throw-away directory).
RUN_MINTMAP ?= tate-mintmap.csv
RUN_REJECTS ?= tate-rejects.csv
run: pg-server build
	$(BIN) --version
	$(BIN) init --test-registration
	$(BIN) mint --client test-minter --map '$(TATE_MAPPING)' --out $(RUN_MINTMAP) --rejects $(RUN_REJECTS) $(TATE)

# The whole suite, then every Go benchmark once (-benchtime 1x: a run that checks the benchmark
# still works, not its speed, so that make bench does not stop at a benchmark the schema has
# outgrown; about 20 s).
test: deps vet
	ARKHE_TOOLS=$(TOOLS) $(GO) test -count=1 -timeout 30m ./...
	ARKHE_TOOLS=$(TOOLS) $(GO) test -count=1 -timeout 10m -run '^$$' -bench . -benchtime 1x ./...

# The single-node suite (go test -short): it leaves out the Citus cluster, the million-row runs, the fault runs and
# the benchmarks' end-to-end runs, which make test runs. The test binaries are kept in $(TESTBIN) and linked
# again only when their code changed (go test links every one on every run: about 39 s of CPU time, a fifth of
# the suite); internal/testrun runs them as go test would.
test-short: pg-server duckdb nginx
	$(GO) test -c -o $(TESTBIN)/ ./...
	ARKHE_TOOLS=$(TOOLS) $(GO) run ./internal/testrun $(TESTBIN) -test.short -test.timeout=10m -test.paniconexit0

# Fuzz every reader for FUZZTIME each: the mint manifests (CSV, JSON Lines, Parquet, and the
# layers under them: line ends, gzip/xz), every legacy export format, ARK normalization. A
# crasher is written to the package's testdata/fuzz/<target>/ and from then on runs with
# `go test` as a regression test: commit it with the fix. Minimizing an input is capped at 50
# runs (with the default 60 s the larger seeds stall the fuzzer for most of FUZZTIME).
FUZZTIME     ?= 30s
FUZZ_WORKERS ?= 1
FUZZ_TARGETS := ark:FuzzNormalize ark:FuzzCheckChar \
	pipeline:FuzzCSVManifest pipeline:FuzzJSONLManifest pipeline:FuzzJSONScanner pipeline:FuzzParquetManifest pipeline:FuzzMintMap pipeline:FuzzChangeManifest \
	textin:FuzzCSVScanner textin:FuzzLineEndReader textin:FuzzTextReader \
	legacy:FuzzN2TDump legacy:FuzzANVL legacy:FuzzReaders legacy:FuzzDumpObject legacy:FuzzArrayFramer \
	resolver:FuzzResolvePath verify:FuzzBaselineFile api:FuzzANVL

fuzz:
	@failed=; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t#*:}; echo "fuzz ./$$pkg $$name for $(FUZZTIME)"; \
		$(GO) test ./$$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 50x \
			-parallel $(FUZZ_WORKERS) || failed="$$failed ./$$pkg:$$name"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: crashers found in$$failed (each kept under the package's testdata/fuzz)"; exit 1; fi

# The soak (docs/development.md): mint SOAK_ROWS rows, in manifests of SOAK_PART rows (one
# mint command each), on a throw-away cluster in SOAK_DIR, with a fault every SOAK_FAULT_MIN to
# SOAK_FAULT_MAX seconds (kind and wait drawn with SOAK_SEED): bin/arkhe killed (SIGKILL), the
# server restarted fast or immediately, a COPY's backend frozen (SIGSTOP) past
# SOAK_BATCH_TIMEOUT; a stopped run is run again until it completes. Then every invariant is
# checked and arkhe verify run. The fault log is SOAK_DIR/soak.log; a soak that passes removes
# its cluster, manifests and mint maps.
SOAK_ROWS          ?= 10000000
SOAK_PART          ?= 1000000
SOAK_SEED          ?= 1
SOAK_FAULT_MIN     ?= 20
SOAK_FAULT_MAX     ?= 60
SOAK_BATCH_TIMEOUT ?= 30s
SOAK_MIN_FAULTS    ?= 100
SOAK_DIR           ?= $(CURDIR)/.soak
soak: pg-server build
	ARKHE_SOAK_ROWS=$(SOAK_ROWS) ARKHE_SOAK_PART=$(SOAK_PART) ARKHE_SOAK_SEED=$(SOAK_SEED) \
	ARKHE_SOAK_FAULT_MIN=$(SOAK_FAULT_MIN) ARKHE_SOAK_FAULT_MAX=$(SOAK_FAULT_MAX) ARKHE_SOAK_MIN_FAULTS=$(SOAK_MIN_FAULTS) \
	ARKHE_SOAK_BATCH_TIMEOUT=$(SOAK_BATCH_TIMEOUT) ARKHE_SOAK_BIN=$(abspath $(BIN)) ARKHE_SOAK_DIR=$(SOAK_DIR) \
	ARKHE_TOOLS=$(TOOLS) $(GO) test -count=1 -timeout 0 -v -run '^TestSoak$$' ./cmd/arkhe

# Fuzz every target of FUZZ_TARGETS for FUZZ_LONG_TIME each, keeping the corpus: go test -fuzz adds
# each new interesting input to the fuzz cache, $(FUZZ_GOCACHE)/fuzz/<package path>/<target>/ (by
# default Go's build cache, so later runs, make fuzz's included, start from it; go clean -cache
# leaves it, go clean -fuzzcache removes it; FUZZ_GOCACHE=<dir> keeps it, and a build cache, there).
# A crasher goes to the package's testdata/fuzz/<target>/, as with make fuzz. At the end a line per
# target: the time it fuzzed (and with the build), its executions, the new corpus entries and the
# crashers found.
FUZZ_LONG_TIME ?= 10m
FUZZ_GOCACHE   ?= $(shell $(GO) env GOCACHE)
FUZZ_MODULE     = $(shell $(GO) list -m)
fuzz-long:
	@echo "fuzz corpus: $(FUZZ_GOCACHE)/fuzz/$(FUZZ_MODULE)/<package>/<target>"; \
	count() { if [ -d "$$1" ]; then find "$$1" -type f | wc -l; else echo 0; fi; }; \
	summary=; failed=; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t#*:}; corpus="$(FUZZ_GOCACHE)/fuzz/$(FUZZ_MODULE)/$$pkg/$$name"; \
		crashdir="$$pkg/testdata/fuzz/$$name"; c0=$$(count "$$corpus"); k0=$$(count "$$crashdir"); \
		log=$$(mktemp); start=$$(date +%s); echo "fuzz ./$$pkg $$name for $(FUZZ_LONG_TIME)"; \
		GOCACHE="$(FUZZ_GOCACHE)" $(GO) test ./$$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZ_LONG_TIME) \
			-fuzzminimizetime 50x -parallel $(FUZZ_WORKERS) 2>&1 | tee "$$log"; status=$${PIPESTATUS[0]}; \
		secs=$$(( $$(date +%s) - start )); \
		last=$$(grep 'fuzz: elapsed: .*execs: ' "$$log" | tail -1); rm -f "$$log"; \
		execs=$$(echo "$$last" | sed -n 's/.*execs: \([0-9]*\).*/\1/p'); \
		fuzzed=$$(echo "$$last" | sed -n 's/.*elapsed: \([0-9hms.]*\),.*/\1/p'); \
		crashers=$$(( $$(count "$$crashdir") - k0 )); \
		if [ "$$status" != 0 ]; then failed="$$failed ./$$pkg:$$name"; fi; \
		summary="$$summary$$(printf '%-32s fuzzed %-7s (%5ss with the build)  %10s execs  %5s new corpus entries  %s crashers%s' \
			"$$pkg:$$name" "$${fuzzed:-0s}" "$$secs" "$${execs:-0}" "$$(( $$(count "$$corpus") - c0 ))" "$$crashers" \
			"$$( [ $$status != 0 ] && echo ", exit $$status")")\n"; \
	done; \
	printf '\nfuzz-long, %s per target (corpus under %s):\n%b' "$(FUZZ_LONG_TIME)" "$(FUZZ_GOCACHE)/fuzz/$(FUZZ_MODULE)" "$$summary"; \
	if [ -n "$$failed" ]; then echo "fuzz-long: crashers found in$$failed (each kept under the package's testdata/fuzz)"; exit 1; fi

# Macro benchmarks at 1 million rows; each prints the server settings it ran with. The mint runs
# twice: on a single node against both floors (arkhe's schema and the plain floor), and on Citus
# (a throw-away coordinator and two workers on this machine) beside a single node, median of 3
# runs of each, alternating. Resolution: arkhe serve against nginx with the exported map, the
# pgbench floor and arklet, 30 s of wrk each over 64 connections. The online API: single mints
# over keep-alive HTTP from 32 clients against a pgbench floor of the same insert, and arklet.
ARKLET_SRC := $(SHARED)/vendor/arklet/arklet-272c5e6.tar.gz
bench: pg-server citus nginx wrk arklet-deps build
	$(GO) test ./ark ./pipeline ./fixtures ./bench -run '^$$' -bench . -benchmem
	$(BIN) bench mint --rows 1000000 --repeat 3
	$(BIN) bench mint --citus --rows 1000000 --repeat 3 --workers 3
	$(BIN) bench import --rows 1000000 --repeat 3
	$(BIN) bench verify --rows 1000000
	$(BIN) bench sizing --rows 1000000
	$(BIN) bench linkcheck
	$(BIN) bench update --rows 1000000
	$(BIN) bench resolve --arks 1000000 --arklet $(ARKLET_SRC)
	$(BIN) bench resolve --arks 1000000 --hostile 1000000 --duration 30s
	$(BIN) bench api --arklet $(ARKLET_SRC)
	$(MAKE) --no-print-directory bench-tate

# The Tate ledger as loaded: make run (69,202 ARKs) into a throw-away embedded cluster, arkhe
# sizing of it, and the octets of ark + receipt per ARK against the target of 360 (all-in,
# without a REINDEX).
bench-tate: pg-server build
	bench/tate-sizing.sh $(BIN) 360

# The same at 10 million: mint into a ledger already holding 10 million ARKs (kept between runs
# in $(BENCH_DIR)), the audit of a 10-million-ARK ledger, and reconcile in bounded memory.
BENCH_DIR ?= $(CURDIR)/.bench
bench-large: pg-server nginx wrk arklet-deps build
	$(BIN) bench mint --rows 1000000 --preload 10000000 --bench-dir $(BENCH_DIR)/mint
	$(BIN) bench verify --rows 10000000 --bench-dir $(BENCH_DIR)/verify
	$(BIN) bench import --rows 10000000 --reconcile --bench-dir $(BENCH_DIR)/import
	$(BIN) bench update --rows 10000000 --bench-dir $(BENCH_DIR)/update
	$(BIN) bench resolve --arks 10000000 --arklet $(ARKLET_SRC) --bench-dir $(BENCH_DIR)/resolve

clean:
	rm -rf bin
