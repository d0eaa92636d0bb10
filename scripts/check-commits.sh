#!/bin/bash
# Build every commit of the series on its own (with --enable-werror) and
# run the unit tests, as
# upstream requires of each commit.  Slow (a full build per commit), so it
# is not part of 'make check'; run it before exporting a rebased series:
#   make check-commits
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
wt="$top/build/openvpn"
out="$top/build/check-commits"
: "${CONFIGURE_FLAGS:=--enable-dco --enable-x509-alt-username --enable-unit-tests --enable-werror}"
rm -rf "$out"
mkdir -p "$out"
pass=0 fail=0
cflags=$(dpkg-buildflags --get CFLAGS 2>/dev/null || echo "-g -O2")
for c in $(git -C "$wt" rev-list --reverse upstream..HEAD); do
    subj=$(git -C "$wt" log -1 --format=%s "$c")
    d="$out/$(git -C "$wt" rev-parse --short "$c")"
    mkdir -p "$d/src"
    git -C "$wt" archive "$c" | tar -x -C "$d/src"
    if (cd "$d/src" && autoreconf -fi && ./configure -q $CONFIGURE_FLAGS CFLAGS="$cflags" \
            && make -j"$(nproc)" && make -j"$(nproc)" -C tests/unit_tests check) >"$d/log" 2>&1; then
        pass=$((pass + 1)); echo "PASS $subj"
    else
        fail=$((fail + 1)); echo "FAIL $subj (log $d/log)"
    fi
    rm -rf "$d/src"
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
