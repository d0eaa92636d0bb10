#!/bin/bash
# Server side of the oob-server-probe series ("Server: answer SERVER_PROBE
# statelessly", SPEC sections 1, 2 and 5), end to end on loopback:
#   (a) every wrap mode (none, tls-auth, tls-crypt, tls-crypt-v2): a real
#       probing client (--server-probe) through a 5 ms relay; from the relay
#       log, every probe (opcode 12, 13 with tls-crypt-v2) is answered by
#       exactly one opcode-12 reply, and reply/probe length (amplification)
#       is <= 1.0; the figures go to build/testbed/amplification.txt;
#   (b) crafted plain probes (tests/e2e/probe_tool.py) that must not be
#       answered: stale and future timestamps, truncated/short TLV, wrong
#       message type, key id != 0, unknown mandatory TLV, no probe TLV, and
#       an unwrapped probe at a tls-auth server; for each, the server logs
#       the drop reason for that probe's source port, and a valid probe
#       (a wrapped client probe for the tls-auth server) right after is
#       answered with the default advertised values;
#   (c) memory: 100000 probes (after 1000 warm-up) do not grow the server's
#       VmRSS by 1 MiB or more (build/testbed/server-memory.txt);
#   (d) budgets (--server-probe-budget 30 120, --connect-freq-initial
#       40 120): a 400-probe burst in < 1 s gets exactly 30 replies, a new
#       handshake (plain HARD_RESET) right after is answered (probes have
#       a budget of their own), the server notes the spent probe budget
#       once and not the handshake's, and an already connected (baseline)
#       client keeps exchanging P_DATA_V2 without a restart;
#   (g) a server at --verb 4 logs no line per unauthenticated probe: 2000
#       stale probes add no log line (the 2.6 series logged 1178 before
#       issue 27);
#   (e) existing-instance routing: probes from the address of a connected
#       client (fixed --lport, behind a relay; sent from the relay's
#       upstream port with a raw socket) are answered statelessly, do not
#       reach the instance (no TLS error) and do not disturb the session;
#   (f) interop: a baseline client still connects to a patched server;
#   (h) a server shutting down (SIGTERM with --explicit-exit-notify, which
#       keeps it running for 2 s) answers no probe and logs no "Connection
#       attempt ... ignored" line per probe (it did, at verb 1, while
#       probes went through the handshake's path).
# Exit 0 pass, 1 fail, 77 skip. Takes about 30 s (50 s on a loaded machine).
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by lib.sh (tb_port)
TB_PORT_BASE=${TB_PORT_BASE_SERVER_PROBE:-23000}
# shellcheck source=../../testbed/lib.sh
. "$here/../../testbed/lib.sh"

command -v python3 >/dev/null 2>&1 || tb_skip_or_ci_fail "python3 is missing"
tb_setup server-probe server-probe-reply -- "$@"

PT=(timeout 120 python3 "$here/probe_tool.py")
AMP_FILE="$TB_ROOT/amplification.txt"
MEM_FILE="$TB_ROOT/server-memory.txt"


# kv KEY LINE: the value of KEY=VALUE in a key=value line ("" when absent)
kv() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"; }
# like_glob STRING GLOB
# shellcheck disable=SC2053
like_glob() { [[ $1 == $2 ]]; }

T0=$(date +%s)

# What the server logs per probe: nothing per unauthenticated packet below
# --verb 7 (D_MULTI_DEBUG), in both series, with the prefix "server-probe:".
# An answer is upstream's send_standalone_reply() line on master, which
# names no address, and "server-probe: server probe from ADDR answered (N
# bytes for M)" on 2.6, whose send_standalone_reply() logs nothing.
SRV_LOG_VERB=(--verb 7)
DROP_PREFIX="server-probe: not answering packet from"
if [ "$(tb_series)" = master ]; then
    ANSWERED_RE="Server probe from client, sending probe reply"
else
    ANSWERED_RE="server-probe: server probe from .* answered"
fi

# ------------------------------------------------------------------ (a)
tb_log "(a) a probing client against each wrap mode, through a 5 ms relay"
declare -A AMP=()
amp_summary=""
i=0
for wrap in none tls-auth tls-crypt tls-crypt-v2; do
    i=$((i + 1))
    s=sa$i r=ra$i c=ca$i
    sport=$(tb_port "$i") rport=$(tb_port $((100 + i)))
    pop=12
    [ "$wrap" = tls-crypt-v2 ] && pop=13
    tb_server "$s" "$sport" --wrap "$wrap" -- --ping 1 "${SRV_LOG_VERB[@]}"
    tb_relay "$r" "127.0.0.1:$rport" "127.0.0.1:$sport" --delay 5
    tb_client "$c" --wrap "$wrap" -- --remote 127.0.0.1 "$rport" udp4 --server-probe --ping 1
    ms=$(tb_wait_connected "$c" 30) || ms=""
    # replies can only come within the probe phase; the client has logged
    # its summary line by the time it connects (or gave up)
    sline=$(grep -m1 -F "addresses answered in" "$TB_DIR/$c.log" 2>/dev/null)
    # a late reply to a resent probe may still be on its way (a loaded
    # machine): wait up to 3 s for as many replies down as probes up
    for ((k = 0; k < 150; k++)); do
        awk -v pop="$pop" '$2 == "up" && $4 == pop { u++ } $2 == "down" && $4 == 12 { d++ }
            END { exit !(u > 0 && d >= u) }' "$TB_DIR/$r.relay.log" && break
        sleep 0.02
    done
    sleep 0.1       # and none more than that
    # per probe source address: probes up, replies down, min/max lengths
    res=$(awk -v pop="$pop" '
        $2 == "up" && $4 == pop { src[$3] = 1; up++; if (minup == "" || $5 < minup) minup = $5 }
        $2 == "down" && $4 == 12 && ($3 in src) { down++; if ($5 > maxdown) maxdown = $5 }
        $2 == "down" && $4 == 12 && !($3 in src) { stray++ }
        END { printf "%d %d %d %d %d %d\n", up, down, minup, maxdown, stray, length(src) }' \
        "$TB_DIR/$r.relay.log")
    read -r up down minup maxdown stray nsrc <<<"$res"
    answered=$(grep -c "$ANSWERED_RE" "$TB_DIR/$s.log")
    if [ "$up" -gt 0 ] && [ "$minup" -gt 0 ]; then
        amp=$(awk -v r="$maxdown" -v p="$minup" 'BEGIN { printf "%.2f", r / p }')
    else
        amp="n/a"
    fi
    AMP[$wrap]=$amp
    amp_summary="$amp_summary $wrap=$amp"
    what="$wrap: $up probe(s) (opcode $pop, ${minup} B) from $nsrc address(es), $down reply(ies) (opcode 12, ${maxdown} B), server logged $answered answered"
    if [ -n "$ms" ] && [ "$up" -ge 1 ] && [ "$down" -eq "$up" ] && [ "$stray" -eq 0 ] &&
       [ "$answered" -eq "$up" ] && [[ $sline == *" 1 of 1 addresses answered"* ]]; then
        ok "$what; client connected in ${ms} ms"
    else
        not_ok "$what; stray replies $stray; client: ${ms:-not connected}; summary: ${sline#*server-probe: }"
        tb_tail "$c" "$s" "$r"
    fi
    if [ "$amp" != n/a ] && awk -v a="$amp" 'BEGIN { exit !(a <= 1.0) }'; then
        ok "$wrap: amplification reply/probe = ${maxdown}/${minup} = $amp <= 1.0"
    else
        not_ok "$wrap: amplification reply/probe = ${maxdown:-?}/${minup:-?} = $amp <= 1.0"
    fi
    # the server's own view: no reply larger than the probe it answers
    if [ "$(tb_series)" = master ]; then
        # master logs the sizes only of a reply it refuses to send
        big=$(grep -c "server-probe: not answering probe from .*: reply of" "$TB_DIR/$s.log")
    else
        big=$(sed -n 's/.*server-probe: server probe from .* answered (\([0-9]*\) bytes for \([0-9]*\)).*/\1 \2/p' \
              "$TB_DIR/$s.log" | awk '$1 > $2 { n++ } END { print n + 0 }')
    fi
    check "$wrap: the server log shows no reply larger than its probe ($big larger)" test "$big" -eq 0
    tb_stop "$c"
done
echo "# amplification$amp_summary"

# ------------------------------------------------------------------ (b)
tb_log "(b) probes the server must not answer"
P_B=$(tb_port 10)
# --verb 7: the key id drop is logged at D_TLS_STATE_ERRORS (7) only
tb_server sb "$P_B" -- --ping 1 --verb 7
TB_B="127.0.0.1:$P_B"
# a valid probe first: answered with the defaults (0 ms, weight 50, prio 100)
line=$("${PT[@]}" one --target "$TB_B" --timeout 2)
if [ "$(kv reply "$line")" = 1 ] && [ "$(kv sid_ok "$line")" = 1 ] &&
   [ "$(kv len "$line")" -le "$(kv sent_len "$line")" ] &&
   [ "$(kv prio "$line")" = 100 ] && [ "$(kv weight "$line")" = 50 ] &&
   [ "$(kv mld "$line")" = 0 ] && [ "$(kv lifetime "$line")" = 55 ] && [ "$(kv flags "$line")" = 0 ]; then
    ok "valid plain probe: reply echoes the session id, prio 100 weight 50 margin 0 lifetime 55 flags 0 ($line)"
else
    not_ok "valid plain probe answered with the defaults ($line)"
fi
# LABEL:probe_tool args:the server's log line for the drop (an extended
# regex; FROM stands for that probe's source address)
oob_drop="$DROP_PREFIX FROM: "
for spec in "stale:--ts-offset -120:${oob_drop}timestamp too far from our clock" \
            "future:--ts-offset 120:${oob_drop}timestamp too far from our clock" \
            "truncated-TLV:--variant trunc:${oob_drop}truncated TLV data" \
            "short-TLV:--variant short:${oob_drop}TLV shorter than its minimum length" \
            "wrong-message-type-0x0101:--variant wrongtype:${oob_drop}not a server probe" \
            "key-id-1:--variant keyid:TLS State Error: Unknown key ID \(1\) received from FROM -- 0 was expected" \
            "unknown-mandatory-TLV:--variant unknown-crit:${oob_drop}unknown mandatory TLV" \
            "no-probe-TLV:--variant notlv:${oob_drop}required TLV missing"; do
    label=${spec%%:*} rest=${spec#*:}
    args=${rest%%:*} want=${rest#*:}
    # shellcheck disable=SC2086
    a0=$(grep -c "$ANSWERED_RE" "$TB_DIR/sb.log")
    bad=$("${PT[@]}" one --target "$TB_B" --timeout 0.5 $args)
    good=$("${PT[@]}" one --target "$TB_B" --timeout 2)
    from="\\[AF_INET\\]127\\.0\\.0\\.1:$(kv lport "$bad")"
    # the valid probe was answered, so the server has handled the bad one
    logged=$(grep -cE -- "${want//FROM/$from}( |\$)" "$TB_DIR/sb.log")
    if [ "$(tb_series)" = master ]; then
        # no address in master's line: the pair moved it by the good one
        answered=$(( $(grep -c "$ANSWERED_RE" "$TB_DIR/sb.log") - a0 - 1 ))
    else
        answered=$(grep -cE -- "server probe from $from answered" "$TB_DIR/sb.log")
    fi
    if [ "$(kv reply "$bad")" = 0 ] && [ "$logged" = 1 ] && [ "$answered" = 0 ] &&
       [ "$(kv reply "$good")" = 1 ] && [ "$(kv sid_ok "$good")" = 1 ]; then
        ok "$label: no reply within 500 ms ($(kv sent_len "$bad") B), server logged '${want//FROM/<src>}'; a valid probe right after is answered"
    else
        not_ok "$label: expected no reply, the log line '${want//FROM/$from}' once (got $logged, $answered 'answered'), then a reply (bad: $bad; valid: $good)"
        grep -F "127.0.0.1:$(kv lport "$bad")" "$TB_DIR/sb.log" | tail -n 3 | sed 's/^/#   sb: /'
    fi
done
# unknown TLV with the optional bit: skipped, the probe is answered
line=$("${PT[@]}" one --target "$TB_B" --timeout 2 --variant unknown-opt)
check "unknown optional TLV (0x8777) is skipped and the probe answered ($line)" \
    test "$(kv reply "$line")" = 1 -a "$(kv sid_ok "$line")" = 1
grep -o "$DROP_PREFIX [^ ]*: .*" "$TB_DIR/sb.log" |
    sed "s/^$DROP_PREFIX [^ ]*: //" | sort | uniq -c |
    awk '{ c = $1; $1 = ""; print "#   server: not answering (" c "x):" $0 }'
# unwrapped probe against a tls-auth server (sa2 from (a)): dropped by the
# HMAC check, before the OOB code sees it
line=$("${PT[@]}" one --target "127.0.0.1:$(tb_port 2)" --timeout 0.5)
from="\\[AF_INET\\]127\\.0\\.0\\.1:$(kv lport "$line")"
logged=$(grep -cE "TLS Error: (incoming packet authentication failed|cannot locate HMAC in incoming packet) from $from\$" "$TB_DIR/sa2.log")
check "tls-auth server: an unwrapped probe gets no reply and fails the HMAC check in the server log ($logged line(s); $line)" \
    test "$(kv reply "$line")" = 0 -a "$logged" = 1
# positive control: sa2 is up and answers a wrapped probe right after
tb_client cb2 --wrap tls-auth -- --remote 127.0.0.1 "$(tb_port 2)" udp4 --server-probe
for ((k = 0; k < 300; k++)); do
    grep -q "addresses answered in" "$TB_DIR/cb2.log" 2>/dev/null && break
    sleep 0.02
done
sline=$(grep -m1 -F "addresses answered in" "$TB_DIR/cb2.log" 2>/dev/null)
check "tls-auth server: a tls-auth client's probe right after is answered (${sline#*server-probe: })" \
    like_glob "$sline" "* 1 of 1 addresses answered in *"
tb_stop cb2
# for the record: the smallest probe the spec allows (TLV of 12 bytes, no
# padding) against the reply size; not asserted (SPEC 1 accepts it)
line=$("${PT[@]}" one --target "$TB_B" --timeout 2 --pad 0)
if [ "$(kv reply "$line")" = 1 ]; then
    amp0=$(awk -v r="$(kv len "$line")" -v p="$(kv sent_len "$line")" 'BEGIN { printf "%.2f", r / p }')
    echo "# note: an unpadded 27-byte plain probe is answered with $(kv len "$line") bytes (amplification $amp0)"
else
    amp0="not answered"
    echo "# note: an unpadded 27-byte plain probe is not answered"
fi
{
    echo "# reply length / probe length per wrap mode, probes from the patched client (--server-probe)"
    echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $TB_BIN"
    for wrap in none tls-auth tls-crypt tls-crypt-v2; do
        echo "$wrap ${AMP[$wrap]}"
    done
    echo "# crafted unpadded plain probe (27 bytes, probe_tool.py --pad 0): $amp0"
} >"$AMP_FILE"

# ------------------------------------------------------------------ (c)
tb_log "(c) memory: 100000 probes"
P_C=$(tb_port 20)
# --verb 3: no log line per probe (the log would grow by 10 MB)
tb_server sc "$P_C" -- --connect-freq-initial 1000000 1 --server-probe-budget 1000000 1 \
    --server-probe-reply 7 33 5 --verb 3
line=$("${PT[@]}" one --target "127.0.0.1:$P_C" --timeout 2)
check "--server-probe-reply 7 33 5 is advertised as margin 7, weight 33, prio 5 ($line)" \
    test "$(kv mld "$line")" = 7 -a "$(kv weight "$line")" = 33 -a "$(kv prio "$line")" = 5
line=$("${PT[@]}" flood --target "127.0.0.1:$P_C" --pid "$(tb_pid sc)" --count 100000 --warmup 1000)
echo "# memory: $line"
before=$(kv rss_kb_before "$line") after=$(kv rss_kb_after "$line")
growth=$(kv rss_growth_kb "$line") replies=$(kv replies "$line")
{
    echo "# server VmRSS around 100000 plain probes (after 1000 warm-up), --server-probe-budget 1000000 1"
    echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $TB_BIN"
    echo "$line"
} >"$MEM_FILE"
if [ -n "$growth" ] && tb__alive sc && [ "$growth" -lt 1024 ] && [ "${replies:-0}" -gt 0 ]; then
    ok "memory: VmRSS $before kB -> $after kB (+$growth kB < 1024 kB) over 100000 probes, $replies replies"
else
    not_ok "memory: VmRSS growth < 1024 kB over 100000 probes ($line; server alive: $(tb__alive sc && echo yes || echo no))"
fi

# ------------------------------------------------------------------ (d)
tb_log "(d) budgets: a probe burst, then a new handshake, vs a connected client"
P_D=$(tb_port 30) P_RD=$(tb_port 130)
# probe budget 30 per 120 s, handshake budget 40 per 120 s: the whole
# section runs within one period, so the counts are exact. Probes have a
# budget of their own (--server-probe-budget): a burst spends it, not the
# handshake's (--connect-freq-initial), which the series before issue 25
# shared with the probes (then a reset right after a burst got no answer)
PB_MAX=30 CF_MAX=40 PER=120
tb_server sd "$P_D" -- --ping 1 --connect-freq-initial "$CF_MAX" "$PER" \
    --server-probe-budget "$PB_MAX" "$PER"
tb_relay rd "127.0.0.1:$P_RD" "127.0.0.1:$P_D" --delay 2
tb_client cd --bin "$TB_BASELINE" -- --remote 127.0.0.1 "$P_RD" udp4 --ping 1
if tb_wait_connected cd 30 >/dev/null && tb_wait_ops rd 10 up 9 2 down 9 2; then
    mark=$(wc -l <"$TB_DIR/rd.relay.log")
    line=$("${PT[@]}" burst --target "127.0.0.1:$P_D" --count 400 --wait 2)
    echo "# burst: $line"
    sent=$(kv sent "$line") replies=$(kv replies "$line") valid=$(kv valid "$line") send_s=$(kv send_s "$line")
    check "burst of $sent probes sent in ${send_s} s (< 1 s)" \
        awk -v t="$send_s" 'BEGIN { exit !(t < 1.0) }'
    check "probe budget: exactly $PB_MAX replies to $sent probes (--server-probe-budget $PB_MAX $PER): got $replies ($valid matching)" \
        test "$replies" = "$PB_MAX" -a "$valid" = "$PB_MAX"
    # right after: a new handshake from a fresh address is answered, the
    # burst did not spend the handshake budget
    rline=$("${PT[@]}" reset --target "127.0.0.1:$P_D" --timeout 2)
    check "a HARD_RESET right after the burst is answered with opcode 8 ($rline)" \
        test "$(kv reply "$rline")" = 1 -a "$(kv op "$rline")" = 8
    note=$(grep -c "Note: --server-probe-budget $PB_MAX $PER spent" "$TB_DIR/sd.log")
    check "the server notes the spent probe budget once ($note line(s))" test "$note" = 1
    cnote=$(grep -c "Note: --connect-freq-initial" "$TB_DIR/sd.log")
    check "and not the handshake budget ($cnote line(s))" test "$cnote" = 0
    # the connected client: P_DATA_V2 both ways after the burst began
    after_ok=0
    for ((k = 0; k < 100; k++)); do
        res=$(awk -v m="$mark" 'NR > m && $4 == 9 { c[$2]++ } END { printf "%d %d", c["up"], c["down"] }' \
              "$TB_DIR/rd.relay.log")
        read -r dup ddown <<<"$res"
        [ "$dup" -ge 2 ] && [ "$ddown" -ge 2 ] && { after_ok=1; break; }
        sleep 0.05
    done
    check "connected client: P_DATA_V2 after the burst began: $dup up, $ddown down (>= 2 each)" \
        test $after_ok = 1
    sleep 1
    restarts=$(grep -c -E "SIGUSR1\[|Restart pause|Inactivity timeout|process restarting" "$TB_DIR/cd.log")
    check "connected client: no restart ($restarts restart lines), still running" \
        test "$restarts" -eq 0 -a "$(tb__alive cd && echo 1)" = 1
else
    not_ok "limiter: the baseline client did not connect or exchange data before the burst"
    tb_tail cd sd rd
fi
tb_stop cd

# ------------------------------------------------------------------ (e)
tb_log "(e) probes from the address of an existing instance"
P_E=$(tb_port 40) P_RE=$(tb_port 140) P_LE=$(tb_port 240)
tb_server se "$P_E" -- --ping 1
tb_relay re "127.0.0.1:$P_RE" "127.0.0.1:$P_E" --delay 2
line=$("${PT[@]}" one --target "127.0.0.1:$P_E" --timeout 2)
check "a probe from a fresh port is answered ($line)" test "$(kv reply "$line")" = 1 -a "$(kv sid_ok "$line")" = 1
# tb_client always adds --nobind, which excludes --lport: start it here
date +%s%N >"$TB_DIR/ce.t0"
tb__spawn ce "$TB_BIN" --client --dev null --lport "$P_LE" \
    --ifconfig-noexec --route-noexec --remote-cert-tls server \
    --ca "$TB_PKI/ca.crt" --cert "$TB_PKI/client.crt" --key "$TB_PKI/client.key" \
    --verb "$TB_VERB" --log "$TB_DIR/ce.log" --remote 127.0.0.1 "$P_RE" udp4 --ping 1
if tb_wait_connected ce 30 >/dev/null && tb_wait_ops re 10 up 9 2 down 9 2; then
    # the server knows the client as the relay's upstream port for it;
    # the relay holds that port, so the probes are sent through a raw socket
    up_port=$(awk -v c="127.0.0.1:$P_LE" '$2 == "new" && $3 == c { p = $4 } END { print p }' \
              "$TB_DIR/re.relay.log")
    mark=$(wc -l <"$TB_DIR/re.relay.log")
    smark=$(wc -l <"$TB_DIR/se.log")
    line=$("${PT[@]}" spoof --target "127.0.0.1:$P_E" --src-port "$up_port" --count 3 --timeout 1)
    echo "# probes from the instance's address 127.0.0.1:$up_port: $line"
    check "probes from an existing instance's address are answered statelessly ($line)" \
        test "$(kv replies "$line")" = 3 -a "$(kv valid "$line")" = 3
    # wait (up to 6 s) for two pings each way after the probes
    for ((k = 0; k < 120; k++)); do
        res=$(awk -v m="$mark" -v c="127.0.0.1:$P_LE" 'NR > m && $3 == c { c2[$2 " " $4]++ }
              END { printf "%d %d %d", c2["down 12"], c2["up 9"], c2["down 9"] }' "$TB_DIR/re.relay.log")
        read -r d12 dup ddown <<<"$res"
        [ "$dup" -ge 2 ] && [ "$ddown" -ge 2 ] && break
        sleep 0.05
    done
    tlserr=$(tail -n +"$((smark + 1))" "$TB_DIR/se.log" | grep -c -i -E "unknown opcode|TLS Error|Authenticate/Decrypt packet error")
    check "the probes did not reach the instance (server: $tlserr TLS error lines)" test "$tlserr" -eq 0
    cerr=$(grep -c -E "TLS Error|SIGUSR1\[|Restart pause|process restarting" "$TB_DIR/ce.log")
    check "the client's session survives the $d12 stray replies: P_DATA_V2 $dup up, $ddown down after; $cerr error/restart lines" \
        test "$dup" -ge 2 -a "$ddown" -ge 2 -a "$cerr" -eq 0
else
    not_ok "existing instance: the --lport client did not connect or exchange data"
    tb_tail ce se re
fi
tb_stop ce

# ------------------------------------------------------------------ (f)
tb_log "(f) a baseline client against a patched server"
P_RF=$(tb_port 150)
tb_relay rf "127.0.0.1:$P_RF" "127.0.0.1:$P_B" --delay 2
tb_client cf --bin "$TB_BASELINE" -- --remote 127.0.0.1 "$P_RF" udp4 --ping 1
if ms=$(tb_wait_connected cf 30) && tb_wait_ops rf 10 up 9 1 down 9 1; then
    oob=$(( $(tb_count_op rf up 12) + $(tb_count_op rf up 13) + $(tb_count_op rf down 12) ))
    check "baseline client -> patched server (plain): connected in ${ms} ms to $(tb_connected_server cf), data both ways, $oob OOB packets" \
        test "$(tb_connected_server cf)" = "127.0.0.1:$P_RF" -a "$oob" -eq 0
else
    not_ok "baseline client -> patched server (plain): connects and exchanges data"
    tb_tail cf sb rf
fi
tb_stop cf

# ------------------------------------------------------------------ (g)
tb_log "(g) no log line per unauthenticated probe at --verb 4"
P_G=$(tb_port 60)
tb_server sg "$P_G" -- --verb 4
sleep 0.2
before=$(wc -l <"$TB_DIR/sg.log")
line=$("${PT[@]}" burst --target "127.0.0.1:$P_G" --count 2000 --ts-offset -120 --wait 1)
good=$("${PT[@]}" one --target "127.0.0.1:$P_G" --timeout 2)
after=$(wc -l <"$TB_DIR/sg.log")
check "2000 stale probes ($(kv sent "$line") sent, $(kv replies "$line") answered) added $((after - before)) log line(s) at --verb 4; a valid one is answered" \
    test "$((after - before))" -eq 0 -a "$(kv replies "$line")" = 0 -a "$(kv reply "$good")" = 1

# ------------------------------------------------------------------ (h)
tb_log "(h) a server shutting down neither answers nor logs probes"
P_H=$(tb_port 61)
tb_server sh "$P_H" -- --verb 4 --explicit-exit-notify 1
sleep 0.2
good=$("${PT[@]}" one --target "127.0.0.1:$P_H" --timeout 2)
pid_h=$(tb_pid sh)
kill -TERM "$pid_h"
# the server takes the signal at once, then keeps running for 2 s
sleep 0.2
line=$("${PT[@]}" burst --target "127.0.0.1:$P_H" --count 50 --wait 0.5)
alive=no
kill -0 "$pid_h" 2>/dev/null && alive=yes
ignored=$(grep -c "Connection attempt from .* ignored while server is shutting down" "$TB_DIR/sh.log")
check "while shutting down (server still running after the burst: $alive): 50 probes ($(kv sent "$line") sent) got $(kv replies "$line") replies and $ignored 'Connection attempt ... ignored' lines (before: $(kv reply "$good") of 1 answered)" \
    test "$(kv reply "$good")" = 1 -a "$alive" = yes -a "$(kv replies "$line")" = 0 -a "$ignored" -eq 0 -a "$(kv sent "$line")" = 50

echo "1..$n"
echo "# $n checks, $fails failed, $(( $(date +%s) - T0 )) s"
[ $fails -eq 0 ] || exit 1
exit 0
