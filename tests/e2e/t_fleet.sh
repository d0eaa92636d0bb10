#!/bin/bash
# A herd of real clients (issue 25): dozens of clients (--dev null, one
# certificate, --duplicate-cn) against three servers, all started within
# about a second, by testbed/fleet.py (in a network namespace of its own).
#   (a) 24 clients x 3 servers with a tight handshake budget
#       (--connect-freq-initial 4 10): every probing client has all three
#       replies (the probes have a budget of their own), no server counts
#       a probe as rate limited, every client connects, each server gets
#       clients, and the herd is connected no later than unpatched
#       clients with --remote-random in the same run (+2 s). The series
#       before issue 25 failed this: probes shared the handshake budget
#       and 29 of 60 clients saw no server answer (testbed/bench-fleet.sh);
#   (b) --server-probe-budget 5 10: a server answers at most 5 probes per
#       period, counts the rest as rate-limit, logs the note once, and
#       every client still connects (clients without answers fall back to
#       the configured order);
#   (c) the load-aware weight: servers with --max-clients 20, two of them
#       loaded with 17 clients each, the third restarted empty; with
#       --server-probe-reply 200 load the empty one advertises 20, the
#       others 3, and at least half of the next 20 clients pick it first
#       (expected about three quarters; static weights: a third); the
#       management command reports the weight in effect (weight=load:N).
# Exit 0 pass, 1 fail, 77 skip.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../../testbed/lib.sh
. "$here/../../testbed/lib.sh"

tb_need_root
tb_need_bin "$TB_BIN" "$TB_BASELINE"
for o in server-probe server-probe-budget; do
    tb_has_opt "$TB_BIN" "$o" ||
        tb_die "the patched openvpn (${TB_BIN#"$TB_TOP"/}) has no --$o in its --help"
done
command -v python3 >/dev/null || tb_skip_or_ci_fail "no python3"

out=$TB_ROOT/fleet
rm -rf "$out"
mkdir -p "$out"
n=0
fails=0
fleet()
{
    python3 "$TB_TOP/testbed/fleet.py" --bin "$TB_BIN" --baseline "$TB_BASELINE" \
        --workdir "$out" "$@" 2>&1 | grep -v '^|' | cut -c1-400 | sed 's/^/# /'
    return "${PIPESTATUS[0]}"
}
# q FILE VARIANT EXPR: evaluate a python expression over the variant's
# result r (JSON from fleet.py), print it
q()
{
    python3 -c '
import json, sys
rs = [r for r in json.load(open(sys.argv[1])) if r["variant"] == sys.argv[2]]
r = rs[-1]
print(eval(sys.argv[3]))' "$@"
}

# (a) the herd with a tight handshake budget
fleet --clients 24 --budget "4 10" --variants stock-random,probe --timeout 60 \
    --json "$out/a.json" || tb_die "fleet.py failed (a)"
a=$out/a.json
check "(a) unpatched --remote-random: 24/24 connected" \
    test "$(q "$a" stock-random 'r["connected"]')" = 24
check "(a) probing: 24/24 connected" test "$(q "$a" probe 'r["connected"]')" = 24
check "(a) probing: every client's first phase had all 3 replies" \
    test "$(q "$a" probe 'r["not_all_answered"]')" = 0
check "(a) probing: no probe rate limited on any server" \
    test "$(q "$a" probe 'sum(int(s["probe"].split("rate-limit=")[1].split(",")[0]) for s in r["server_stats"])')" = 0
check "(a) probing: each server took clients ($(q "$a" probe 'r["per_server"]'))" \
    test "$(q "$a" probe 'min(r["per_server"]) > 0')" = True
ta=$(q "$a" probe 'r["all_s"]')
tr=$(q "$a" stock-random 'r["all_s"]')
check "(a) probing herd connected after ${ta} s, unpatched --remote-random ${tr} s (+2 s allowed)" \
    test "$(q "$a" probe 'r["all_s"] is not None and r["all_s"] <= '"${tr:-0}"' + 2')" = True

# (b) the probe budget itself
fleet --clients 12 --budget "100 10" --variants probe --timeout 60 \
    --server-arg=--server-probe-budget --server-arg=5 --server-arg=10 \
    --json "$out/b.json" || tb_die "fleet.py failed (b)"
b=$out/b.json
check "(b) 12/12 connected with 5 probe replies per server" \
    test "$(q "$b" probe 'r["connected"]')" = 12
stats=$(q "$b" probe '" ".join(s["probe"] for s in r["server_stats"])')
echo "# (b) server stats: $stats"
check "(b) every server answered exactly 5 and rate limited the rest" \
    test "$(q "$b" probe 'all("answered=5," in s["probe"] and "rate-limit=0," not in s["probe"] for s in r["server_stats"])')" = True
notes=$(grep -l "Note: --server-probe-budget 5 10 spent" "$out"/probe/s*.log 2>/dev/null | wc -l)
check "(b) each server logged the spent budget ($notes of 3)" test "$notes" = 3
once=$(grep -ch "server-probe-budget 5 10 spent" "$out"/probe/s1.log)
check "(b) once per period ($once line)" test "$once" = 1

# (c) the load-aware weight after a restart
fleet --scenario restart --max-clients 20 --preload 17 --clients 20 --budget "100 10" \
    --variants probe-load --load-margin 200 --weights-after --timeout 20 \
    --json "$out/c.json" || tb_die "fleet.py failed (c)"
c=$out/c.json
check "(c) 34 clients preloaded" test "$(q "$c" probe-load 'r["preloaded"]')" = 34
first=$(q "$c" probe-load 'r["first_per_server"]')
check "(c) at least 10 of 20 picked the empty server first (per server: $first)" \
    test "$(q "$c" probe-load 'r["first_per_server"][2] >= 10')" = True
w=$(q "$c" probe-load 'r["weights"][2]')
check "(c) management reports the weight in effect ($w)" \
    test "$(q "$c" probe-load '"weight=load:" in r["weights"][2] and int(r["weights"][2].split("load:")[1].split(",")[0]) <= 20 - r["per_server"][2]')" = True
check "(c) the loaded servers report their few free slots" \
    test "$(q "$c" probe-load 'all(int(x.split("load:")[1].split(",")[0]) <= 3 for x in r["weights"][:2])')" = True

echo "1..$n"
[ "$fails" -eq 0 ]
