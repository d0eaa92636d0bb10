#!/bin/bash
# shellcheck disable=SC2317  # helpers run through check()
# The client side of "operators and monitoring" (SPEC 3: management
# command server-probe, --server-probe-only), end to end. Exit codes and
# the first line follow the monitoring plugin convention (0 OK, 1 WARNING,
# 2 CRITICAL, 3 UNKNOWN; "SERVER-PROBE <STATUS>: ... | perfdata"):
#   (a) one live and one dead remote: exit 1 (WARNING), both listed
#       (answered / no-reply), the status line first with the RTT as
#       performance data, stdout holds nothing else, exit about the phase
#       length after the start;
#   (b) only dead remotes: exit 2 (CRITICAL); a closed port: "refused";
#   (c) no UDP remote: exit 3 (UNKNOWN), "SERVER-PROBE UNKNOWN" on stdout;
#   (d) the management command "server-probe" of a connected client after
#       a phase with a dead remote: one line per address with its fields,
#       then END; remote-entry-get shows the reordered list;
#   (e) every remote answered, one of them an IPv6 literal: exit 0 (OK),
#       the IPv6 remote and address written as [::1]:PORT;
#   (f) configuration errors exit 3 (UNKNOWN), not OpenVPN's usual 1: a
#       missing --tls-auth key file, an unknown option in the --config
#       file read before --server-probe-only on the command line.
# Exit 0 pass, 1 fail, 77 skip.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by lib.sh (tb_port)
TB_PORT_BASE=${TB_PORT_BASE_CLIENT_OPS:-30000}
# shellcheck source=../../testbed/lib.sh
. "$here/../../testbed/lib.sh"

command -v python3 >/dev/null 2>&1 || tb_skip_or_ci_fail "python3 is missing"
tb_setup client-ops server-probe server-probe-only -- "$@"

S=$(tb_port 1) R=$(tb_port 101) DEAD=$(tb_port 102) CLOSED=$(tb_port 150)
tb_server s1 "$S" -- --server-probe-reply 7 60 5
tb_relay r1 "127.0.0.1:$R" "127.0.0.1:$S" --delay 10
tb_relay rdead "127.0.0.1:$DEAD" "127.0.0.1:$S" --blackhole

# probe_only NAME ARGS...: run --server-probe-only with the client's
# options; stdout to NAME.out, stderr to NAME.err; sets RC and MS
probe_only()
{
    local name=$1; shift
    local t0
    t0=$(date +%s%N)
    timeout 20 "$TB_BIN" --client --dev null --nobind --ca "$TB_PKI/ca.crt" \
        --cert "$TB_PKI/client.crt" --key "$TB_PKI/client.key" \
        "$@" --server-probe-only >"$TB_DIR/$name.out" 2>"$TB_DIR/$name.err"
    RC=$?
    MS=$(( ($(date +%s%N) - t0) / 1000000 ))
    sed 's/^/#   | /' "$TB_DIR/$name.out"
}

# ------------------------------------------------------------------ (a)
tb_log "(a) --server-probe-only, one live and one dead remote"
probe_only pa --remote 127.0.0.1 "$DEAD" udp4 --remote 127.0.0.1 "$R" udp4
check "(a) exit 1, WARNING (got $RC)" test "$RC" -eq 1
check "(a) status line first: 'SERVER-PROBE WARNING: 1 of 2 addresses answered ... | perfdata'" \
    bash -c "head -n1 '$TB_DIR/pa.out' | grep -qE \"^SERVER-PROBE WARNING: 1 of 2 addresses answered in [0-9]+ ms \\| 'rtt 127\\.0\\.0\\.1:$DEAD'=U 'rtt 127\\.0\\.0\\.1:$R'=[0-9.]+ms;;;0$\""
check "(a) the live remote: answered, prio 5, weight 60, mld 7, place 1" \
    bash -c "grep -qE '^127\.0\.0\.1:$R +127\.0\.0\.1:$R +answered +[0-9.]+ ms +5 +60 +7 +[0-9]+ +- +1$' '$TB_DIR/pa.out'"
check "(a) the dead remote: no-reply, place 2" \
    bash -c "grep -qE '^127\.0\.0\.1:$DEAD +127\.0\.0\.1:$DEAD +no-reply .* 2$' '$TB_DIR/pa.out'"
check "(a) stdout holds the status line, a header and 2 rows only ($(wc -l <"$TB_DIR/pa.out") lines)" \
    test "$(wc -l <"$TB_DIR/pa.out")" -eq 4
check "(a) the log went to stderr" grep -qF "addresses answered in" "$TB_DIR/pa.err"
check "(a) exits about the phase length after the start: $MS ms in [900, 2500]" \
    bash -c "[ $MS -ge 900 ] && [ $MS -le 2500 ]"

# ------------------------------------------------------------------ (b)
tb_log "(b) only dead remotes"
probe_only pb --remote 127.0.0.1 "$DEAD" udp4 --remote 127.0.0.1 "$CLOSED" udp4
check "(b) exit 2, CRITICAL (got $RC)" test "$RC" -eq 2
check "(b) status line: 'SERVER-PROBE CRITICAL: 0 of 2 addresses answered'" \
    bash -c "head -n1 '$TB_DIR/pb.out' | grep -q '^SERVER-PROBE CRITICAL: 0 of 2 addresses answered in [0-9]* ms | '"
check "(b) the closed port: refused" grep -qE "^127\.0\.0\.1:$CLOSED +127\.0\.0\.1:$CLOSED +refused " "$TB_DIR/pb.out"

# ------------------------------------------------------------------ (c)
tb_log "(c) no UDP remote to probe"
probe_only pc --remote 127.0.0.1 "$S" tcp-client
check "(c) exit 3, UNKNOWN (got $RC)" test "$RC" -eq 3
check "(c) stdout: 'SERVER-PROBE UNKNOWN: no UDP remote to probe' alone" \
    bash -c "[ \"\$(cat '$TB_DIR/pc.out')\" = 'SERVER-PROBE UNKNOWN: no UDP remote to probe' ]"

# ------------------------------------------------------------------ (d)
tb_log "(d) management command server-probe"
M=$(tb_port 20)
tb_client cd -- --remote 127.0.0.1 "$DEAD" udp4 --remote 127.0.0.1 "$R" udp4 \
    --server-probe --management 127.0.0.1 "$M"
if tb_wait_connected cd 20 >/dev/null; then
    python3 - "$M" >"$TB_DIR/mgmt.out" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
f = s.makefile("rw", newline="\n")
def cmd(c):
    f.write(c + "\n"); f.flush()
    out = []
    while True:
        line = f.readline().rstrip("\r\n")
        if line.startswith(">"):
            continue
        out.append(line)
        if line in ("END",) or line.startswith("ERROR") or line.startswith("SUCCESS"):
            return out
print("\n".join(cmd("server-probe")))
print("--")
print("\n".join(cmd("remote-entry-get all")))
PY
    sed 's/^/#   | /' "$TB_DIR/mgmt.out"
    check "(d) the live address: answered,rtt,5,60,7,lifetime,1" \
        grep -qE "^[0-9]+,127\.0\.0\.1:$R,127\.0\.0\.1:$R,answered,[0-9.]+,5,60,7,[0-9]+,1,$" "$TB_DIR/mgmt.out"
    check "(d) the dead address: no-reply with empty fields, place 2, remembered as offline" \
        grep -qE "^[0-9]+,127\.0\.0\.1:$DEAD,127\.0\.0\.1:$DEAD,no-reply,,,,,,2,offline-for-[0-9]+s$" "$TB_DIR/mgmt.out"
    check "(d) the answer ends with END after two lines" \
        bash -c "sed -n '1,/^END$/p' '$TB_DIR/mgmt.out' | wc -l | grep -qx 3"
    check "(d) remote-entry-get all: the live remote is entry 0" \
        grep -qE "^0,127\.0\.0\.1,$R,udp4" "$TB_DIR/mgmt.out"
else
    not_ok "(d) the client did not connect"; tb_tail cd
fi
tb_stop cd

# ------------------------------------------------------------------ (e)
tb_log "(e) every remote answered, one of them IPv6"
if ip -6 addr show dev lo 2>/dev/null | grep -q '::1'; then
    S6=$(tb_port 2)
    tb_server s6 "$S6" --ipv6 -- --server-probe-reply 0 50 100
    probe_only pe --remote 127.0.0.1 "$R" udp4 --remote ::1 "$S6" udp6
    check "(e) exit 0, OK (got $RC)" test "$RC" -eq 0
    check "(e) status line: 'SERVER-PROBE OK: 2 of 2 addresses answered', IPv6 perfdata label in brackets" \
        bash -c "head -n1 '$TB_DIR/pe.out' | grep -qF \"'rtt [::1]:$S6'=\" && head -n1 '$TB_DIR/pe.out' | grep -q '^SERVER-PROBE OK: 2 of 2 addresses answered in'"
    check "(e) the IPv6 row: remote and address as [::1]:$S6" \
        grep -qE "^\[::1\]:$S6 +\[::1\]:$S6 +answered " "$TB_DIR/pe.out"
else
    not_ok "(e) no ::1 on lo in the test's namespace"
fi

# ------------------------------------------------------------------ (f)
tb_log "(f) configuration errors: UNKNOWN"
probe_only pf1 --remote 127.0.0.1 "$R" udp4 --tls-auth "$TB_DIR/no-such.key" 1
check "(f) a missing --tls-auth key file: exit 3 (got $RC)" test "$RC" -eq 3
check "(f) ... and the reason on stderr" grep -qF "no-such.key" "$TB_DIR/pf1.err"
printf 'remote 127.0.0.1 %s udp4\nno-such-option 1\n' "$R" >"$TB_DIR/bad.conf"
probe_only pf2 --config "$TB_DIR/bad.conf"
check "(f) an unknown option in --config before --server-probe-only: exit 3 (got $RC)" test "$RC" -eq 3
check "(f) ... stdout empty" test ! -s "$TB_DIR/pf2.out"

echo "1..$n"
echo "# $n checks, $fails failed"
[ "$fails" -eq 0 ]
