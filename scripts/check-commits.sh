#!/bin/bash
# Build every commit of the series on its own (with --enable-werror) and
# run the unit tests, as upstream requires of each commit.  One build
# directory is updated from commit to commit (rsync --checksum without
# --times: only the files that changed get a new time stamp, so make
# rebuilds what they affect; the
# build system is regenerated when a Makefile.am or configure.ac
# changes).  Not part of 'make check'; run it before exporting a
# rebased series:
#   make check-commits
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
wt="$top/build/openvpn"
out="$top/build/check-commits"
: "${CONFIGURE_FLAGS:=--enable-dco --enable-x509-alt-username --enable-unit-tests --enable-werror}"
mkdir -p "$out"
rm -rf "$out/tree" "$out"/*.log
src="$out/src"
pass=0 fail=0
cflags=$(dpkg-buildflags --get CFLAGS 2>/dev/null || echo "-g -O2")
am_sum_prev=""
for c in $(git -C "$wt" rev-list --reverse upstream..HEAD); do
    subj=$(git -C "$wt" log -1 --format=%s "$c")
    log="$out/$(git -C "$wt" rev-parse --short "$c").log"
    rm -rf "$out/tree"
    mkdir -p "$out/tree" "$src"
    git -C "$wt" archive "$c" | tar -x -C "$out/tree"
    # keep generated files (configure, Makefile.in, objects) in $src
    rsync -rlc "$out/tree/" "$src/"
    am_sum=$( (cd "$src" && cat configure.ac $(git -C "$wt" ls-tree -r --name-only "$c" | grep 'Makefile.am$')) | sha256sum)
    if (cd "$src" &&
            if [ "$am_sum" != "$am_sum_prev" ] || [ ! -f config.status ]; then
                autoreconf -fi && ./configure -q $CONFIGURE_FLAGS CFLAGS="$cflags"
            fi &&
            make -j"$(nproc)" && timeout 600 make -j"$(nproc)" -C tests/unit_tests check) >"$log" 2>&1; then
        pass=$((pass + 1)); echo "PASS $subj"
    else
        fail=$((fail + 1)); echo "FAIL $subj (log $log)"
    fi
    am_sum_prev=$am_sum
done
rm -rf "$out/tree"
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
