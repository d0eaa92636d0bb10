#!/bin/bash
# Build OpenVPN out of the work tree, in a copy, so the work tree stays clean.
#
#   scripts/build.sh patched    build/openvpn as it is now -> build/bin/openvpn
#   scripts/build.sh baseline   the "upstream" tag (no series) -> build/bin/openvpn-baseline
#   scripts/build.sh asan       as patched, with ASan+UBSan -> build/bin/openvpn-asan
#                               (own copy in build/obj/asan; no unit test build)
#   scripts/build.sh mbedtls    as patched, --with-crypto-library=mbedtls
#                               -> build/bin/openvpn-mbedtls (unit tests too)
#   scripts/build.sh small      as patched, --disable-management --enable-small
#                               -> build/bin/openvpn-small
#   scripts/build.sh nomem      the series before the probe memory (for the
#                               bench) -> build/bin/openvpn-nomem
#   scripts/build.sh prereconnect  the series before its reconnect fixes
#                               (issue 24; a planted fault of the soak's
#                               self-test) -> build/bin/openvpn-prereconnect
#   scripts/build.sh premerge   the series before clients sharing a memory
#                               file merge it (a planted fault of the
#                               soak's self-test) -> build/bin/openvpn-premerge
#   scripts/build.sh noresend   the series as it is, but a probe phase sends
#                               each probe once, never again at 300 and
#                               650 ms (a planted fault of the soak's
#                               self-test) -> build/bin/openvpn-noresend
# (the variants are builds upstream's CI makes; each has its own copy in
# build/obj/<variant>)
#
# All use the same configure flags (CONFIGURE_FLAGS, see README).
#
# With BASE=NAME (scripts/base.sh; default 2.6) the same for another base:
# its work tree, build/obj/NAME-<which>, build/bin/openvpn-NAME[-<which>]
# (e.g. BASE=master: build/bin/openvpn-master, openvpn-master-baseline).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=base.sh
. "$top/scripts/base.sh"
base_load
which=${1:-patched}
wt=$WT
sfx=""
[ "$BASE_NAME" = "$BASE_DEFAULT" ] || sfx="-$BASE_NAME"
obj="$top/build/obj/${sfx#-}${sfx:+-}$which"
src="$obj/src"
rev=""

# Debian's hardening flags, Debian's feature switches that need no extra
# libraries (DCO on, x509-alt-username), and the unit tests on.
: "${CONFIGURE_FLAGS:=--enable-dco --enable-x509-alt-username --enable-unit-tests}"
: "${JOBS:=$(nproc)}"

[ -d "$wt/.git" ] || "$top/scripts/make-tree.sh"
mkdir -p "$obj" "$top/build/bin"

# fresh_source REV: the source of REV in $src, extracted anew unless the
# last build of exactly that source finished ("built" is written only
# then: a build stopped half-way, or one of another revision, leaves
# objects, a configure and autoreconf output that must not be reused)
# With SEED (a series-before variant) and a finished patched build, the
# new source starts from a copy of that build (objects, autoreconf and
# configure output) with REV's files copied over it (rsync -c without
# times: a file that differs gets a new time stamp), so make rebuilds only
# what differs between the two revisions
fresh_source()
{
    if [ "$(cat "$obj/rev" 2>/dev/null)" != "$1" ] || [ "$(cat "$obj/built" 2>/dev/null)" != "$1" ]; then
        rm -rf "$src" "$obj/tree"
        rm -f "$obj/am.sum" "$obj/configure.sum" "$obj/built"
        mkdir -p "$src"
        if [ -n "${SEED:-}" ] && [ -f "$OBJ_PATCHED/src/config.status" ] &&
                [ -f "$OBJ_PATCHED/configure.sum" ] && [ -x "$BIN_PATCHED" ]; then
            echo "build[$which]: $1 over a copy of the patched build"
            cp -a "$OBJ_PATCHED/src/." "$src/"
            cp "$OBJ_PATCHED/am.sum" "$OBJ_PATCHED/configure.sum" "$obj/"
            mkdir -p "$obj/tree"
            git -C "$wt" archive "$1" | tar -x -C "$obj/tree"
            rsync -rlc "${AUTOTOOLS_EXCLUDES[@]}" "$obj/tree/" "$src/"
            rm -rf "$obj/tree"
        else
            git -C "$wt" archive "$1" | tar -x -C "$src"
        fi
        echo "$1" > "$obj/rev"
    fi
}

# series_before SUBJECT-REGEX WHY: the source of the series up to the
# parent of the commit whose subject matches (build/bin/openvpn-<which>)
series_before()
{
    local first
    first=$(git -C "$wt" log --format=%H -1 --grep="$1" upstream..HEAD)
    [ -n "$first" ] || { echo "build[$which]: $2" >&2; exit 1; }
    rev=$(git -C "$wt" rev-parse "$first^")
    SEED=1 fresh_source "$rev"
    out="$top/build/bin/openvpn$sfx-$which"
}

case "$which" in
    patched|asan|mbedtls|small)
        # the work tree as it is (uncommitted edits included); -u keeps
        # files that autoreconf regenerated in the copy
        mkdir -p "$src"
        # rsync keeps the work tree's mtimes: a source edited while an
        # earlier build ran can arrive older than the objects built from
        # its previous content, and make would not rebuild them; give
        # every updated source and header the time it arrived here
        rsync -a -u --exclude=/.git --out-format='%n' "$wt/" "$src/" |
            { grep -E '\.[ch]$' || true; } | (cd "$src" && xargs -r -d '\n' touch --)
        out="$top/build/bin/openvpn$sfx"
        [ "$which" = patched ] || out="$top/build/bin/openvpn$sfx-$which"
        ;;
    baseline)
        rev=$(git -C "$wt" rev-parse upstream)
        fresh_source "$rev"
        out="$top/build/bin/openvpn$sfx-baseline"
        ;;
    nomem)
        # the series before the probe memory (for the bench's "without
        # memory" rows): the parent of the commit that adds oob_memory
        series_before '^oob_memory: remember' "no probe memory commit in the series"
        ;;
    prereconnect)
        # the series before its reconnect fixes (the parent of the commit
        # that probes around the tunnel after a reconnect): the soak's
        # self-test must catch it (issue 26)
        series_before '^oob_client: probe and connect around the tunnel' "no reconnect fix in the series"
        ;;
    premerge)
        # the series before clients sharing a memory file merge it (the
        # parent of the commit that takes another client's saved
        # outcomes): a planted fault of the soak's self-test (issue 26)
        series_before '^oob_memory: take what another client saved' "no memory merge commit in the series"
        ;;
    noresend)
        # the series as it is with one planted fault (issue 26: the soak
        # must notice a phase that does not resend a lost probe); the
        # source of HEAD over a copy of the patched build, then the one
        # change, checked to have applied
        rev=$(git -C "$wt" rev-parse HEAD)
        SEED=1 fresh_source "$rev"
        f=$src/src/openvpn/oob_client.c
        [ -f "$src/src/openvpn/oob_probe.c" ] && f=$src/src/openvpn/oob_probe.c
        sed -i 's/^static const int oob_send_schedule_ms\[\] = { 0, 300, 650 };$/static const int oob_send_schedule_ms[] = { 0 };/' "$f"
        grep -q '^static const int oob_send_schedule_ms\[\] = { 0 };$' "$f" ||
            { echo "build[$which]: the probe schedule in $f is not the one this fault replaces" >&2; exit 1; }
        out="$top/build/bin/openvpn$sfx-$which"
        ;;
    *)
        echo "usage: $0 patched|baseline|asan|mbedtls|small|nomem|prereconnect|premerge|noresend" >&2
        exit 2
        ;;
esac

cd "$src"
# re-run autoreconf when the build system changed
am_sum=$( (cat configure.ac; find . -name Makefile.am -print0 | sort -z | xargs -0 cat) | sha256sum | cut -d' ' -f1)
if [ "$(cat "$obj/am.sum" 2>/dev/null)" != "$am_sum" ]; then
    echo "build[$which]: autoreconf -fi"
    autoreconf -fi >"$obj/autoreconf.log" 2>&1 || { cat "$obj/autoreconf.log"; exit 1; }
    echo "$am_sum" > "$obj/am.sum"
    rm -f "$obj/configure.sum"
fi
cflags=$(dpkg-buildflags --get CFLAGS 2>/dev/null || echo "-g -O2")
cppflags=$(dpkg-buildflags --get CPPFLAGS 2>/dev/null || true)
ldflags=$(dpkg-buildflags --get LDFLAGS 2>/dev/null || true)
if [ "$which" = asan ]; then
    # -U_FORTIFY_SOURCE: the fortified libc wrappers would bypass ASan's
    # checks of the same calls
    cflags="$cflags -fsanitize=address,undefined -fno-omit-frame-pointer -g -O1 -U_FORTIFY_SOURCE"
    ldflags="$ldflags -fsanitize=address,undefined"
fi
case "$which" in
    # mbed TLS cannot do --x509-username-field (configure refuses it)
    mbedtls) CONFIGURE_FLAGS="${CONFIGURE_FLAGS/--enable-x509-alt-username/} --with-crypto-library=mbedtls" ;;
    small) CONFIGURE_FLAGS="$CONFIGURE_FLAGS --disable-management --enable-small" ;;
esac
cfg_sum=$(echo "$CONFIGURE_FLAGS $cflags $cppflags $ldflags" | sha256sum | cut -d' ' -f1)
if [ ! -f config.status ] || [ "$(cat "$obj/configure.sum" 2>/dev/null)" != "$cfg_sum" ]; then
    echo "build[$which]: configure $CONFIGURE_FLAGS"
    # shellcheck disable=SC2086
    ./configure -q $CONFIGURE_FLAGS CFLAGS="$cflags" CPPFLAGS="$cppflags" \
        LDFLAGS="$ldflags" >"$obj/configure.log" 2>&1 || { tail -30 "$obj/configure.log"; exit 1; }
    echo "$cfg_sum" > "$obj/configure.sum"
fi
echo "build[$which]: make -j$JOBS"
make -j"$JOBS" >"$obj/make.log" 2>&1 || { grep -m40 -E "error:|undefined reference|Error [0-9]" "$obj/make.log"; exit 1; }
# build the unit test drivers too, so a broken test build shows here
# (not for the binaries of the sanitizer run, the soak's self-test and
# the bench)
if [ "$which" != asan ] && [ "$which" != prereconnect ] && [ "$which" != nomem ] && [ "$which" != premerge ] &&
        [ "$which" != noresend ]; then
    make -j"$JOBS" -C tests check TESTS= >>"$obj/make.log" 2>&1 || { grep -m40 -E "error:|undefined reference|Error [0-9]" "$obj/make.log"; exit 1; }
fi
# an unchanged binary keeps its time stamp: the soak takes
# build/bin/openvpn-asan only while it is not older than build/bin/openvpn
# (a rebuild of nothing made the ASan build look stale, and a 60-minute
# soak ran on the plain build)
if ! cmp -s src/openvpn/openvpn "$out"; then
    cp src/openvpn/openvpn "$out.tmp" && mv "$out.tmp" "$out"
fi
[ -z "${rev:-}" ] || echo "$rev" > "$obj/built"
echo "build[$which]: $out"
