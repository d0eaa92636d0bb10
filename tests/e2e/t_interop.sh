#!/bin/bash
# Interoperability of the patched openvpn with unpatched 2.6.14, in every
# control-channel wrap mode (none, tls-auth, tls-crypt, tls-crypt-v2):
#   (a) baseline client -> patched server
#   (b) patched client  -> baseline server
# and (SPEC section 5; the series is always in build/bin/openvpn, so a
# binary without --server-probe fails these four instead of skipping them):
#   (c) probing patched client -> baseline server: no reply, still connects
#   (d) probing patched client -> patched server: probe answered, connects
# Every scenario goes through the UDP relay at 5 ms one-way delay and must
# reach "Initialization Sequence Completed" and carry P_DATA_V2 (opcode 9)
# both ways (--ping 1 on both ends), with the handshake opcodes expected
# for the wrap mode. Exit 0 pass, 1 fail, 77 skip. Takes about 40 s.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../../testbed/lib.sh
. "$here/../../testbed/lib.sh"

tb_setup interop -- "$@"

CONNECT_TIMEOUT=${INTEROP_CONNECT_TIMEOUT:-30}   # s, per scenario
DATA_TIMEOUT=10                                   # s, for opcode 9 both ways

probe=0
tb_has_opt "$TB_BIN" server-probe && probe=1

k=0

# scenario LABEL SERVER_BIN CLIENT_BIN WRAP PROBING(0|1)
scenario()
{
    local label=$1 sbin=$2 cbin=$3 wrap=$4 probing=$5
    k=$((k + 1))
    n=$((n + 1))
    local s=s$k r=r$k c=c$k
    local sport rport
    sport=$(tb_port $((k * 2))) rport=$(tb_port $((k * 2 + 1)))
    local what="$label, wrap=$wrap"
    local reset=7 probe_op=12 why="" ms="" cargs=(--remote 127.0.0.1 "$rport" udp4 --ping 1)
    [ "$wrap" = tls-crypt-v2 ] && { reset=10; probe_op=13; }
    # the smallest reset each wrap can produce: 14 bytes plain, + hmac (>= 16)
    # + packet id (8) for tls-auth, + tag (32) + packet id for tls-crypt,
    # + a wrapped client key for tls-crypt-v2
    local minlen
    case $wrap in
        none) minlen=14 ;; tls-auth) minlen=38 ;; tls-crypt) minlen=54 ;; *) minlen=100 ;;
    esac
    [ "$probing" = 1 ] && cargs+=(--server-probe)
    # a probing client talking to a patched server may take the one-RTT
    # shortcut (SPEC section 4) and send no reset at all
    local shortcut_ok=0
    [ "$probing" = 1 ] && [ "$sbin" = "$TB_BIN" ] && shortcut_ok=1

    tb_server "$s" "$sport" --bin "$sbin" --wrap "$wrap" -- --ping 1
    tb_relay "$r" "127.0.0.1:$rport" "127.0.0.1:$sport" --delay 5
    tb_client "$c" --bin "$cbin" --wrap "$wrap" -- "${cargs[@]}"

    if ! ms=$(tb_wait_connected "$c" "$CONNECT_TIMEOUT" 2>"$TB_DIR/$c.wait"); then
        why="no 'Initialization Sequence Completed' within ${CONNECT_TIMEOUT}s"
    elif [ "$(tb_connected_server "$c")" != "127.0.0.1:$rport" ]; then
        why="connected to $(tb_connected_server "$c"), expected 127.0.0.1:$rport"
    elif ! grep -q "Peer Connection Initiated" "$TB_DIR/$s.log"; then
        why="the server did not log the peer connection"
    elif ! tb_wait_ops "$r" "$DATA_TIMEOUT" up 9 2 down 9 2; then
        why="no P_DATA_V2 both ways within ${DATA_TIMEOUT}s"
    elif [ "$shortcut_ok" = 0 ] && { [ "$(tb_count_op "$r" up "$reset" fwd)" -lt 1 ] ||
         [ "$(tb_count_op "$r" down 8 fwd)" -lt 1 ]; }; then
        why="expected reset opcode $reset up and 8 down"
    elif [ "$shortcut_ok" = 0 ] && ! awk -v op="$reset" -v min="$minlen" -v plain="$([ "$wrap" = none ] && echo 1)" '
              $2 == "up" && $4 == op { len = $5; exit }
              END { exit !(len >= min && (plain != 1 || len == 14)) }' "$TB_DIR/$r.relay.log"; then
        why="the reset is not wrapped as $wrap expects (length < $minlen)"
    elif [ "$probing" = 0 ] &&
         [ $(( $(tb_count_op "$r" up 12) + $(tb_count_op "$r" up 13) + $(tb_count_op "$r" down 12) )) -ne 0 ]; then
        why="OOB opcodes 12/13 on the wire without --server-probe"
    elif [ "$probing" = 1 ] && [ "$(tb_count_op "$r" up "$probe_op")" -lt 1 ]; then
        why="--server-probe sent no opcode $probe_op probe"
    elif [ "$probing" = 1 ] && [ "$sbin" = "$TB_BASELINE" ] &&
         [ "$(tb_count_op "$r" down 12)" -ne 0 ]; then
        why="the baseline server answered a probe?"
    elif [ "$probing" = 1 ] && [ "$sbin" = "$TB_BIN" ] &&
         [ "$(tb_count_op "$r" down 12)" -lt 1 ]; then
        why="the patched server did not answer the probe"
    fi
    if [ -z "$why" ]; then
        echo "ok $n - $what: connected in ${ms} ms; reset $(awk -v op="$reset" '$2 == "up" && $4 == op { l = $5 " bytes"; exit } END { print (l == "" ? "none" : l) }' "$TB_DIR/$r.relay.log"); up $(tb_op_summary "$r" up); down $(tb_op_summary "$r" down)"
    else
        fails=$((fails + 1))
        echo "not ok $n - $what: $why"
        echo "#   relay opcodes: $(tb_opcodes "$r" | cut -c1-300)"
        cat "$TB_DIR/$c.wait" 2>/dev/null
        tb_tail "$c" "$s"
    fi
    tb_stop "$c"
    tb_stop "$r"
    tb_stop "$s"
}


t0=$(date +%s)
for wrap in none tls-auth tls-crypt tls-crypt-v2; do
    scenario "baseline client -> patched server" "$TB_BIN" "$TB_BASELINE" "$wrap" 0
    scenario "patched client -> baseline server" "$TB_BASELINE" "$TB_BIN" "$wrap" 0
done
for wrap in none tls-auth tls-crypt tls-crypt-v2; do
    if [ $probe = 1 ]; then
        scenario "probing patched client -> baseline server" "$TB_BASELINE" "$TB_BIN" "$wrap" 1
        scenario "probing patched client -> patched server" "$TB_BIN" "$TB_BIN" "$wrap" 1
    else
        not_ok "probing patched client -> baseline server, wrap=$wrap: the patched openvpn has no --server-probe in its --help"
        not_ok "probing patched client -> patched server, wrap=$wrap: the patched openvpn has no --server-probe in its --help"
    fi
done
echo "1..$n"
echo "# $n scenarios, $fails failed, $(( $(date +%s) - t0 )) s"
[ $fails -eq 0 ] || exit 1
exit 0
