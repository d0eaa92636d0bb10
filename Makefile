# oob-server-probe: an OpenVPN 2.6 patch series and its tooling.
# See README.md. Everything builds under build/ (ignored by git).

TOP := $(CURDIR)
WT  := build/openvpn

.PHONY: all deps fetch tree retree export series-check check-commits build baseline \
        check test-only style relay demo bench clean distclean help \
        deb check-deb check-trixie

all: build

help:
	@echo "make demo          run the demo (builds what is missing)"
	@echo "make check         install deps, build, run all tests"
	@echo "make tree          fetch the base, create build/openvpn with patches/ applied"
	@echo "make build         build build/bin/openvpn from build/openvpn"
	@echo "make baseline      build build/bin/openvpn-baseline (same base, no series)"
	@echo "make export        write build/openvpn's commits back to patches/"
	@echo "make series-check  git am patches/ onto a fresh base; compare with build/openvpn"
	@echo "make style         uncrustify check of the series' code"
	@echo "make check-commits build and unit-test every commit of the series on its own (slow)"
	@echo "make bench         connect-time and server-cost benchmark"
	@echo "make deb           Debian packages with the series in debian/patches (and stock, for lintian)"
	@echo "make check-deb     e2e tests against the packaged openvpn (SKIP without make deb)"
	@echo "make check-trixie  does the series apply to and build on Debian 13's openvpn source"
	@echo "make retree        throw build/openvpn away and recreate it (refuses unexported work)"

deps:
	@scripts/deps.sh

fetch: deps
	@scripts/fetch-base.sh

tree: fetch
	@if [ -d $(WT)/.git ]; then echo "tree: $(WT) exists"; else scripts/make-tree.sh; fi

retree: fetch
	@if [ -d $(WT)/.git ]; then scripts/series-check.sh >/dev/null || \
	    { echo "retree: $(WT) has work not in patches/ (make export first)"; exit 1; }; fi
	rm -rf $(WT) build/obj/patched
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

check: deps build baseline relay
	@tests/check.sh

# run the tests without (re)building
test-only:
	@tests/check.sh

demo: deps build baseline relay
	@testbed/demo.sh

bench: deps build baseline relay
	@testbed/bench.sh

# distribution packages (slow; not part of make check)
deb: deps
	@scripts/deb.sh

check-deb: relay
	@tests/deb/t_packaged.sh; rc=$$?; [ $$rc -eq 0 ] || [ $$rc -eq 77 ]

check-trixie: deps
	@scripts/trixie-check.sh

clean:
	rm -rf build/obj build/bin build/check build/bench
	-$(MAKE) -s -C testbed/relay clean

distclean:
	rm -rf build
	-$(MAKE) -s -C testbed/relay clean
