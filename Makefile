# oob-server-probe: an OpenVPN 2.6 patch series and its tooling.
# See README.md. Everything builds under build/ (ignored by git).

TOP := $(CURDIR)
# the base a target works on (scripts/base.sh): 2.6 (patches/2.6/, the
# distributions' series, build/openvpn) or master (patches/master/,
# build/openvpn-master); e.g. "make build BASE=master"
BASE ?= 2.6
export BASE
ifeq ($(BASE),2.6)
WT  := build/openvpn
else
WT  := build/openvpn-$(BASE)
endif

.PHONY: all deps fetch tree retree export series-check check-commits build baseline master-builds \
        check test-only style relay demo bench clean distclean help 2.7-builds series-diff \
        deb check-deb check-trixie check-asan fuzz-long

all: build

help:
	@echo "make demo          run the demo (builds what is missing)"
	@echo "make check         install deps, build, run all tests"
	@echo "(BASE=2.6, the default, BASE=master or BASE=2.7: which series the next targets work on)"
	@echo "make series-diff   the series' own files, master vs the 2.7 backport"
	@echo "make tree          fetch the base, create the work tree with patches/BASE/ applied"
	@echo "make build         build build/bin/openvpn[-BASE] from the work tree"
	@echo "make baseline      build build/bin/openvpn-baseline (same base, no series)"
	@echo "make export        write the work tree's commits back to patches/BASE/"
	@echo "make series-check  git am patches/ onto a fresh base; compare with build/openvpn"
	@echo "make style         uncrustify check of the series' code"
	@echo "make check-commits build and unit-test every commit of the series on its own (slow)"
	@echo "make check-commits-windows  build every commit of the master series with mingw (slow)"
	@echo "make bench         connect-time and server-cost benchmark"
	@echo "make bench-fleet   herds of real clients vs several servers (table, plot)"
	@echo "make fleetsim      fleet simulator, 100000 clients x 50 servers (oob_rank.c)"
	@echo "make soak          seeded soak, patched vs unpatched client (SOAK_MINUTES, default 10)"
	@echo "make deb           Debian packages with the series in debian/patches (and stock, for lintian)"
	@echo "make check-deb     e2e tests against the packaged openvpn (SKIP, a non-zero exit, without make deb)"
	@echo "make check-trixie  does the series apply to and build on Debian 13's openvpn source"
	@echo "make check-asan    e2e tests against an ASan+UBSan build (build/bin/openvpn-asan)"
	@echo "make fuzz-long     every fuzz target for FUZZ_RUNS (default 10 million) inputs"
	@echo "make retree        throw build/openvpn away and recreate it (refuses unexported work)"

deps:
	@scripts/deps.sh

fetch: deps
	@bash -c '. scripts/base.sh; top=$(TOP); base_load && base_fetch'

tree: fetch
	@if [ -d $(WT)/.git ]; then echo "tree: $(WT) exists"; else scripts/make-tree.sh; fi

retree: fetch
	@if [ -d $(WT)/.git ]; then scripts/series-check.sh >/dev/null || \
	    { echo "retree: $(WT) has work not in patches/$(BASE)/ (make export first)"; exit 1; }; fi
	rm -rf $(WT) build/obj/$(if $(filter 2.6,$(BASE)),,$(BASE)-)patched
	scripts/make-tree.sh

export:
	@scripts/export.sh

series-check: tree
	@scripts/series-check.sh

check-commits: deps tree
	@scripts/check-commits.sh

build: tree
	@scripts/build.sh patched

baseline: tree
	@scripts/build.sh baseline

relay:
	@$(MAKE) -s -C testbed/relay

style: tree
	@python3 scripts/style.py; rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 77 ]

# both series: 2.6 (build, baseline) and, once patches/master/ holds it,
# master (build/bin/openvpn-master and the unpatched openvpn-master-baseline)
# the builds (scripts/build-all.sh: the work trees, then the patched
# builds of the three bases beside their baselines), then the tests
check: deps relay
	@scripts/build-all.sh
	@tests/check.sh

master-builds:
	@if [ -s patches/master/series ]; then \
	    $(MAKE) --no-print-directory tree BASE=master && \
	    BASE=master scripts/build.sh patched && BASE=master scripts/build.sh baseline; \
	fi

# the 2.7 series (patches/2.7/: the master series backported to v2.7.6)
2.7-builds:
	@if [ -s patches/2.7/series ]; then \
	    $(MAKE) --no-print-directory tree BASE=2.7 && \
	    BASE=2.7 scripts/build.sh patched && BASE=2.7 scripts/build.sh baseline; \
	fi

# the series' own files: master series vs its 2.7 backport (patches/2.7/ALLOWED-DIFFS)
series-diff:
	@$(MAKE) --no-print-directory tree BASE=master && $(MAKE) --no-print-directory tree BASE=2.7 && \
	    scripts/series-diff.sh build/openvpn-master build/openvpn-2.7

# run the tests without (re)building
test-only:
	@tests/check.sh

demo: deps build baseline relay
	@testbed/demo.sh

bench: deps build baseline relay nomem
	@testbed/bench.sh

# herds of real clients against three servers (issue 25): the series vs
# unpatched 2.6.14 in the same run; table and plot in build/bench-fleet/
.PHONY: bench-fleet
bench-fleet: deps build baseline
	@testbed/bench-fleet.sh

# the fleet simulator (testbed/fleetsim/): the master series' oob_rank.c
# and oob_server.c in a model of 100 000 clients x 50 servers
.PHONY: fleetsim
fleetsim: master-builds
	@testbed/fleetsim/run.sh

# the series without its probe memory commits, for the bench (issue 19)
.PHONY: nomem
nomem:
	@scripts/build.sh nomem

# seeded soak of the patched client against the unpatched one (tests/soak/
# README.md): new random seeds for SOAK_MINUTES, table in build/soak/results.md;
# replay one with tests/soak/soak.py --seed N --verbose
# SOAK_JOBS soaks side by side (default 2, one per core of the reference machine)
SOAK_MINUTES ?= 10
SOAK_JOBS ?= 2
.PHONY: soak
soak: relay
	@tests/soak/soak.py --minutes $(SOAK_MINUTES) --jobs $(SOAK_JOBS)

# distribution packages (slow; not part of make check)
deb: deps
	@scripts/deb.sh

# a skip (no .deb, not root, a test skipped) is not a success: t_packaged.sh
# prints "SKIP: reason" and exits 77, and so does this recipe; make itself
# then exits non-zero ("Error 77"; make cannot pass 77 on), so that a
# `make check-deb` that tested nothing is never green
check-deb: relay
	@tests/deb/t_packaged.sh; rc=$$?; \
	if [ $$rc -eq 77 ]; then echo "check-deb: SKIP, nothing (or not everything) was tested: see the SKIP line above" >&2; fi; \
	exit $$rc

check-trixie: deps
	@scripts/trixie-check.sh

# the end-to-end tests against an ASan+UBSan build of the patched openvpn
# (build/bin/openvpn-asan): any sanitizer report (per-process files in
# build/check-asan/san/, leaks checked at exit) is a failure.  ASan's
# quarantine of freed memory makes the tests' RSS-growth checks fail; with
# ASAN_EXTRA=quarantine_size_mb=0 they are meaningful (use-after-free of
# memory freed earlier is then no longer caught)
ASAN_DIR := $(TOP)/build/check-asan
check-asan: deps tree baseline relay
	@scripts/build.sh asan
	@rm -rf $(ASAN_DIR); mkdir -p $(ASAN_DIR)/san; chmod 1777 $(ASAN_DIR)/san; \
	export TB_BIN=$(TOP)/build/bin/openvpn-asan TB_ROOT=$(TOP)/build/testbed-asan \
	    ASAN_OPTIONS=log_path=$(ASAN_DIR)/san/asan:detect_leaks=1:halt_on_error=1:abort_on_error=0$(if $(ASAN_EXTRA),:$(ASAN_EXTRA)) \
	    LSAN_OPTIONS=log_path=$(ASAN_DIR)/san/lsan \
	    UBSAN_OPTIONS=log_path=$(ASAN_DIR)/san/ubsan:halt_on_error=1:print_stacktrace=1; \
	t0=$$(date +%s); fail=0; \
	for t in tests/e2e/t_*.sh; do \
	    n=$$(basename $$t .sh); t1=$$(date +%s); \
	    timeout --kill-after=10 900 bash $$t >$(ASAN_DIR)/$$n.log 2>&1 </dev/null; rc=$$?; \
	    case $$rc in 0) r=PASS;; 77) r=SKIP;; *) r=FAIL; fail=1;; esac; \
	    echo "$$r e2e/$${n#t_} ($$(( $$(date +%s) - t1 )) s; $$(grep -c '^ok' $(ASAN_DIR)/$$n.log) ok, $$(grep -c '^not ok' $(ASAN_DIR)/$$n.log) not ok)"; \
	    [ $$r = FAIL ] && grep -E '^not ok' $(ASAN_DIR)/$$n.log | head -5 | sed 's/^/    /'; \
	done; \
	reports=$$(find $(ASAN_DIR)/san -type f | sort); \
	for f in $$reports; do echo "=== sanitizer report $$f"; head -60 $$f; done; \
	[ -z "$$reports" ] || fail=1; \
	echo "check-asan: $$(echo $$reports | wc -w) sanitizer report(s), $$(( $$(date +%s) - t0 )) s (logs in build/check-asan)"; \
	exit $$fail

# every libFuzzer target for FUZZ_RUNS inputs, one after the other, with a
# corpus of its own (build/fuzz-long)
FUZZ_RUNS ?= 10000000
fuzz-long: build
	@FUZZ_RUNS=$(FUZZ_RUNS) FUZZ_OUT=$(TOP)/build/fuzz-long tests/fuzz/run.sh

clean:
	rm -rf build/obj build/bin build/check build/bench
	-$(MAKE) -s -C testbed/relay clean

distclean:
	rm -rf build
	-$(MAKE) -s -C testbed/relay clean

# Windows (tests/windows/README.md): the master series cross-built with
# mingw-w64 and CMake (libraries from Debian's source packages, cached in
# build/win/deps), openvpn.exe and the unit tests in build/win/bin/; the
# checks run them under Wine (unit tests, --version/--help, the probe)
.PHONY: windows check-windows check-commits-windows
windows:
	@scripts/windows.sh build
check-windows:
	@scripts/windows.sh check
# every commit of the master series built on its own with mingw (-Werror)
check-commits-windows:
	@scripts/windows.sh commits
