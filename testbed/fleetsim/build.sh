#!/bin/bash
# testbed/fleetsim/build.sh: build build/bin/fleetsim from fleetsim.c and
# the series' own oob_rank.c, oob_server.c (and what they need) of the
# master work tree, configured by scripts/build.sh (build/obj/master-patched)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
src=$top/build/obj/master-patched/src
[ -f "$src/config.h" ] || { echo "fleetsim: build the master series first (BASE=master make build)" >&2; exit 1; }
o=$src/src/openvpn
u=$src/tests/unit_tests/openvpn
mkdir -p "$top/build/bin"
cc -O2 -g -DHAVE_CONFIG_H $(pkg-config --cflags libnl-genl-3.0 2>/dev/null) -I"$src" -I"$src/include" -I"$src/src/compat" -I"$o" -I"$u" \
    -o "$top/build/bin/fleetsim" "$here/fleetsim.c" \
    "$o/oob_rank.c" "$o/oob_server.c" "$o/oob.c" "$o/buffer.c" "$o/platform.c" \
    "$u/mock_msg.c" "$u/mock_get_random.c" -lcmocka -lcap-ng -lm
echo "fleetsim: $top/build/bin/fleetsim"
