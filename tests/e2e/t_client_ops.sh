#!/bin/bash
# shellcheck disable=SC2317  # helpers run through check()
# The client side of "operators and monitoring" (SPEC 3: management
# command server-probe, --server-probe-only), end to end:
#   (a) --server-probe-only with one live and one dead remote: exit 0,
#       both listed (answered / no-reply), the summary line first, stdout
#       holds nothing else, exit about the phase length after the start;
#   (b) only dead remotes: exit 1; a closed port: "refused";
#   (c) no UDP remote: exit 3;
#   (d) the management command "server-probe" of a connected client after
#       a phase with a dead remote: one line per address with its fields,
#       then END; remote-entry-get shows the reordered list.
# Exit 0 pass, 1 fail, 77 skip.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by lib.sh (tb_port)
TB_PORT_BASE=${TB_PORT_BASE_CLIENT_OPS:-30000}
# shellcheck source=../../testbed/lib.sh
. "$here/../../testbed/lib.sh"

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
        --server-probe-only "$@" >"$TB_DIR/$name.out" 2>"$TB_DIR/$name.err"
    RC=$?
    MS=$(( ($(date +%s%N) - t0) / 1000000 ))
    sed 's/^/#   | /' "$TB_DIR/$name.out"
}

# ------------------------------------------------------------------ (a)
tb_log "(a) --server-probe-only, one live and one dead remote"
probe_only pa --remote 127.0.0.1 "$DEAD" udp4 --remote 127.0.0.1 "$R" udp4
check "(a) exit 0 (got $RC)" test "$RC" -eq 0
check "(a) summary first: 'server-probe OK: 1 of 2 addresses answered'" \
    bash -c "head -n1 '$TB_DIR/pa.out' | grep -q '^server-probe OK: 1 of 2 addresses answered in [0-9]* ms$'"
check "(a) the live remote: answered, prio 5, weight 60, mld 7, place 1" \
    bash -c "grep -qE '^127\.0\.0\.1:$R +\[AF_INET\]127\.0\.0\.1:$R +answered +[0-9.]+ ms +5 +60 +7 +[0-9]+ +1$' '$TB_DIR/pa.out'"
check "(a) the dead remote: no-reply, place 2" \
    bash -c "grep -qE '^127\.0\.0\.1:$DEAD +\[AF_INET\]127\.0\.0\.1:$DEAD +no-reply .* 2$' '$TB_DIR/pa.out'"
check "(a) stdout holds the summary, a header and 2 rows only ($(wc -l <"$TB_DIR/pa.out") lines)" \
    test "$(wc -l <"$TB_DIR/pa.out")" -eq 4
check "(a) the log went to stderr" grep -qF "addresses answered in" "$TB_DIR/pa.err"
check "(a) exits about the phase length after the start: $MS ms in [900, 2500]" \
    bash -c "[ $MS -ge 900 ] && [ $MS -le 2500 ]"

# ------------------------------------------------------------------ (b)
tb_log "(b) only dead remotes"
probe_only pb --remote 127.0.0.1 "$DEAD" udp4 --remote 127.0.0.1 "$CLOSED" udp4
check "(b) exit 1 (got $RC)" test "$RC" -eq 1
check "(b) summary: 'server-probe CRITICAL: none of 2 addresses answered'" \
    bash -c "head -n1 '$TB_DIR/pb.out' | grep -q '^server-probe CRITICAL: none of 2 addresses answered'"
check "(b) the closed port: refused" grep -qE "^127\.0\.0\.1:$CLOSED +\[AF_INET\]127\.0\.0\.1:$CLOSED +refused " "$TB_DIR/pb.out"

# ------------------------------------------------------------------ (c)
tb_log "(c) no UDP remote to probe"
probe_only pc --remote 127.0.0.1 "$S" tcp-client
check "(c) exit 3 (got $RC), nothing on stdout" bash -c "[ $RC -eq 3 ] && [ ! -s '$TB_DIR/pc.out' ]"

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
        grep -qE "^[0-9]+,127\.0\.0\.1:$R,\[AF_INET\]127\.0\.0\.1:$R,answered,[0-9.]+,5,60,7,[0-9]+,1$" "$TB_DIR/mgmt.out"
    check "(d) the dead address: no-reply with empty fields, place 2" \
        grep -qE "^[0-9]+,127\.0\.0\.1:$DEAD,\[AF_INET\]127\.0\.0\.1:$DEAD,no-reply,,,,,,2$" "$TB_DIR/mgmt.out"
    check "(d) the answer ends with END after two lines" \
        bash -c "sed -n '1,/^END$/p' '$TB_DIR/mgmt.out' | wc -l | grep -qx 3"
    check "(d) remote-entry-get all: the live remote is entry 0" \
        grep -qE "^0,127\.0\.0\.1,$R,udp4" "$TB_DIR/mgmt.out"
else
    not_ok "(d) the client did not connect"; tb_tail cd
fi
tb_stop cd

echo "1..$n"
echo "# $n checks, $fails failed"
[ "$fails" -eq 0 ]
