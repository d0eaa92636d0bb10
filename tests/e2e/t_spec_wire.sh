#!/bin/bash
# shellcheck disable=SC2317  # helpers run through check()
# SPEC promises about the wire that no other test checks:
#   (a) SPEC 1, replay packet ids: with tls-auth, tls-crypt and
#       tls-crypt-v2, a probing client (--server-probe) with two dead
#       remotes (probes resent) and one live one (probe answered, one-RTT
#       shortcut, handshake), then a SIGUSR1 restart (a second probe phase
#       and a second handshake): every wrapped control packet the client
#       sends (captured on lo with spec_tools.py sniff, parsed right after
#       the HMAC for tls-auth, right after the session id for tls-crypt)
#       carries a (time, id) that never repeats and never goes backwards,
#       across remotes, resends, the probe -> handshake boundary and the
#       restart ("global, not per connection"); once more (tls-auth)
#       against an unpatched server: probes, then a normal handshake;
#       and (SPEC 3) the SIGUSR1 restart runs a second probe phase;
#   (b) SPEC 5, compatibility side by side: without --server-probe, the
#       patched and the unpatched client put the same control packets
#       (opcode and length, in order) on the wire against the same
#       server; and the same (unpatched) client gets the same control
#       packets from a patched server that gets no probes as from an
#       unpatched one (tls-auth and tls-crypt-v2; RSA keys for
#       fixed-length signatures; pure ACKs left out, see ctl_seq).  Each
#       comparison is first made between two runs of the same binary (the
#       reference), so that a difference can only come from the series.
# Exit 0 pass, 1 fail, 77 skip. Takes about 80 s.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by lib.sh (tb_port)
TB_PORT_BASE=${TB_PORT_BASE_SPEC_WIRE:-29000}
# shellcheck source=../../testbed/lib.sh
. "$here/../../testbed/lib.sh"

command -v python3 >/dev/null 2>&1 || tb_skip_or_ci_fail "python3 is missing"
tb_setup spec-wire server-probe -- "$@"
python3 -c 'import socket; socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM)' 2>/dev/null ||
    tb_skip_or_ci_fail "cannot open an AF_PACKET socket (needed to capture the client's packets)"

ST=(timeout 150 python3 "$here/spec_tools.py")
T0=$(date +%s)
kv() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"; }
n_connected() { grep -c "Initialization Sequence Completed" "$TB_DIR/$1.log" 2>/dev/null || true; }
# wait_n_connected NAME N LIMIT_S
wait_n_connected()
{
    local i
    for ((i = 0; i < $3 * 20; i++)); do
        [ "$(n_connected "$1")" -ge "$2" ] 2>/dev/null && return 0
        tb__alive "$1" || return 1
        sleep 0.05
    done
    return 1
}
# sniffer NAME PORTS...: capture datagrams to these ports into NAME.cap
sniffer()
{
    local name=$1 i; shift
    local ports
    ports=$(IFS=,; echo "$*")
    tb__spawn "$name" "${ST[@]}" sniff --out "$TB_DIR/$name.cap" --dports "$ports" --max-seconds 120
    for ((i = 0; i < 500; i++)); do
        grep -q listening "$TB_DIR/$name.stderr" 2>/dev/null && return 0
        sleep 0.01
    done
    tb_die "sniffer $name did not start"
}

# ------------------------------------------------------------------ (a)
tb_log "(a) packet ids of probes, resends, handshakes and a restart"
k=0
# WRAP:SERVER; with the unpatched server nothing answers the probes: a
# normal handshake (opcode 7) follows them, to the first remote
for spec in tls-auth:patched tls-crypt:patched tls-crypt-v2:patched tls-auth:unpatched; do
    wrap=${spec%%:*} kind=${spec#*:}
    k=$((k + 1))
    S=$(tb_port $((10 * k))) R=$(tb_port $((10 * k + 1)))
    D1=$(tb_port $((10 * k + 2))) D2=$(tb_port $((10 * k + 3)))
    s=sa$k r=ra$k c=ca$k
    sbin=$TB_BIN
    [ "$kind" = unpatched ] && sbin=$TB_BASELINE
    tb_server "$s" "$S" --bin "$sbin" --wrap "$wrap" -- --ping 1
    tb_relay "$r" "127.0.0.1:$R" "127.0.0.1:$S" --delay 5
    tb_relay "${r}d1" "127.0.0.1:$D1" "127.0.0.1:$S" --blackhole
    tb_relay "${r}d2" "127.0.0.1:$D2" "127.0.0.1:$S" --blackhole
    sniffer "sn$k" "$D1" "$D2" "$R"
    remotes=(--remote 127.0.0.1 "$D1" udp4 --remote 127.0.0.1 "$D2" udp4 --remote 127.0.0.1 "$R" udp4)
    [ "$kind" = unpatched ] &&
        remotes=(--remote 127.0.0.1 "$R" udp4 --remote 127.0.0.1 "$D1" udp4 --remote 127.0.0.1 "$D2" udp4)
    tb_client "$c" --wrap "$wrap" -- "${remotes[@]}" --server-probe --ping 1 --connect-retry 1 1
    why=""
    if ! wait_n_connected "$c" 1 30; then
        why="the client did not connect"
    else
        sleep 1          # the push reply, acks and a ping
        kill -USR1 "$(tb_pid "$c")"
        wait_n_connected "$c" 2 30 || why="the client did not reconnect after SIGUSR1"
        sleep 0.5
    fi
    tb_stop "sn$k"
    out=$("${ST[@]}" pids --capture "$TB_DIR/sn$k.cap" --wrap "$wrap" 2>&1)
    echo "$out" >"$TB_DIR/sn$k.pids"
    res=$(tail -n 1 <<<"$out")
    nprobe_dead=$(awk -v d="127.0.0.1:$D1" '$3 == d' "$TB_DIR/sn$k.cap" | wc -l)
    phases=$(grep -c "addresses answered in" "$TB_DIR/$c.log")
    shortcut=$(grep -c "starting the handshake at its third packet" "$TB_DIR/$c.log")
    nreset=$(awk '{ print substr($4, 1, 2) }' "$TB_DIR/sn$k.cap" | grep -ciE '^(38|50)$')
    what="$wrap, $kind server: $(kv n "$res") wrapped control packets from $(kv sources "$res") client socket(s) to 3 remotes ($nprobe_dead probes to a dead one, $phases probe phases, $shortcut shortcut(s), $nreset hard reset(s))"
    if [ -n "$why" ]; then
        not_ok "$what: $why"
        tb_tail "$c"
    elif [ "$nprobe_dead" -lt 2 ] || [ "$(kv n "$res")" -lt 12 ] ||
         { [ "$kind" = patched ] && [ "$shortcut" -lt 1 ]; } ||
         { [ "$kind" = unpatched ] && [ "$nreset" -lt 1 ]; }; then
        not_ok "$what: the capture does not cover resent probes, the shortcut (patched) or a hard reset (unpatched) and the handshakes"
        grep "server-probe:" "$TB_DIR/$c.log" | sed 's/^/#   /'
    elif [ "$(kv repeats "$res")" = 0 ] && [ "$(kv backwards "$res")" = 0 ] && [ "$(kv insane_time "$res")" = 0 ]; then
        ok "$what: packet ids never repeat and never go backwards"
    else
        not_ok "$what: $(kv repeats "$res") repeated and $(kv backwards "$res") backwards packet ids (first: $(kv first_bad "$res"); implausible times: $(kv insane_time "$res"))"
        grep -E "REPEAT|BACKWARDS|INSANE" "$TB_DIR/sn$k.pids" | head -n 8
        echo "#   (the whole sequence: ${TB_DIR#"$TB_TOP"/}/sn$k.pids)"
        head -n 12 "$TB_DIR/sn$k.pids"
    fi
    # SPEC 3: "a probe phase runs ... after a connected session ends
    # (ping-restart, SIGUSR1, server restart)"; its probes are part of the
    # sequence above
    if [ -z "$why" ] && [ "$k" = 1 ]; then
        check "$wrap: the SIGUSR1 restart ran a second probe phase ($phases phase(s) logged, $nprobe_dead probes to a dead remote in all)" \
            test "$phases" -ge 2 -a "$nprobe_dead" -ge 4
    fi
    tb_stop "$c"; tb_stop "$r"; tb_stop "${r}d1"; tb_stop "${r}d2"; tb_stop "$s"
done

# ------------------------------------------------------------------ (b)
tb_log "(b) SPEC 5: the same packets on the wire without probes"
# ECDSA signatures vary in length (DER), which would make the handshake
# lengths differ from run to run: an RSA PKI of our own (RSA-PSS
# signatures have the length of the modulus)
RSA="$TB_DIR/rsa"
mkdir -p "$RSA"
(
    set -e
    cd "$RSA"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3 -subj /CN=spec-ca \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
    for r in server client; do
        eku=serverAuth
        [ $r = client ] && eku=clientAuth
        openssl req -newkey rsa:2048 -nodes -keyout $r.key -out $r.csr -subj /CN=spec-$r
        printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=%s\n' $eku >$r.ext
        openssl x509 -req -in $r.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out $r.crt -days 3 -extfile $r.ext
    done
) >"$RSA/openssl.log" 2>&1 || { cat "$RSA/openssl.log"; tb_die "RSA PKI: openssl failed"; }
rsa_args() { echo "--ca $RSA/ca.crt --cert $RSA/$1.crt --key $RSA/$1.key"; }

# ctl_seq RELAY DIR N: "op/len op/len ..." of the first N control packets
# (resets, P_CONTROL_V1) in one direction: the reset and the whole TLS
# handshake, up to the push request (up, N=5) / the push reply (down,
# N=6).  Pure ACKs (5) are left out: unpatched 2.6.14 itself merges them
# differently from run to run, depending on timing
ctl_seq()
{
    awk -v d="$2" -v max="$3" '$2 == d && $4 != 9 && $4 != 6 && $4 != 5 { printf "%s%s/%s", sep, $4, $5; sep = " "; if (++n == max) exit }' \
        "$TB_DIR/$1.relay.log"
}
# the pushed "ifconfig 10.231.IDX.2" grows by a byte when tb_server's
# server index goes from 9 to 10: start (b)'s servers at index 11, so that
# all of them push addresses of the same length
TB_NSERVERS=10
# run_pair TAG SERVER_BIN CLIENT_BIN WRAP: one connection through a fresh
# relay, sets SEQ_UP / SEQ_DOWN
j=0
run_pair()
{
    local tag=$1 sbin=$2 cbin=$3 wrap=$4
    j=$((j + 1))
    local s=sb$j r=rb$j c=cb$j sport rport
    sport=$(tb_port $((100 + 2 * j))) rport=$(tb_port $((101 + 2 * j)))
    SEQ_UP="" SEQ_DOWN=""
    # shellcheck disable=SC2046
    tb_server "$s" "$sport" --bin "$sbin" --wrap "$wrap" -- --ping 1 $(rsa_args server)
    tb_relay "$r" "127.0.0.1:$rport" "127.0.0.1:$sport" --delay 5
    # shellcheck disable=SC2046
    tb_client "$c" --bin "$cbin" --wrap "$wrap" -- --remote 127.0.0.1 "$rport" udp4 --ping 1 $(rsa_args client)
    if tb_wait_connected "$c" 30 >/dev/null; then
        sleep 0.3       # the last ACKs; the push reply came before the connection
        SEQ_UP=$(ctl_seq "$r" up 5) SEQ_DOWN=$(ctl_seq "$r" down 6)
    else
        tb_tail "$c" "$s"
    fi
    echo "# $tag wrap=$wrap: up [$SEQ_UP] down [$SEQ_DOWN]"
    tb_stop "$c"; tb_stop "$r"; tb_stop "$s"
}
# The unpatched reference itself may differ from run to run (unpatched
# master's tls-crypt-v2 client sent its fifth control packet with 253 or
# 254 bytes): the patched binary passes when its sequence is one that the
# unpatched binary produced, in up to REF_RUNS runs.
REF_RUNS=4
# same_as_unpatched LABEL DIR CUR SBIN CBIN WRAP: CUR (the patched run's
# SEQ_UP or SEQ_DOWN) against runs of the unpatched pair SBIN/CBIN
same_as_unpatched()
{
    local label=$1 dir=$2 cur=$3 sbin=$4 cbin=$5 wrap=$6 k refs=() seq
    for ((k = 1; k <= REF_RUNS; k++)); do
        run_pair "$label (ref $k)" "$sbin" "$cbin" "$wrap"
        if [ "$dir" = up ]; then seq=$SEQ_UP; else seq=$SEQ_DOWN; fi
        [ -n "$seq" ] && refs+=("$seq")
        [ -n "$cur" ] && [ "$seq" = "$cur" ] && break
        # two identical references and no match: a real difference
        [ ${#refs[@]} -ge 2 ] && [ "${refs[0]}" = "${refs[1]}" ] && break
    done
    [ ${#refs[@]} -gt 1 ] && [ "$(printf '%s\n' "${refs[@]}" | sort -u | wc -l)" -gt 1 ] &&
        echo "#   note: the unpatched runs differ among themselves: $(printf '[%s] ' "${refs[@]}")"
    [ -n "$cur" ] || return 1
    [ "${refs[-1]:-}" = "$cur" ] && return 0
    # no exact match: the same opcodes, and one P_CONTROL_V1 that is one
    # byte longer or shorter (the variation of the unpatched binary itself,
    # seen in CI: 253 against 254, with two references at 254), passes with
    # a note; anything a change of the wire would add (an option, a
    # peer-info line) is several bytes or another packet
    local near
    near=$(printf '%s\n' "${refs[@]}" | while read -r seq; do
        awk -v a="$cur" -v b="$seq" 'BEGIN {
            n = split(a, x, " "); if (split(b, y, " ") != n) exit 1
            for (i = 1; i <= n; i++) {
                split(x[i], p, "/"); split(y[i], q, "/")
                if (p[1] != q[1]) exit 1
                d = p[2] - q[2]
                if (d == 0) continue
                if (p[1] != 4 || (d != 1 && d != -1) || ++off > 1) exit 1
            }
            exit 0 }' && { echo "$seq"; break; }
    done)
    [ -n "$near" ] || return 1
    echo "#   note: no unpatched run sent exactly [$cur]; one packet differs by one byte from [$near], as the unpatched binary's own runs do"
}
for wrap in tls-auth tls-crypt-v2; do
    # clients against the same (patched) server binary
    run_pair "patched client -> patched server" "$TB_BIN" "$TB_BIN" "$wrap"; p1=$SEQ_UP
    check "$wrap: without --server-probe the patched client sends what the unpatched one sends: [$p1]" \
        same_as_unpatched "baseline client -> patched server" up "$p1" "$TB_BIN" "$TB_BASELINE" "$wrap"
    # the same (unpatched) client against both servers
    run_pair "baseline client -> patched server" "$TB_BIN" "$TB_BASELINE" "$wrap"; dp=$SEQ_DOWN
    check "$wrap: a patched server that gets no probes sends what the unpatched one sends: [$dp]" \
        same_as_unpatched "baseline client -> baseline server" down "$dp" "$TB_BASELINE" "$TB_BASELINE" "$wrap"
done

echo "1..$n"
echo "# $n checks, $fails failed, $(( $(date +%s) - T0 )) s"
[ $fails -eq 0 ] || exit 1
exit 0
