#!/bin/bash
# Operators and monitoring, server side (SPEC section 2: --server-probe-reply
# off, a full server does not answer, the management command
# server-probe-reply and the probe counters), end to end on loopback with
# real servers and the management interface over a real TCP socket:
#   (a) off: a server started with --server-probe-reply off does not answer
#       probes (crafted ones, tests/e2e/probe_tool.py, and those of a
#       probing client, counted from the relay log), the client still
#       connects; "server-probe-reply 0 50 100" over management turns the
#       replies on again with exactly those values;
#   (b) live change: "server-probe-reply 7 60 5" over management; the next
#       reply carries max_latency_diff 7, weight 60, priority 5, while a
#       connected client keeps exchanging P_DATA_V2 without a restart and
#       stays in the server's client list; invalid arguments change
#       nothing;
#   (c) full: --max-clients 1 with one client connected: no reply; after
#       the client leaves (explicit-exit-notify): replies again;
#   (d) counters: every drop reason that can be provoked (wrap, malformed,
#       timestamp, rate-limit, off, full) moves its own counter by exactly
#       the number of probes sent, and nothing else moves;
#   (e) the command on a TCP server is refused as unsupported;
#   (f) --server-probe-reply 0 load with --max-clients 20 and
#       --connect-freq-initial 10 300: the weight is 20, 10 after five
#       resets that never complete (half the budget), 0 after ten; the
#       management command shows weight=load:10 (the series before this
#       advertised 20 throughout).
# Exit 0 pass, 1 fail, 77 skip.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by lib.sh (tb_port)
TB_PORT_BASE=${TB_PORT_BASE_OPERATOR:-26000}
# shellcheck source=../../testbed/lib.sh
. "$here/../../testbed/lib.sh"

command -v python3 >/dev/null 2>&1 || tb_skip_or_ci_fail "python3 is missing"
tb_setup operator server-probe-reply -- "$@"
# the series is always in build/bin/openvpn: a missing option is a broken
# build, never a reason to skip
"$TB_BIN" --help 2>/dev/null | grep -q -- "--server-probe-reply off" ||
    tb_die "the patched openvpn (${TB_BIN#"$TB_TOP"/}) has no '--server-probe-reply off' in its --help"

PT=(timeout 60 python3 "$here/probe_tool.py")
T0=$(date +%s)

# kv KEY LINE: the value of KEY=VALUE in a "k=v k=v" or "k=v,k=v" line
kv() { sed -n "s/.*\\b$1=\\([^ ,]*\\).*/\\1/p" <<<"$2"; }

# mgmt PORT COMMAND...: send one command to the management interface on
# 127.0.0.1:PORT and print its answer (the SUCCESS:/ERROR: line, or the
# lines up to END); real-time notifications (">...") are skipped
mgmt()
{
    timeout 15 python3 - "$@" <<'EOF'
import socket, sys
port, cmd = int(sys.argv[1]), " ".join(sys.argv[2:])
s = socket.create_connection(("127.0.0.1", port), timeout=10)
f = s.makefile("rb")
f.readline()                    # >INFO:OpenVPN Management Interface ...
s.sendall(cmd.encode() + b"\n")
while True:
    line = f.readline().decode(errors="replace").rstrip("\r\n")
    if not line:
        break
    if line.startswith(">"):
        continue
    print(line)
    if line.startswith(("SUCCESS:", "ERROR:")) or line == "END":
        break
s.sendall(b"quit\n")
s.close()
EOF
}

# stats PORT: the counters line of "server-probe-reply stats"
stats() { mgmt "$1" server-probe-reply stats; }

# expect_stats WHAT PORT "answered=.. off=.. ...": all eight counters as
# expected (the value string lists them in the order of the answer)
expect_stats()
{
    local what=$1 port=$2 want=$3 got
    got=$(stats "$port")
    if [ "$got" = "SUCCESS: $want" ]; then
        ok "$what: counters $want"
    else
        not_ok "$what: counters: want 'SUCCESS: $want', got '$got'"
    fi
}

# probe ADDR [probe_tool one args]: one probe, the key=value result line
probe() { local t=$1; shift; "${PT[@]}" one --target "$t" "$@"; }

# expect_reply WHAT LINE MLD WEIGHT PRIO: LINE (from probe) is a reply to
# our probe with exactly these values
expect_reply()
{
    local what=$1 line=$2
    if [ "$(kv reply "$line")" = 1 ] && [ "$(kv sid_ok "$line")" = 1 ] &&
       [ "$(kv mld "$line")" = "$3" ] && [ "$(kv weight "$line")" = "$4" ] &&
       [ "$(kv prio "$line")" = "$5" ]; then
        ok "$what: reply with max_latency_diff $3, weight $4, priority $5"
    else
        not_ok "$what: want a reply with max_latency_diff $3, weight $4, priority $5 ($line)"
    fi
}

expect_no_reply()
{
    local what=$1 line=$2
    if [ "$(kv reply "$line")" = 0 ]; then
        ok "$what: no reply"
    else
        not_ok "$what: want no reply ($line)"
    fi
}

# data_after RELAY MARK: wait (up to 6 s) for P_DATA_V2 both ways in the
# relay log after line MARK; prints "UP DOWN"
data_after()
{
    local k res up=0 down=0
    for ((k = 0; k < 120; k++)); do
        res=$(awk -v m="$2" 'NR > m && $4 == 9 { c[$2]++ } END { printf "%d %d", c["up"], c["down"] }' \
              "$TB_DIR/$1.relay.log")
        read -r up down <<<"$res"
        [ "$up" -ge 2 ] && [ "$down" -ge 2 ] && break
        sleep 0.05
    done
    echo "$up $down"
}

# restarts CLIENT: number of restart/error lines in the client log
restarts() { grep -c -E "SIGUSR1\[|SIGHUP\[|Restart pause|Inactivity timeout|process restarting|TLS Error" "$TB_DIR/$1.log"; }

# clients_listed PORT: number of CLIENT_LIST lines of "status 2"
clients_listed() { mgmt "$1" status 2 | grep -c "^CLIENT_LIST,"; }

# ------------------------------------------------------------------ (a)
tb_log "(a) --server-probe-reply off, then on again over management"
P_A=$(tb_port 1) M_A=$(tb_port 501) R_A=$(tb_port 101)
tb_server sa "$P_A" -- --ping 1 --server-probe-reply off --management 127.0.0.1 "$M_A"
A="127.0.0.1:$P_A"
line=$(mgmt "$M_A" server-probe-reply)
check "report at start: '$line'" test "$line" = "SUCCESS: server-probe-reply=off"
expect_no_reply "off: a valid probe" "$(probe "$A" --timeout 1)"
# a probing client through a relay: its probes are not answered, it ranks
# the server as not answering and connects all the same
tb_relay ra "127.0.0.1:$R_A" "$A" --delay 2
tb_client ca -- --remote 127.0.0.1 "$R_A" udp4 --server-probe --ping 1
if ms=$(tb_wait_connected ca 30); then
    sline=$(grep -m1 -F "addresses answered in" "$TB_DIR/ca.log")
    ok "off: a probing client connects in $ms ms (${sline#*server-probe: })"
else
    not_ok "off: a probing client connects"
fi
cprobes=$(tb_count_op ra up 12)
creplies=$(tb_count_op ra down 12)
check "off: the client sent $cprobes probe(s) (>= 1), the server answered $creplies (0)" \
    test "$cprobes" -ge 1 -a "$creplies" -eq 0
expect_stats "off" "$M_A" \
    "answered=0,off=$((1 + cprobes)),full=0,wrap=0,malformed=0,timestamp=0,rate-limit=0,size=0"
line=$(mgmt "$M_A" server-probe-reply 0 50 100)
check "'server-probe-reply 0 50 100' answers '$line'" \
    test "$line" = "SUCCESS: server-probe-reply=on,max-latency-diff=0,weight=50,priority=100"
expect_reply "on again" "$(probe "$A" --timeout 2)" 0 50 100
mark=$(wc -l <"$TB_DIR/ra.relay.log")
read -r dup ddown <<<"$(data_after ra "$mark")"
check "on again: the client still exchanges P_DATA_V2 ($dup up, $ddown down), $(restarts ca) restart lines" \
    test "$dup" -ge 2 -a "$ddown" -ge 2 -a "$(restarts ca)" -eq 0
expect_stats "on again" "$M_A" \
    "answered=1,off=$((1 + cprobes)),full=0,wrap=0,malformed=0,timestamp=0,rate-limit=0,size=0"
grep -m1 -F "MANAGEMENT: server-probe-reply set to" "$TB_DIR/sa.log" | sed 's/^/#   server: /'
tb_stop ca
tb_stop ra

# ------------------------------------------------------------------ (b)
tb_log "(b) live change with a connected client"
P_B=$(tb_port 2) M_B=$(tb_port 502) R_B=$(tb_port 102)
tb_server sb "$P_B" -- --ping 1 --server-probe-reply 3 40 20 --management 127.0.0.1 "$M_B"
B="127.0.0.1:$P_B"
line=$(mgmt "$M_B" server-probe-reply)
check "report of the configured values: '$line'" \
    test "$line" = "SUCCESS: server-probe-reply=on,max-latency-diff=3,weight=40,priority=20"
expect_reply "configured" "$(probe "$B" --timeout 2)" 3 40 20
tb_relay rb "127.0.0.1:$R_B" "$B" --delay 2
tb_client cb -- --remote 127.0.0.1 "$R_B" udp4 --ping 1
if tb_wait_connected cb 30 >/dev/null && tb_wait_ops rb 10 up 9 2 down 9 2; then
    mark=$(wc -l <"$TB_DIR/rb.relay.log")
    line=$(mgmt "$M_B" server-probe-reply 7 60 5)
    check "'server-probe-reply 7 60 5' answers '$line'" \
        test "$line" = "SUCCESS: server-probe-reply=on,max-latency-diff=7,weight=60,priority=5"
    expect_reply "next probe after the change" "$(probe "$B" --timeout 2)" 7 60 5
    line=$(mgmt "$M_B" server-probe-reply)
    check "report after the change: '$line'" \
        test "$line" = "SUCCESS: server-probe-reply=on,max-latency-diff=7,weight=60,priority=5"
    # invalid arguments: an error, nothing changes
    line=$(mgmt "$M_B" server-probe-reply 1 65536)
    check "'server-probe-reply 1 65536' is refused: '$line'" \
        test "$line" = "ERROR: server-probe-reply: weight '65536' must be 'load' or an integer from 0 to 65535"
    line=$(mgmt "$M_B" server-probe-reply off now)
    check "'server-probe-reply off now' is refused: '$line'" \
        test "$line" = "ERROR: server-probe-reply: 'off' takes no further arguments"
    line=$(mgmt "$M_B" server-probe-reply 1 2 3 4)
    check "'server-probe-reply 1 2 3 4' is refused: '$line'" \
        test "$line" = "ERROR: server-probe-reply: too many arguments (at most 3)"
    expect_reply "after the refused commands" "$(probe "$B" --timeout 2)" 7 60 5
    # values left out take their defaults, as in the option
    line=$(mgmt "$M_B" server-probe-reply 9)
    check "'server-probe-reply 9' answers '$line'" \
        test "$line" = "SUCCESS: server-probe-reply=on,max-latency-diff=9,weight=50,priority=100"
    expect_reply "after 'server-probe-reply 9'" "$(probe "$B" --timeout 2)" 9 50 100
    read -r dup ddown <<<"$(data_after rb "$mark")"
    nc=$(clients_listed "$M_B")
    check "the client stayed connected: P_DATA_V2 $dup up, $ddown down after the first change, $(restarts cb) restart lines, $nc client(s) in 'status 2'" \
        test "$dup" -ge 2 -a "$ddown" -ge 2 -a "$(restarts cb)" -eq 0 -a "$nc" -eq 1
    hs=$(grep -c "Peer Connection Initiated" "$TB_DIR/cb.log")
    check "the client completed exactly one handshake ($hs)" test "$hs" -eq 1
    expect_stats "live change" "$M_B" \
        "answered=4,off=0,full=0,wrap=0,malformed=0,timestamp=0,rate-limit=0,size=0"
else
    not_ok "live change: the client did not connect or exchange data"
    tb_tail cb sb rb
fi
tb_stop cb
tb_stop rb

# ------------------------------------------------------------------ (c)
tb_log "(c) a full server (--max-clients 1) does not answer"
P_C=$(tb_port 3) M_C=$(tb_port 503)
tb_server sc "$P_C" -- --ping 1 --max-clients 1 --management 127.0.0.1 "$M_C"
C="127.0.0.1:$P_C"
expect_reply "not full (no client)" "$(probe "$C" --timeout 2)" 0 50 100
tb_client cc -- --remote 127.0.0.1 "$P_C" udp4 --ping 1 --explicit-exit-notify 1
if tb_wait_connected cc 30 >/dev/null; then
    expect_no_reply "full (1 of 1 clients)" "$(probe "$C" --timeout 1)"
    expect_no_reply "still full" "$(probe "$C" --timeout 1)"
    tb_stop cc
    # the client's exit notification ends its instance; poll until the
    # server answers again
    tries=0
    for ((k = 0; k < 20; k++)); do
        line=$(probe "$C" --timeout 0.5)
        tries=$((tries + 1))
        [ "$(kv reply "$line")" = 1 ] && break
    done
    expect_reply "the client left: answered again after $tries probe(s)" "$line" 0 50 100
    expect_stats "full" "$M_C" \
        "answered=2,off=0,full=$((2 + tries - 1)),wrap=0,malformed=0,timestamp=0,rate-limit=0,size=0"
    # no line per unauthenticated packet below --verb 7 (both series):
    # the counter above is the operator's view
    check "the server did not log a line per probe dropped as full (--verb $TB_VERB)" \
        bash -c "! grep -qiE 'not answering .*full|server-probe: .*full' '$TB_DIR/sc.log'"
else
    not_ok "full: the client did not connect"
    tb_tail cc sc
fi

# ------------------------------------------------------------------ (d)
tb_log "(d) counters by drop reason"
P_D=$(tb_port 4) M_D=$(tb_port 504)
tb_server sd "$P_D" -- --management 127.0.0.1 "$M_D"
D="127.0.0.1:$P_D"
expect_stats "fresh server" "$M_D" \
    "answered=0,off=0,full=0,wrap=0,malformed=0,timestamp=0,rate-limit=0,size=0"
nans=0 nbad=0
for spec in "timestamp:stale:--ts-offset -120" "timestamp:future:--ts-offset 120" \
            "malformed:truncated-TLV:--variant trunc" "malformed:short-TLV:--variant short" \
            "malformed:message-type-0x0101:--variant wrongtype" \
            "malformed:unknown-mandatory-TLV:--variant unknown-crit" \
            "malformed:no-probe-TLV:--variant notlv" "wrap:key-id-1:--variant keyid"; do
    reason=${spec%%:*} rest=${spec#*:}
    label=${rest%%:*} args=${rest#*:}
    before=$(stats "$M_D")
    # shellcheck disable=SC2086
    line=$(probe "$D" --timeout 0.5 $args)
    after=$(stats "$M_D")
    b=$(kv "$reason" "$before") a=$(kv "$reason" "$after")
    # every other counter stays as it was
    # shellcheck disable=SC2001  # a regex with \b
    others_b=$(sed "s/\\b$reason=[0-9]*//" <<<"$before")
    # shellcheck disable=SC2001
    others_a=$(sed "s/\\b$reason=[0-9]*//" <<<"$after")
    if [ "$(kv reply "$line")" = 0 ] && [ "$a" = $((b + 1)) ] && [ "$others_a" = "$others_b" ]; then
        ok "$label: no reply, $reason $b -> $a, the other counters unchanged"
    else
        not_ok "$label: want no reply and $reason +1 only ($line; before: $before; after: $after)"
    fi
    nbad=$((nbad + 1))
done
line=$(probe "$D" --timeout 2 --variant unknown-opt)
expect_reply "unknown optional TLV" "$line" 0 50 100
nans=$((nans + 1))
expect_stats "after $nbad bad probes and $nans good one" "$M_D" \
    "answered=1,off=0,full=0,wrap=1,malformed=5,timestamp=2,rate-limit=0,size=0"

# wrap: an unwrapped probe at a tls-auth server
P_W=$(tb_port 5) M_W=$(tb_port 505)
tb_server sw "$P_W" --wrap tls-auth -- --management 127.0.0.1 "$M_W"
expect_no_reply "tls-auth server, unwrapped probe" "$(probe "127.0.0.1:$P_W" --timeout 0.5)"
expect_no_reply "tls-auth server, unwrapped probe again" "$(probe "127.0.0.1:$P_W" --timeout 0.5)"
expect_stats "tls-auth server" "$M_W" \
    "answered=0,off=0,full=0,wrap=2,malformed=0,timestamp=0,rate-limit=0,size=0"

# rate limit: --server-probe-budget 5 300, 20 valid probes
P_R=$(tb_port 6) M_R=$(tb_port 506)
tb_server sr "$P_R" -- --server-probe-budget 5 300 --management 127.0.0.1 "$M_R"
line=$("${PT[@]}" burst --target "127.0.0.1:$P_R" --count 20 --wait 1)
check "20 probes at --server-probe-budget 5 300: 5 replies ($line)" \
    test "$(kv replies "$line")" = 5 -a "$(kv valid "$line")" = 5
expect_stats "rate limit" "$M_R" \
    "answered=5,off=0,full=0,wrap=0,malformed=0,timestamp=0,rate-limit=15,size=0"
# the limiter counts probes that reach it only: invalid ones do not use it
# up, and off does not either
mgmt "$M_R" server-probe-reply off >/dev/null
expect_no_reply "rate-limited server, off" "$(probe "127.0.0.1:$P_R" --timeout 0.5)"
expect_stats "off before the limiter" "$M_R" \
    "answered=5,off=1,full=0,wrap=0,malformed=0,timestamp=0,rate-limit=15,size=0"
echo "# size: not provoked; a valid probe of this version is >= 27 bytes and"
echo "#   its plain reply 35 bytes, below the 3x bound (covered by the counter"
echo "#   being 0 everywhere above)"

# ------------------------------------------------------------------ (e)
tb_log "(e) a TCP server does not support the command"
P_T=$(tb_port 7) M_T=$(tb_port 507)
tb_server st "$P_T" --proto tcp-server -- --management 127.0.0.1 "$M_T"
line=$(mgmt "$M_T" server-probe-reply)
check "TCP server: '$line'" \
    test "$line" = "ERROR: The 'server-probe-reply' command is not supported by the current daemon mode"
line=$(mgmt "$M_T" server-probe-reply stats)
check "TCP server, stats: '$line'" \
    test "$line" = "ERROR: The 'server-probe-reply' command is not supported by the current daemon mode"

# ------------------------------------------------------------------ (f)
tb_log "(f) the load-aware weight follows the handshake budget"
P_L=$(tb_port 8) M_L=$(tb_port 508)
tb_server sl "$P_L" -- --management 127.0.0.1 "$M_L" --max-clients 20 \
    --connect-freq-initial 10 300 --server-probe-reply 0 load
expect_reply "load, budget untouched" "$(probe "127.0.0.1:$P_L")" 0 20 100
# resets that never complete a handshake spend the budget (and never give
# a unit back): each one takes a tenth of it
for i in 1 2 3 4 5; do "${PT[@]}" reset --target "127.0.0.1:$P_L" >/dev/null; done
expect_reply "load, 5 of 10 handshakes spent" "$(probe "127.0.0.1:$P_L")" 0 10 100
line=$(mgmt "$M_L" server-probe-reply)
check "management shows the weight in effect: '$line'" \
    grep -q "weight=load:10," <<<"$line"
for i in 1 2 3 4 5; do "${PT[@]}" reset --target "127.0.0.1:$P_L" >/dev/null; done
expect_reply "load, budget spent" "$(probe "127.0.0.1:$P_L")" 0 0 100

echo "1..$n"
echo "# $n checks, $fails failed, $(( $(date +%s) - T0 )) s"
[ $fails -eq 0 ] || exit 1
exit 0
