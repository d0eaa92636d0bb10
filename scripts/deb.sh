#!/bin/bash
# make deb: build Debian's openvpn package the way a distribution packager
# would, with the series carried in debian/patches/, and the stock package
# from the same source in the same run for comparison.
#
#   1. the pinned source package (scripts/fetch-base.sh, build/src/) is
#      unpacked with dpkg-source -x, once as is ("stock") and once with the
#      series ("patched"): patches/2.6/*.patch as listed in patches/2.6/series are
#      copied to debian/patches/oob-server-probe/, appended to
#      debian/patches/series and pushed with quilt (fuzz 0, as dpkg-source);
#      a debian/changelog entry gives the local version
#      2.6.14-0+deb12u2+oob1 (OOB_DEB_SUFFIX, default "+oob1");
#   2. the build dependencies the package declares are installed with
#      apt-get build-dep on the unpacked source tree;
#   3. both are built with dpkg-buildpackage -b -us -uc (one after the
#      other, niced); Debian's own tests run in dh_auto_test;
#   4. lintian runs on both .changes; every error or warning tag of the
#      patched build that the stock build does not also have fails the run.
#
# Output: build/deb/*.deb (patched), build/deb/stock/*.deb, logs, lintian
# tags and a summary in build/deb/summary.txt.
#
# Options: --no-stock     build only the patched package (no lintian comparison)
#          --report-only  no build: check, lintian and summary of the last one
# Environment: OOB_DEB_SUFFIX (default +oob1), DEB_JOBS (default 2),
# DEBFULLNAME/DEBEMAIL (the changelog entry's author).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
src="$top/build/src"
base_version="2.6.14-0+deb12u2"
upstream_version="2.6.14"
suffix="${OOB_DEB_SUFFIX:-+oob1}"
version="${base_version}${suffix}"
jobs="${DEB_JOBS:-2}"
out="$top/build/deb"
work="$top/build/debsrc"
stock=1
report_only=0
stock_note=""

for a in "$@"; do
    case $a in
        --no-stock) stock=0 ;;
        --report-only) report_only=1 ;;
        *) echo "deb: unknown argument '$a'" >&2; exit 2 ;;
    esac
done

log() { echo "deb: $*"; }
die() { echo "deb: $*" >&2; exit 1; }

# ------------------------------------------------------------ tools
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "need root (or sudo) to install packages"
    sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
updated=0
apt_install()
{
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]}"
    if [ $updated = 0 ]; then $sudo apt-get -q update >/dev/null; updated=1; fi
    $sudo apt-get -y -q install --no-install-recommends "${missing[@]}" >/dev/null
}
apt_install build-essential dpkg-dev fakeroot quilt lintian debhelper \
    git ca-certificates

"$top/scripts/fetch-base.sh"
dsc="$src/openvpn_${base_version}.dsc"
[ -f "$dsc" ] || die "$dsc is missing (make fetch)"

# ------------------------------------------------------------ the series
series="$top/patches/2.6/series"
[ -f "$series" ] || die "patches/2.6/series is missing"
mapfile -t patches < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$series")
[ ${#patches[@]} -gt 0 ] || die "patches/2.6/series lists no patches"
for p in "${patches[@]}"; do
    [ -f "$top/patches/2.6/$p" ] || die "patches/2.6/series lists $p, which is missing"
done

mkdir -p "$out/logs"
if [ $report_only = 0 ]; then
    # a fresh run's logs (with --no-stock, the stock build's are kept)
    for f in "$out"/logs/*; do
        [ -e "$f" ] || continue
        case ${f##*/} in
            stock*) [ $stock = 0 ] || rm -f "$f" ;;
            *) rm -f "$f" ;;
        esac
    done
fi

# unpack FLAVOUR: fresh build/debsrc/FLAVOUR/openvpn-2.6.14
unpack()
{
    local flavour=$1 d
    d="$work/$flavour"
    rm -rf "$d"
    mkdir -p "$d"
    (cd "$d" && dpkg-source -x "$dsc" "openvpn-$upstream_version") \
        >"$out/logs/$flavour-unpack.log" 2>&1 ||
        { cat "$out/logs/$flavour-unpack.log" >&2; die "dpkg-source -x failed"; }
    echo "$d/openvpn-$upstream_version"
}

# add_series TREE: what a packager does by hand
add_series()
{
    local tree=$1 p n=0 pdir=oob-server-probe
    mkdir -p "$tree/debian/patches/$pdir"
    {
        echo "# oob-server-probe: out-of-band server probing (--server-probe,"
        echo "# --server-probe-reply), applied after Debian's patches"
    } >>"$tree/debian/patches/series"
    for p in "${patches[@]}"; do
        cp "$top/patches/2.6/$p" "$tree/debian/patches/$pdir/$p"
        echo "$pdir/$p" >>"$tree/debian/patches/series"
        n=$((n + 1))
    done
    # apply them the way dpkg-source would (quilt, -p1, no fuzz); dpkg-source
    # -x has already applied Debian's own patches (.pc/ records them)
    if ! (cd "$tree" && QUILT_PATCHES=debian/patches QUILT_PC=.pc \
            quilt --quiltrc=- push -a --fuzz=0) >"$out/logs/patched-quilt.log" 2>&1; then
        tail -n 30 "$out/logs/patched-quilt.log" >&2
        die "the series does not apply with quilt on $base_version (see build/deb/logs/patched-quilt.log)"
    fi
    log "quilt: $n patch(es) of the series applied on top of Debian's $(grep -vc -e '^#' -e '^$' -e "^$pdir/" "$tree/debian/patches/series") ($(grep -c 'offset\|fuzz' "$out/logs/patched-quilt.log" || true) hunk(s) with offset)"

    # the changelog entry with the local version
    local date entry
    date=$(cd "$top" && git log -1 --format=%aD -- patches/2.6 2>/dev/null || true)
    [ -n "$date" ] || date=$(date -R)
    entry=$(mktemp)
    {
        echo "openvpn ($version) bookworm; urgency=medium"
        echo
        echo "  * Local build with the oob-server-probe series, ${#patches[@]} patches in"
        echo "    debian/patches/$pdir/: out-of-band server probing. New"
        echo "    options --server-probe (client) and --server-probe-reply (server);"
        echo "    no new dependency, no configuration change needed."
        for p in "${patches[@]}"; do
            echo "    - $p"
        done
        echo
        echo " -- ${DEBFULLNAME:-oob-server-probe packaging} <${DEBEMAIL:-oob-server-probe@example.org}>  $date"
        echo
        cat "$tree/debian/changelog"
    } >"$entry"
    mv "$entry" "$tree/debian/changelog"
    chmod 644 "$tree/debian/changelog"
}

# build FLAVOUR TREE: dpkg-buildpackage -b -us -uc, timed
declare -A secs=()
build()
{
    local flavour=$1 tree=$2 t0 t1 rc=0
    log "$flavour: installing the declared build dependencies (apt-get build-dep)"
    if ! $sudo apt-get -y -q build-dep "$tree" >"$out/logs/$flavour-build-dep.log" 2>&1; then
        $sudo apt-get -q update >/dev/null 2>&1 || true
        $sudo apt-get -y -q build-dep "$tree" >"$out/logs/$flavour-build-dep.log" 2>&1 ||
            { tail -n 20 "$out/logs/$flavour-build-dep.log" >&2; die "apt-get build-dep failed"; }
    fi
    (cd "$tree" && dpkg-checkbuilddeps) >>"$out/logs/$flavour-build-dep.log" 2>&1 ||
        die "$flavour: build dependencies still unmet (build/deb/logs/$flavour-build-dep.log)"
    log "$flavour: dpkg-buildpackage -b -us -uc (log: build/deb/logs/$flavour-build.log)"
    t0=$(date +%s)
    (cd "$tree" && DEB_BUILD_OPTIONS="parallel=$jobs ${DEB_BUILD_OPTIONS:-}" \
        nice -n 10 dpkg-buildpackage -b -us -uc) >"$out/logs/$flavour-build.log" 2>&1 || rc=$?
    t1=$(date +%s)
    secs[$flavour]=$((t1 - t0))
    echo "${secs[$flavour]}" >"$out/logs/$flavour.secs"
    if [ $rc -ne 0 ]; then
        tail -n 40 "$out/logs/$flavour-build.log" >&2
        die "$flavour: dpkg-buildpackage failed (rc $rc) after ${secs[$flavour]} s"
    fi
    log "$flavour: built in ${secs[$flavour]} s"
}

# testsum FLAVOUR: dh_auto_test's results (automake's per-test lines)
testsum()
{
    local l=$out/logs/$1-build.log
    grep -q "dh_auto_test" "$l" || { echo "dh_auto_test did not run"; return; }
    local p f sk
    p=$(grep -cE '^PASS: ' "$l" || true)
    f=$(grep -cE '^(FAIL|ERROR|XPASS): ' "$l" || true)
    sk=$(grep -cE '^SKIP: ' "$l" || true)
    echo "$p passed, $f failed, $sk skipped ($(grep -E '^(PASS|FAIL|SKIP|ERROR|XFAIL|XPASS): ' "$l" | tr '\n' ' ' | sed 's/ $//'))"
}

# collect FLAVOUR DIR DEST: move the build products
collect()
{
    local flavour=$1 d=$2 dest=$3
    mkdir -p "$dest"
    rm -f "$dest"/*.deb "$dest"/*.changes "$dest"/*.buildinfo
    mv "$d"/*.deb "$d"/*.changes "$d"/*.buildinfo "$dest"/
}

# lintian_tags FLAVOUR CHANGES: tags to build/deb/lintian-FLAVOUR.txt
lintian_tags()
{
    local flavour=$1 changes=$2 rc=0
    lintian --allow-root -I --show-overrides --tag-display-limit 0 --fail-on none "$changes" \
        >"$out/lintian-$flavour.txt" 2>"$out/logs/lintian-$flavour.stderr" || rc=$?
    [ $rc -eq 0 ] || { cat "$out/logs/lintian-$flavour.stderr" >&2; die "lintian failed (rc $rc)"; }
}

# normalized error/warning tags (no versions, no file names): one per line
ew_tags()
{
    grep -E '^[EW]: ' "$1" | sed -E "s/${base_version//+/\\+}(${suffix//+/\\+})?/VERSION/g" | sort -u
}
count() { grep -cE "^$2: " "$1" || true; }

# ------------------------------------------------------------ run
if [ $report_only = 0 ]; then
    rm -rf "$work"
    if [ $stock = 1 ]; then
        tree=$(unpack stock)
        build stock "$tree"
        collect stock "$work/stock" "$out/stock"
    fi
    tree=$(unpack patched)
    add_series "$tree"
    build patched "$tree"
    collect patched "$work/patched" "$out"
    if [ $stock = 0 ] && [ -f "$out/stock/openvpn_${base_version}_$(dpkg --print-architecture).changes" ]; then
        log "comparing with the stock package of an earlier run (build/deb/stock/)"
        stock=1
        secs[stock]="$(cat "$out/logs/stock.secs" 2>/dev/null || echo "?")"
        stock_note=" (earlier run)"
    fi
else
    for f in patched stock; do
        secs[$f]=$(cat "$out/logs/$f.secs" 2>/dev/null || echo "?")
    done
    [ -f "$out/stock/openvpn_${base_version}_$(dpkg --print-architecture).changes" ] || stock=0
fi

# the package must carry the series' binary: the new options are there
tmp=$(mktemp -d)
deb=$(ls "$out"/openvpn_"${version}"_*.deb)
dpkg-deb -x "$deb" "$tmp"
help=$("$tmp/usr/sbin/openvpn" --help 2>&1 || true)
grep -q -- '--server-probe-reply' <<<"$help" ||
    { rm -rf "$tmp"; die "$deb: its openvpn has no --server-probe-reply"; }
rm -rf "$tmp"

log "lintian"
lintian_tags patched "$out/openvpn_${version}_$(dpkg --print-architecture).changes"
fail=0
{
    echo "make deb: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
    echo "series: ${#patches[@]} patches from patches/2.6/series"
    echo "patched: openvpn $version, dpkg-buildpackage -b in ${secs[patched]} s"
    echo "  dh_auto_test: $(testsum patched)"
    echo "  lintian: $(count "$out/lintian-patched.txt" E) errors, $(count "$out/lintian-patched.txt" W) warnings, $(count "$out/lintian-patched.txt" I) info"
    if [ $stock = 1 ]; then
        lintian_tags stock "$out/stock/openvpn_${base_version}_$(dpkg --print-architecture).changes"
        echo "stock: openvpn $base_version, dpkg-buildpackage -b in ${secs[stock]} s$stock_note"
        echo "  dh_auto_test: $(testsum stock)"
        echo "  lintian: $(count "$out/lintian-stock.txt" E) errors, $(count "$out/lintian-stock.txt" W) warnings, $(count "$out/lintian-stock.txt" I) info"
        new=$(comm -13 <(ew_tags "$out/lintian-stock.txt") <(ew_tags "$out/lintian-patched.txt"))
        gone=$(comm -23 <(ew_tags "$out/lintian-stock.txt") <(ew_tags "$out/lintian-patched.txt"))
        if [ -n "$new" ]; then
            echo "lintian: errors/warnings of the patched package that the stock one does not have:"
            sed 's/^/  /' <<<"$new"
            fail=1
        else
            echo "lintian: no error or warning that the stock package does not also have"
        fi
        [ -z "$gone" ] || { echo "lintian: only in the stock package:"; sed 's/^/  /' <<<"$gone"; }
        echo "  (tags: build/deb/lintian-stock.txt, build/deb/lintian-patched.txt)"
    else
        if grep -qE '^[EW]: ' "$out/lintian-patched.txt"; then
            echo "lintian (no stock build to compare with):"
            grep -E '^[EW]: ' "$out/lintian-patched.txt" | sed 's/^/  /'
        fi
    fi
    echo "packages: $(cd "$out" && ls ./*.deb | sed 's|^\./||' | tr '\n' ' ')"
} | tee "$out/summary.txt"
exit $fail
