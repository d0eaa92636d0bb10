#!/bin/bash
# make check-trixie: does the series drop into Debian 13 (trixie)'s openvpn
# source package too?
#
#   1. a private apt configuration build/apt/trixie/ (deb-src entries for
#      trixie, trixie-updates, trixie-security; own lists and cache; the
#      system's /etc/apt and fetch-base's build/apt/etc are not touched)
#      finds the trixie openvpn source version (TRIXIE_VERSION to pin one;
#      default: the newest, expected 2.6.14-1+deb13u3) and downloads it to
#      build/trixie/src/;
#   2. dpkg-source -x, then patches/2.6/ (as listed in patches/2.6/series) appended
#      to debian/patches/series and pushed with `quilt push -a --fuzz=0`; on
#      failure, the failing patch and whether it would apply with fuzz are
#      reported;
#   3. configure/make of that tree (Debian's configure switches plus
#      --enable-unit-tests, dpkg-buildflags) and `make check`: upstream's
#      unit tests (with the series' test_oob) and t_lpback/t_cltsrv (t_net
#      is skipped, with a reason, where the kernel has no dummy links);
#   4. the package build, dpkg-buildpackage -b -us -uc: the build
#      dependencies bookworm cannot satisfy are listed; when some are unmet
#      the package is built with -d (ignoring them) and the result says so
#      (TRIXIE_DEB=0 skips this step).
# Results: build/trixie/summary.txt; logs in build/trixie/logs/.
# Exit 0 when the series applies unchanged and the build and tests pass.
# --package-only: only step 4, on the tree of an earlier run.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
apt="$top/build/apt/trixie"
dir="$top/build/trixie"
logs="$dir/logs"
mirror="${TRIXIE_MIRROR:-http://deb.debian.org/debian}"
secmirror="${TRIXIE_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
suffix="${OOB_DEB_SUFFIX:-+oob1}"
jobs="${DEB_JOBS:-2}"

log() { echo "trixie: $*"; }
die() { echo "trixie: $*" >&2; echo "FAIL: $*" >>"$dir/summary.txt"; exit 1; }

sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
export DEBIAN_FRONTEND=noninteractive
apt_install()
{
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing ${missing[*]}"
    $sudo apt-get -q update >/dev/null
    $sudo apt-get -y -q install --no-install-recommends "${missing[@]}" >/dev/null
}
apt_install build-essential dpkg-dev fakeroot quilt debhelper autoconf automake \
    libtool pkg-config libcmocka-dev debian-archive-keyring ca-certificates

sum() { echo "$*" | tee -a "$dir/summary.txt"; }
pdir=oob-server-probe

prepare()
{
rm -rf "$dir"
mkdir -p "$dir/src" "$logs"
: >"$dir/summary.txt"

# ------------------------------------------------------------ 1. source
mkdir -p "$apt/etc/sources.list.d" "$apt/etc/preferences.d" "$apt/lists/partial" \
    "$apt/cache/archives/partial"
cat >"$apt/etc/sources.list" <<EOF
deb-src [signed-by=$keyring] $mirror trixie main
deb-src [signed-by=$keyring] $mirror trixie-updates main
deb-src [signed-by=$keyring] $secmirror trixie-security main
EOF
aptopts=(-o "Dir::Etc::SourceList=$apt/etc/sources.list"
         -o "Dir::Etc::SourceParts=$apt/etc/sources.list.d"
         -o "Dir::Etc::Preferences=$apt/etc/preferences"
         -o "Dir::Etc::PreferencesParts=$apt/etc/preferences.d"
         -o "Dir::State::Lists=$apt/lists"
         -o "Dir::Cache=$apt/cache"
         -o "Debug::NoLocking=1")
log "updating the private trixie deb-src lists (build/apt/trixie)"
apt-get "${aptopts[@]}" -q update >"$logs/apt-update.log" 2>&1 ||
    die "apt-get update (trixie deb-src) failed, see build/trixie/logs/apt-update.log"
apt-cache "${aptopts[@]}" madison openvpn >"$logs/madison.txt" 2>&1 || true
mapfile -t versions < <(apt-cache "${aptopts[@]}" showsrc openvpn 2>/dev/null |
    sed -n 's/^Version: //p' | sort -u | sort -V)
[ ${#versions[@]} -gt 0 ] || die "no openvpn source package in trixie"
version="${TRIXIE_VERSION:-${versions[-1]}}"
sum "trixie openvpn source versions available: ${versions[*]}; using $version"
(cd "$dir/src" && apt-get "${aptopts[@]}" -q source --download-only "openvpn=$version") \
    >"$logs/apt-source.log" 2>&1 || die "could not download openvpn=$version"
upstream=${version%-*}
orig=$(ls "$dir/src"/openvpn_"$upstream".orig.tar.*)
if [ -f "$top/build/src/$(basename "$orig")" ]; then
    if cmp -s "$orig" "$top/build/src/$(basename "$orig")"; then
        sum "orig tarball: identical to bookworm's ($(basename "$orig"))"
    else
        sum "orig tarball: differs from bookworm's $(basename "$orig")"
    fi
fi
tree="$dir/openvpn-$upstream"
(cd "$dir" && dpkg-source -x "src/openvpn_$version.dsc" "openvpn-$upstream") \
    >"$logs/unpack.log" 2>&1 || die "dpkg-source -x failed (logs/unpack.log)"
sum "Debian patches in $version: $(grep -vc -e '^#' -e '^$' "$tree/debian/patches/series")"

# ------------------------------------------------------------ 2. quilt
mapfile -t patches < <(sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$top/patches/2.6/series")
[ ${#patches[@]} -gt 0 ] || die "patches/2.6/series lists no patches"
pdir=oob-server-probe
mkdir -p "$tree/debian/patches/$pdir"
for p in "${patches[@]}"; do
    cp "$top/patches/2.6/$p" "$tree/debian/patches/$pdir/$p"
    echo "$pdir/$p" >>"$tree/debian/patches/series"
done
qp() { (cd "$1" && QUILT_PATCHES=debian/patches QUILT_PC=.pc quilt --quiltrc=- "${@:2}"); }
if qp "$tree" push -a --fuzz=0 >"$logs/quilt.log" 2>&1; then
    offs=$(grep -c 'offset' "$logs/quilt.log" || true)
    sum "quilt push -a --fuzz=0: all ${#patches[@]} patches of the series apply unchanged ($offs hunk(s) at an offset)"
    applied=1
else
    applied=0
    failed=$(grep -o "Applying patch $pdir/[^ ]*" "$logs/quilt.log" | tail -n 1 | sed "s|.*$pdir/||")
    sum "quilt push -a --fuzz=0: FAILS at $failed"
    grep -E 'FAILED|Hunk|can.t find' "$logs/quilt.log" | sed 's/^/  /' | tee -a "$dir/summary.txt"
    # would fuzz help? (in a copy)
    rm -rf "$dir/fuzz" && cp -a "$tree" "$dir/fuzz"
    if qp "$dir/fuzz" push -a --fuzz=2 >"$logs/quilt-fuzz.log" 2>&1; then
        sum "  with --fuzz=2 all apply: refresh the named patch(es) for trixie"
    else
        sum "  not even with --fuzz=2: needs a port (see logs/quilt-fuzz.log)"
    fi
    die "the series does not apply unchanged to $version"
fi

# ------------------------------------------------------------ 3. configure/make
log "configure/make + make check (unit tests) in build/trixie/obj (log: logs/make.log)"
obj="$dir/obj"
rm -rf "$obj"
mkdir -p "$obj"
tar -C "$tree" --exclude=./.pc --exclude=./debian -cf - . | tar -C "$obj" -xf -
t0=$(date +%s)
rc=0
(
    set -e
    cd "$obj"
    eval "$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --export=sh)"
    autoreconf -fi
    SYSTEMD_ASK_PASSWORD=/bin/systemd-ask-password SYSTEMD_UNIT_DIR=/lib/systemd/system \
    TMPFILES_DIR=/usr/lib/tmpfiles.d \
        ./configure --prefix=/usr --enable-pkcs11 --enable-x509-alt-username \
        --enable-systemd --enable-dco --enable-unit-tests
    nice -n 10 make -j"$jobs"
    nice -n 10 make -j"$jobs" check TESTS= VERBOSE=1    # builds the test programs
    nice -n 10 make -C tests/unit_tests check VERBOSE=1
    # t_net.sh needs the "dummy" link type; as tests/check.sh, skip it
    # (with a reason) where the kernel lacks it
    scripts="t_client.sh t_lpback.sh t_cltsrv.sh"
    if [ "$(id -u)" -eq 0 ] && ! ip link add ovpn-chk-dummy type dummy 2>/dev/null; then
        echo "SKIP: t_net.sh needs the 'dummy' link type, which this kernel lacks (not run)"
    else
        [ "$(id -u)" -ne 0 ] || ip link del ovpn-chk-dummy
        scripts="$scripts t_net.sh"
    fi
    nice -n 10 make -C tests check-TESTS TESTS="$scripts" VERBOSE=1
) >"$logs/make.log" 2>&1 || rc=$?
t1=$(date +%s)
res='^(PASS|FAIL|SKIP|ERROR|XFAIL|XPASS): [^ ]+$'
passed=$(grep -cE '^PASS: [^ ]+$' "$logs/make.log" || true)
skipped=$(grep -E '^SKIP: ' "$logs/make.log" | sed 's/^SKIP: //' | tr '\n' ';' | sed 's/;$//; s/;/; /g')
failed_t=$(grep -E '^(FAIL|ERROR|XPASS): [^ ]+$' "$logs/make.log" | tr '\n' ' ' || true)
all_t=$(grep -E "$res" "$logs/make.log" | sed 's/: /:/' | tr '\n' ' ')
has_oob=no
grep -qE '^PASS: .*oob' "$logs/make.log" && has_oob=yes
if [ $rc -eq 0 ]; then
    help=$("$obj/src/openvpn/openvpn" --help 2>&1 || true)
    grep -q -- '--server-probe-reply' <<<"$help" ||
        die "the trixie build has no --server-probe-reply"
    sum "configure/make/make check: OK in $((t1 - t0)) s; $passed tests passed (the series' oob unit test among them: $has_oob), none failed; skipped: ${skipped:-none}"
    sum "  tests: $all_t"
else
    sum "configure/make/make check: FAILED (rc $rc) after $((t1 - t0)) s: ${failed_t:-build error}"
    tail -n 30 "$logs/make.log" >&2
    die "configure/make on trixie sources failed (logs/make.log)"
fi

}

if [ "${1:-}" = --package-only ]; then
    # step 4 only, on the tree an earlier run prepared (and its summary)
    tree=$(ls -d "$dir"/openvpn-*/ 2>/dev/null | head -n 1)
    tree=${tree%/}
    [ -n "$tree" ] && [ -d "$tree/.pc" ] || die "no prepared tree in build/trixie (run without --package-only)"
    version=$(cd "$tree" && dpkg-parsechangelog -S Version)
    version=${version%"$suffix"}
else
    prepare
fi

# ------------------------------------------------------------ 4. package build
[ "${TRIXIE_DEB:-1}" = 0 ] && { sum "package build: skipped (TRIXIE_DEB=0)"; exit 0; }
# a changelog entry with the local version, as for make deb
if ! grep -q "^openvpn (${version}${suffix})" "$tree/debian/changelog"; then
    {
        echo "openvpn (${version}${suffix}) trixie; urgency=medium"
        echo
        echo "  * Local build with the oob-server-probe series (debian/patches/$pdir/)."
        echo
        echo " -- ${DEBFULLNAME:-oob-server-probe packaging} <${DEBEMAIL:-oob-server-probe@example.org}>  $(date -R)"
        echo
        cat "$tree/debian/changelog"
    } >"$tree/debian/changelog.new"
    mv "$tree/debian/changelog.new" "$tree/debian/changelog"
fi

unmet=$( (cd "$tree" && dpkg-checkbuilddeps 2>&1 || true) | sed -n 's/.*Unmet build dependencies: //p')
missing_pkgs=()
nonexistent=()
for dep in $(sed -E 's/\([^)]*\)//g; s/\[[^]]*\]//g; s/\|/ /g' <<<"$unmet"); do
    if apt-cache policy "$dep" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
        missing_pkgs+=("$dep")
    else
        nonexistent+=("$dep")
    fi
done
[ ${#missing_pkgs[@]} -eq 0 ] || apt_install "${missing_pkgs[@]}"
unmet=$( (cd "$tree" && dpkg-checkbuilddeps 2>&1 || true) | sed -n 's/.*Unmet build dependencies: //p')
dflag=()
if [ -n "$unmet" ]; then
    sum "package build: build dependencies bookworm cannot satisfy: $unmet (not in bookworm: ${nonexistent[*]:-none}); building with dpkg-buildpackage -d"
    dflag=(-d)
fi
log "dpkg-buildpackage -b -us -uc ${dflag[*]} (log: logs/deb-build.log)"
t0=$(date +%s)
rc=0
(cd "$tree" && DEB_BUILD_OPTIONS="parallel=$jobs" nice -n 10 dpkg-buildpackage -b -us -uc "${dflag[@]}") \
    >"$logs/deb-build.log" 2>&1 || rc=$?
t1=$(date +%s)
tests=$(grep -E '^(PASS|FAIL|SKIP|ERROR|XFAIL|XPASS): [^ ]+$' "$logs/deb-build.log" | tr '\n' ' ' || true)
if [ $rc -eq 0 ]; then
    mkdir -p "$dir/deb"
    mv "$dir"/*.deb "$dir"/*.changes "$dir"/*.buildinfo "$dir/deb/" 2>/dev/null || true
    sum "package build: OK in $((t1 - t0)) s (${dflag[*]:-all build dependencies met}); dh_auto_test: ${tests:-no tests run}; .debs in build/trixie/deb/"
else
    sum "package build: FAILED (rc $rc) after $((t1 - t0)) s; see build/trixie/logs/deb-build.log"
    tail -n 30 "$logs/deb-build.log" >&2
    exit 1
fi
