#!/bin/bash
# Cross-series interoperability: the master series (build/bin/openvpn-master)
# and the 2.6 series (build/bin/openvpn) speak the same wire. In every wrap
# mode (none, tls-auth, tls-crypt, tls-crypt-v2):
#   (a) probing master-series client -> 2.6-series server
#   (b) probing 2.6-series client    -> master-series server
# each with a dead remote (a blackhole relay) configured first: the probe
# ranks the live server first (place=1), the client connects to it with
# the one-RTT shortcut (a probe up, a PROBE_REPLY down, no hard reset on
# the wire) and data flows both ways.
# Against unpatched master built the same way (t_interop.sh with
# TB_BIN=openvpn-master TB_BASELINE=openvpn-master-baseline, run by
# tests/check.sh) the master series is checked like the 2.6 one.
# Exit 0 pass, 1 fail, 77 skip (in CI a missing master build fails).
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by lib.sh (tb_port)
TB_PORT_BASE=${TB_PORT_BASE_CROSS:-35000}
# shellcheck source=../../testbed/lib.sh
. "$here/../../testbed/lib.sh"

MASTER_BIN=${TB_MASTER_BIN:-$TB_TOP/build/bin/openvpn-master}
tb_need_bin "$MASTER_BIN"
tb_has_opt "$MASTER_BIN" server-probe ||
    tb_die "${MASTER_BIN#"$TB_TOP"/} has no --server-probe in its --help"
tb_setup cross server-probe -- "$@"

k=0
# scenario LABEL SERVER_BIN CLIENT_BIN WRAP
scenario()
{
    local label=$1 sbin=$2 cbin=$3 wrap=$4
    k=$((k + 1))
    local s=s$k r=r$k d=d$k c=c$k why="" ms=""
    local sport rport dport
    sport=$(tb_port $((k * 3))) rport=$(tb_port $((k * 3 + 1))) dport=$(tb_port $((k * 3 + 2)))
    local reset=7 probe_op=12
    [ "$wrap" = tls-crypt-v2 ] && { reset=10; probe_op=13; }
    tb_server "$s" "$sport" --bin "$sbin" --wrap "$wrap" -- --ping 1 --server-probe-reply 0 50 10
    tb_relay "$r" "127.0.0.1:$rport" "127.0.0.1:$sport" --delay 5
    tb_relay "$d" "127.0.0.1:$dport" "127.0.0.1:$sport" --blackhole
    tb_client "$c" --bin "$cbin" --wrap "$wrap" -- --remote 127.0.0.1 "$dport" udp4 \
        --remote 127.0.0.1 "$rport" udp4 --ping 1 --server-probe
    if ! ms=$(tb_wait_connected "$c" 30 2>"$TB_DIR/$c.wait"); then
        why="no 'Initialization Sequence Completed' within 30 s"
    elif [ "$(tb_connected_server "$c")" != "127.0.0.1:$rport" ]; then
        why="connected to $(tb_connected_server "$c"), expected 127.0.0.1:$rport"
    elif ! grep -qE "server-probe: \[AF_INET\]127\.0\.0\.1:$rport rtt=[0-9.]+ms prio=10 weight=50 place=1" "$TB_DIR/$c.log"; then
        why="the live server is not ranked first (place=1, prio 10)"
    elif ! grep -qE "server-probe: \[AF_INET\]127\.0\.0\.1:$dport no reply place=2" "$TB_DIR/$c.log"; then
        why="the dead remote is not 'no reply place=2'"
    elif ! tb_wait_ops "$r" 10 up 9 2 down 9 2; then
        why="no P_DATA_V2 both ways within 10 s"
    elif [ "$(tb_count_op "$r" up "$probe_op")" -lt 1 ] || [ "$(tb_count_op "$r" down 12)" -lt 1 ]; then
        why="expected a probe (opcode $probe_op) up and a PROBE_REPLY (12) down"
    elif [ "$(tb_count_op "$r" up "$reset")" -ne 0 ] || [ "$(tb_count_op "$r" down 8)" -ne 0 ]; then
        why="a hard reset crossed the wire: no one-RTT shortcut"
    fi
    if [ -z "$why" ]; then
        ok "$label, wrap=$wrap: ranked first, shortcut, connected in $ms ms; up $(tb_op_summary "$r" up); down $(tb_op_summary "$r" down)"
    else
        not_ok "$label, wrap=$wrap: $why"
        echo "#   relay opcodes: $(tb_opcodes "$r" | cut -c1-300)"
        tb_tail "$c" "$s"
    fi
    tb_stop "$c"; tb_stop "$r"; tb_stop "$d"; tb_stop "$s"
}

t0=$(date +%s)
for wrap in none tls-auth tls-crypt tls-crypt-v2; do
    scenario "master-series client -> 2.6-series server" "$TB_BIN" "$MASTER_BIN" "$wrap"
    scenario "2.6-series client -> master-series server" "$MASTER_BIN" "$TB_BIN" "$wrap"
done
echo "1..$n"
echo "# $n scenarios, $fails failed, $(( $(date +%s) - t0 )) s"
[ "$fails" -eq 0 ]
