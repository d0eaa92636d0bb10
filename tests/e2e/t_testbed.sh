#!/bin/bash
# Checks the test bed (testbed/lib.sh + the relay) against reality, with
# the baseline and patched binaries as they are today:
#   - the PKI it makes has the right EKUs;
#   - a relay delay shows up in the measured connect time (>= 3 RTTs more);
#   - the relay log shows the handshake opcodes (7 up, 8 down) and data (9);
#   - a blackholed first remote with --connect-retry 1 --server-poll-timeout 2
#     makes the client end on the second remote (tb_connected_server);
#   - IPv6 (::1) servers, relays and clients work;
#   - tb_wait_connected times out when it should;
#   - the cleanup trap kills everything and removes the tun devices, on
#     failure exit, on SIGTERM, and (parent-death signal) on SIGKILL.
# Exit 0 pass, 1 fail, 77 skip. Takes about 30 s.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../../testbed/lib.sh
. "$here/../../testbed/lib.sh"

tb_setup testbed -- "$@"


P_S1=$(tb_port 1) P_S6=$(tb_port 2)
P_R0=$(tb_port 101) P_R50=$(tb_port 102) P_RBH=$(tb_port 103) P_R6=$(tb_port 104)
P_RDATA=$(tb_port 105)

# --- 1. PKI
check "PKI: server cert verifies for serverAuth" \
    tb_quiet openssl verify -purpose sslserver -CAfile "$TB_PKI/ca.crt" "$TB_PKI/server.crt"
check "PKI: client cert verifies for clientAuth" \
    tb_quiet openssl verify -purpose sslclient -CAfile "$TB_PKI/ca.crt" "$TB_PKI/client.crt"
if openssl verify -purpose sslserver -CAfile "$TB_PKI/ca.crt" "$TB_PKI/client.crt" >/dev/null 2>&1; then
    not_ok "PKI: client cert must not pass as a server cert"
else
    ok "PKI: client cert does not pass as a server cert"
fi
for k in ta.key tc.key v2s.key v2c.key; do
    [ -s "$TB_PKI/$k" ] || not_ok "PKI: $k missing"
done

# --- 2. delay relay vs connect time
tb_server s1 "$P_S1" -- --ping 1
tb_relay r0 "127.0.0.1:$P_R0" "127.0.0.1:$P_S1"
tb_relay r50 "127.0.0.1:$P_R50" "127.0.0.1:$P_S1" --delay 50
t0s=() t50s=()
for i in 1 2 3; do
    tb_client c0 -- --remote 127.0.0.1 "$P_R0" udp4
    if ms=$(tb_wait_connected c0 30); then t0s+=("$ms"); fi
    tb_stop c0
    tb_client c50 -- --remote 127.0.0.1 "$P_R50" udp4
    if ms=$(tb_wait_connected c50 30); then t50s+=("$ms"); fi
    tb_stop c50
done
min() { printf '%s\n' "$@" | sort -n | head -n 1; }
if [ ${#t0s[@]} -eq 3 ] && [ ${#t50s[@]} -eq 3 ]; then
    m0=$(min "${t0s[@]}") m50=$(min "${t50s[@]}")
    d=$((m50 - m0))
    tb_log "connect ms direct-relay: ${t0s[*]}; 100 ms RTT relay: ${t50s[*]}; difference ${d} ms = $((d / 100)).$(( (d % 100) / 10 )) RTTs"
    slow=$(printf '%s\n' "${t50s[@]}" | awk '$1 < 300' | wc -l)
    check "every connect through the 100 ms RTT relay takes >= 3 RTTs (300 ms): ${t50s[*]}" test "$slow" -eq 0
    if [ $d -ge 300 ] && [ "$m50" -lt 15000 ]; then
        ok "relay --delay 50 adds >= 3 RTTs (300 ms) to the connect time (${d} ms)"
    else
        not_ok "relay --delay 50 adds >= 3 RTTs (300 ms) to the connect time (${d} ms)"
    fi
else
    not_ok "clients through the 0 ms and 50 ms relays connect (got ${t0s[*]:-} / ${t50s[*]:-})"
fi
first_up=$(tb_opcodes r50 up | awk '{print $1}')
first_down=$(tb_opcodes r50 down | awk '{print $1}')
check "relay log: first datagram up is opcode 7, down opcode 8 (got $first_up/$first_down)" \
    test "$first_up" = 7 -a "$first_down" = 8
check "relay log: no OOB opcodes (12/13) without --server-probe" \
    test "$(($(tb_count_op r50 up 12) + $(tb_count_op r50 up 13) + $(tb_count_op r50 down 12)))" -eq 0

# --- 3. opcodes for a none-wrap baseline client, with data packets
tb_relay rdata "127.0.0.1:$P_RDATA" "127.0.0.1:$P_S1" --delay 2
tb_client cdata --bin "$TB_BASELINE" -- --remote 127.0.0.1 "$P_RDATA" udp4 --ping 1
if tb_wait_connected cdata 30 >/dev/null &&
   tb_wait_ops rdata 10 up 7 1 down 8 1 up 9 2 down 9 2; then
    ok "baseline client via relay: opcode 7 up, 8 down, P_DATA_V2 both ways ($(tb_op_summary rdata up) / $(tb_op_summary rdata down))"
else
    not_ok "baseline client via relay: opcode 7 up, 8 down, P_DATA_V2 both ways ($(tb_op_summary rdata up) / $(tb_op_summary rdata down))"
    tb_tail cdata rdata
fi
tb_stop cdata

# --- 4. blackholed first remote -> the client ends on the second one
tb_relay rbh "127.0.0.1:$P_RBH" "127.0.0.1:$P_S1" --blackhole
tb_client cbh -- --remote 127.0.0.1 "$P_RBH" udp4 --remote 127.0.0.1 "$P_R0" udp4 \
    --connect-retry 1 --server-poll-timeout 2
if ms=$(tb_wait_connected cbh 40); then
    srv=$(tb_connected_server cbh)
    check "blackholed first remote: client ends on the second ($srv, ${ms} ms)" \
        test "$srv" = "127.0.0.1:$P_R0"
    # openvpn's timers run on a 1 s clock: a 2 s timeout fires after 1..2 s
    check "blackholed first remote: it took the poll timeout (>= 1000 ms: ${ms})" test "$ms" -ge 1000
    bh_up=$(tb_count_op rbh up 7) bh_fwd=$(tb_count_op rbh up 7 fwd)
    check "blackhole relay swallowed $bh_up reset(s), forwarded $bh_fwd, answered $(tb_opcodes rbh down | wc -w)" \
        test "$bh_up" -ge 1 -a "$bh_fwd" -eq 0 -a -z "$(tb_opcodes rbh down)"
else
    not_ok "blackholed first remote: client connects via the second remote"
fi
tb_stop cbh

# --- 5. tb_wait_connected times out on a dead remote
tb_client cdead -- --remote 127.0.0.1 "$P_RBH" udp4
t=$(date +%s%N)
if tb_wait_connected cdead 2 >/dev/null 2>&1; then
    not_ok "tb_wait_connected fails for a dead remote"
else
    el=$(( ($(date +%s%N) - t) / 1000000 ))
    check "tb_wait_connected fails for a dead remote after its timeout (${el} ms)" \
        test $el -ge 1500 -a $el -lt 10000
fi
tb_stop cdead

# --- 6. IPv6
tb_server s6 "$P_S6" --ipv6 -- --ping 1
tb_relay r6 "[::1]:$P_R6" "[::1]:$P_S6" --delay 5
tb_client c6 -- --remote ::1 "$P_R6" udp6 --ping 1
if ms=$(tb_wait_connected c6 30); then
    srv=$(tb_connected_server c6)
    check "IPv6: client connects to [::1]:$P_R6 via the relay ($srv, ${ms} ms)" \
        test "$srv" = "[::1]:$P_R6"
    check "IPv6: data both ways" tb_wait_ops r6 10 up 9 1 down 9 1
else
    not_ok "IPv6: client connects via ::1"
fi
tb_stop c6

# --- 7. cleanup trap: exit with failure, SIGTERM, SIGKILL
child_script='
. "$1"
tb_init "$2"
tb_pki
tb_server s "$3"
tb_relay r "127.0.0.1:$4" "127.0.0.1:$3"
tb_client c -- --remote 127.0.0.1 "$4" udp4
tb_wait_connected c 20 >/dev/null
echo "$TB_TUNS" > "$TB_DIR/tun"
touch "$TB_DIR/ready"
case $5 in
    exit) exit 3 ;;
    *) while :; do sleep 0.1; done ;;
esac
'
k=0
for how in exit TERM KILL; do
    k=$((k + 1))
    cdir="$TB_ROOT/testbed-child-$how"
    rm -rf "$cdir"
    bash -c "$child_script" child "$TB_TOP/testbed/lib.sh" "testbed-child-$how" \
        "$(tb_port $((10 + k)))" "$(tb_port $((110 + k)))" "$how" \
        >"$TB_DIR/child-$how.out" 2>&1 &
    cpid=$!
    for ((i = 0; i < 3000; i++)); do
        [ -e "$cdir/ready" ] && break
        kill -0 $cpid 2>/dev/null || break
        sleep 0.01
    done
    if [ ! -e "$cdir/ready" ]; then
        not_ok "cleanup/$how: child test bed did not come up"
        cat "$TB_DIR/child-$how.out"
        kill -KILL $cpid 2>/dev/null
        wait $cpid 2>/dev/null
        continue
    fi
    pids=$(cat "$cdir"/s.pid "$cdir"/r.pid "$cdir"/c.pid)
    tun=$(cat "$cdir/tun")
    [ "$how" != exit ] && kill -"$how" $cpid
    wait $cpid 2>/dev/null
    # processes and tun device must be gone within 5 s
    gone=0
    for ((i = 0; i < 500; i++)); do
        left=""
        for p in $pids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
        if [ -z "$left" ] && ! ip link show dev "$tun" >/dev/null 2>&1; then
            gone=1
            break
        fi
        sleep 0.01
    done
    if [ $gone = 1 ]; then
        ok "cleanup/$how: server, relay and client stopped, tun $tun removed"
    else
        not_ok "cleanup/$how: left behind: pids$left tun $(ip -br link show dev "$tun" 2>/dev/null)"
        for p in $left; do kill -KILL "$p" 2>/dev/null; done
    fi
done

echo "# $n checks, $fails failed"
[ $fails -eq 0 ] || exit 1
exit 0
