#!/bin/bash
# make check-deb: the end-to-end tests against the openvpn of the package
# that `make deb` built (build/deb/openvpn_*+oob*.deb), extracted with
# dpkg-deb -x (nothing is installed on the machine):
#   - tests/e2e/t_interop.sh, t_server_probe.sh, t_client_probe.sh and
#     t_shortcut.sh with TB_BIN=<package>/usr/sbin/openvpn and the baseline
#     TB_BASELINE=build/bin/openvpn-baseline (when that is missing: the
#     stock package's openvpn from the same `make deb` run);
#   - t_interop.sh once more against the stock package's binary (the same
#     Debian package without the series), when it is there;
#   - tests/deb/t_unit_layout.sh: the package's openvpn-server@ /
#     openvpn-client@ units' command lines, without systemd.
# Prints PASS/FAIL/SKIP per test with its ok/not ok counts and a summary
# line; logs in build/deb/check/. Exit 0 pass (every test ran and passed),
# 1 fail, 77 skip: no .deb, not root, or a test skipped (always with a
# "SKIP: reason" line; a partial run is not a pass). With CI=true a skip is
# a failure (exit 1), as in tests/check.sh and testbed/lib.sh.
#   tests/deb/t_packaged.sh [-k PATTERN]   only the tests whose name matches
#   DEB_DIR      where the .debs are (default build/deb)
#   TB_BASELINE  the unpatched openvpn (see above)
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
deb_dir="${DEB_DIR:-$top/build/deb}"
export TB_ROOT="${TB_ROOT:-$top/build/deb/testbed}"
logs="$top/build/deb/check"
filter=""
[ "${1:-}" = "-k" ] && filter=${2:-}
in_ci=0
case ${CI:-} in [Tt][Rr][Uu][Ee]|1|[Yy][Ee][Ss]) in_ci=1 ;; esac
# skip REASON: SKIP (exit 77), or with CI=true FAIL (exit 1)
skip()
{
    if [ $in_ci = 1 ]; then
        echo "FAIL: $*; CI=true: a skip would hide the test"
        exit 1
    fi
    echo "SKIP: $*"
    exit 77
}

deb=$(ls "$deb_dir"/openvpn_*+oob*_*.deb 2>/dev/null | sort -V | tail -n 1)
if [ -z "$deb" ]; then
    skip "no packaged openvpn in ${deb_dir#"$top"/}/ (run make deb first)"
fi
if [ "$(id -u)" -ne 0 ]; then
    skip "needs root (the servers open tun devices)"
fi
stock_deb=$(ls "$deb_dir"/stock/openvpn_*_*.deb 2>/dev/null | grep -v '+oob' | sort -V | tail -n 1)

rm -rf "$logs" "$TB_ROOT"
mkdir -p "$logs" "$TB_ROOT"
pkg="$TB_ROOT/pkgroot"
dpkg-deb -x "$deb" "$pkg" || { echo "FAIL: dpkg-deb -x $deb"; exit 1; }
bin="$pkg/usr/sbin/openvpn"
echo "# package: ${deb#"$top"/} ($(dpkg-deb -f "$deb" Version))"
if ldd "$bin" | grep -q 'not found'; then
    echo "FAIL: $bin: shared libraries missing (install the package's Depends: $(dpkg-deb -f "$deb" Depends)):"
    ldd "$bin" | grep 'not found'
    exit 1
fi
"$bin" --version | head -n 1 | sed 's/^/# /'

stockbin=""
if [ -n "$stock_deb" ]; then
    dpkg-deb -x "$stock_deb" "$TB_ROOT/stockroot" && stockbin="$TB_ROOT/stockroot/usr/sbin/openvpn"
fi
baseline="${TB_BASELINE:-$top/build/bin/openvpn-baseline}"
if [ ! -x "$baseline" ] && [ -n "$stockbin" ]; then
    echo "# ${baseline#"$top"/} is not built: the stock package's openvpn is the baseline"
    baseline=$stockbin
fi
echo "# baseline: ${baseline#"$top"/}"

pass=0 fail=0 skip=0 oks=0 notoks=0
failed=() skipped=()
# run NAME CMD...: one test, PASS/FAIL/SKIP with its TAP counts
run()
{
    local name=$1 rc t0 t1 o no reason lf
    shift
    [ -z "$filter" ] || [[ $name == *$filter* ]] || return 0
    lf="$logs/${name//\//-}.log"
    t0=$(date +%s)
    "$@" >"$lf" 2>&1
    rc=$?
    t1=$(date +%s)
    o=$(grep -cE '^ok [0-9]' "$lf")
    no=$(grep -cE '^not ok [0-9]' "$lf")
    oks=$((oks + o)); notoks=$((notoks + no))
    if [ $rc -eq 0 ] && [ "$no" -eq 0 ]; then
        pass=$((pass + 1))
        echo "PASS $name ($o ok, $((t1 - t0)) s)"
    elif [ $rc -eq 77 ]; then
        skip=$((skip + 1))
        reason=$(grep -m1 '^SKIP' "$lf" | sed 's/^SKIP[: ]*//' | cut -c1-160)
        skipped+=("$name (${reason:-exit 77 without a reason})")
        echo "SKIP $name: ${reason:-exit 77 without a reason}"
    else
        fail=$((fail + 1))
        failed+=("$name")
        echo "FAIL $name (rc $rc, $o ok, $no not ok, $((t1 - t0)) s; log ${lf#"$top"/})"
        grep -E '^(not ok|FAIL)' "$lf" | head -n 10 | sed 's/^/    /'
    fi
}

e2e="$top/tests/e2e"
for t in t_interop t_server_probe t_client_probe t_shortcut; do
    run "e2e/${t#t_}" env TB_BIN="$bin" TB_BASELINE="$baseline" timeout 1200 bash "$e2e/$t.sh"
done
if [ -n "$stockbin" ] && [ "$baseline" != "$stockbin" ]; then
    TB_ROOT="$TB_ROOT/vs-stock" run "e2e/interop-vs-stock-package" \
        env TB_BIN="$bin" TB_BASELINE="$stockbin" timeout 1200 bash "$e2e/t_interop.sh"
fi
run "deb/unit-layout" env PKG_ROOT="$pkg" timeout 600 bash "$top/tests/deb/t_unit_layout.sh"

echo "check-deb: $pass passed, $fail failed, $skip skipped ($oks ok, $notoks not ok in all)${failed[*]:+; failed: ${failed[*]}}"
[ $fail -eq 0 ] || exit 1
if [ $pass -eq 0 ] && [ $skip -eq 0 ]; then
    skip "no test ran${filter:+ (-k $filter matched none)}"
fi
[ $skip -eq 0 ] || skip "$skip of $((pass + skip)) tests skipped: ${skipped[*]}"
exit 0
