#!/bin/bash
# shellcheck disable=SC2317  # helpers run through check()
# Name resolution does not hold the probe phase up (SPEC 3: "a silent name
# server must not delay the first connection attempt beyond the phase;
# unresolved remotes keep their place"). The clients run in a mount
# namespace of their own whose /etc/resolv.conf points at a name server
# on loopback that never answers (options timeout:3 attempts:1, so one
# blocking lookup costs 3 s):
#   (a) remotes [name, live literal]: the patched client connects to the
#       literal within 2.5 s and logs the name as "not resolved"; the
#       unpatched client first waits for the name;
#   (b) remotes [live literal, name, name]: the patched client's first
#       connection attempt is not delayed by the two names (connects
#       within 2.5 s; the first version of the series resolved them one
#       after the other: 6 s).
# The master series resolves without helper processes (the review of the
# 2.6 series refused its fork()ed resolvers): one lookup at a time, none
# started once the phase's 1 s for names is spent.  A silent name server
# then costs one blocking lookup (3 s here) per phase, not one per name:
#   (a) the patched client connects within 3 s + 1 s, still well before
#       the unpatched one;
#   (b) only the first name is looked up ("the time for names was spent"
#       for the second); the phase takes one lookup, <= 3 s + 1 s.  This
#       is the master series' known cost: the unpatched client, whose
#       first remote is alive, does not look up the names at all.
# Prints patched and unpatched connect times. Exit 0 pass, 1 fail, 77 skip.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by lib.sh (tb_port)
TB_PORT_BASE=${TB_PORT_BASE_RESOLVE:-28000}
# shellcheck source=../../testbed/lib.sh
. "$here/../../testbed/lib.sh"

command -v unshare >/dev/null || tb_skip_or_ci_fail "unshare (util-linux) is missing"
command -v python3 >/dev/null 2>&1 || tb_skip_or_ci_fail "python3 is missing"
tb_setup resolve server-probe -- "$@"

# the silent name server: reads queries on 127.0.0.1:53, never answers
tb__spawn dns python3 "$here/dns_stub.py" --addr 127.0.0.1 --mode silent
printf 'nameserver 127.0.0.1\noptions timeout:3 attempts:1\n' >"$TB_DIR/resolv.conf"
for b in patched:"$TB_BIN" baseline:"$TB_BASELINE"; do
    cat >"$TB_DIR/${b%%:*}-silentdns" <<WRAP
#!/bin/bash
exec unshare -m bash -c 'mount --bind "$TB_DIR/resolv.conf" /etc/resolv.conf && exec "\$0" "\$@"' "${b#*:}" "\$@"
WRAP
    chmod +x "$TB_DIR/${b%%:*}-silentdns"
done
i=0
while ! grep -q listening "$TB_DIR/dns.stderr" 2>/dev/null && [ $i -lt 500 ]; do sleep 0.01; i=$((i + 1)); done
# the wrapper really gives a silent name server: a lookup takes >= 3 s
t0=$(date +%s%N)
"$TB_DIR/patched-silentdns" --version >/dev/null 2>&1
unshare -m bash -c "mount --bind '$TB_DIR/resolv.conf' /etc/resolv.conf && getent hosts vpn1.example.org" >/dev/null 2>&1
lookup_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "a lookup through the silent name server takes >= 2900 ms ($lookup_ms ms)" test "$lookup_ms" -ge 2900

S=$(tb_port 1)
tb_server s1 "$S" -- --server-probe-reply 0 50 100

# ------------------------------------------------------------------ (a)
tb_log "(a) remotes [vpn1.example.org (silent DNS), 127.0.0.1:$S]"
tb_client pa --bin "$TB_DIR/patched-silentdns" -- \
    --remote vpn1.example.org "$S" udp4 --remote 127.0.0.1 "$S" udp4 --server-probe
tb_client ba --bin "$TB_DIR/baseline-silentdns" -- \
    --remote vpn1.example.org "$S" udp4 --remote 127.0.0.1 "$S" udp4
pa_ms=$(tb_wait_connected pa 30) || pa_ms=""
ba_ms=$(tb_wait_connected ba 60) || ba_ms=""
tb_log "patched $pa_ms ms, unpatched $ba_ms ms"
# master: one blocking lookup (3 s) plus the connection (see the top)
limit=2500
[ "$(tb_series)" = master ] && limit=4000
check "(a) patched connects within $limit ms (${pa_ms:-none})" \
    bash -c "[ -n '$pa_ms' ] && [ '$pa_ms' -lt $limit ]"
check "(a) the name is logged as not resolved, at place 2" \
    grep -qF "server-probe: vpn1.example.org not resolved place=2" "$TB_DIR/pa.log"
check "(a) unpatched waits for the name first (${ba_ms:-none} ms >= 2900)" \
    bash -c "[ -n '$ba_ms' ] && [ '$ba_ms' -ge 2900 ]"
tb_stop pa; tb_stop ba

# ------------------------------------------------------------------ (b)
tb_log "(b) remotes [127.0.0.1:$S, vpn1.example.org, vpn2.example.org]"
tb_client pb --bin "$TB_DIR/patched-silentdns" -- --remote 127.0.0.1 "$S" udp4 \
    --remote vpn1.example.org "$S" udp4 --remote vpn2.example.org "$S" udp4 --server-probe
tb_client bb --bin "$TB_DIR/baseline-silentdns" -- --remote 127.0.0.1 "$S" udp4 \
    --remote vpn1.example.org "$S" udp4 --remote vpn2.example.org "$S" udp4
pb_ms=$(tb_wait_connected pb 30) || pb_ms=""
bb_ms=$(tb_wait_connected bb 30) || bb_ms=""
tb_log "patched $pb_ms ms, unpatched $bb_ms ms"
check "(b) patched connects within $limit ms, not 2 x 3 s later (${pb_ms:-none})" \
    bash -c "[ -n '$pb_ms' ] && [ '$pb_ms' -lt $limit ]"
check "(b) both names: not resolved, places 2 and 3" \
    bash -c "grep -qF 'server-probe: vpn1.example.org not resolved place=2' '$TB_DIR/pb.log' && grep -qF 'server-probe: vpn2.example.org not resolved place=3' '$TB_DIR/pb.log'"
summary=$(grep -F "addresses answered in" "$TB_DIR/pb.log" | sed 's/.*server-probe: //')
phase=$(sed -n 's/.* answered in \([0-9]*\) ms.*/\1/p' <<<"$summary")
if [ "$(tb_series)" = master ]; then
    check "(b) master: the second name is not looked up once the time for names is spent" \
        grep -qF "server-probe: vpn2.example.org:$S not probed: the time for names was spent" "$TB_DIR/pb.log"
    check "(b) master: the whole phase took one lookup, <= 4000 ms ($summary)" \
        bash -c "[ -n '$phase' ] && [ '$phase' -le 4000 ]"
else
    check "(b) the whole phase (resolution included) took <= 1500 ms ($summary)" \
        bash -c "[ -n '$phase' ] && [ '$phase' -le 1500 ]"
fi
echo "# silent name server: time to connect, patched / unpatched: (a) $pa_ms / $ba_ms ms, (b) $pb_ms / $bb_ms ms"

echo "1..$n"
echo "# $n checks, $fails failed"
[ "$fails" -eq 0 ]
