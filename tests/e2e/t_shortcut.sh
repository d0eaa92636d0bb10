#!/bin/bash
# End-to-end tests of the one-RTT handshake shortcut (SPEC section 4):
# a client with --server-probe that got a probe reply with
# connect_lifetime > 0 keeps the probe socket and starts the TLS handshake
# at its third packet, using the reply's cookie as the remote session id.
#
#   1. every wrap mode (none, tls-auth, tls-crypt, tls-crypt-v2), relay at
#      50 ms one way: the shortcut is taken (log line, no fallback), no
#      hard reset (opcode 7 / 10) ever goes up, the wire starts with
#      probe up (12, 13 for v2), reply down (12), then P_CONTROL_V1 (4) or,
#      for v2, P_CONTROL_WKC_V1 (11); one client address only (the probe
#      socket is reused); data flows both ways;
#   2. fallback: the relay rebinds the client after its first datagram, so
#      the cookie no longer matches, and it drops the server's new
#      challenge (a server of the series before it answered such a third
#      packet: --drop-unasked-resets); the client logs the fallback after
#      four RTTs of the probe + 500 ms (at least 2 s, at most 5 s; the
#      master series in whole seconds of its TLS timers), as the shortcut
#      line announced, sends a hard reset from the same socket and
#      connects within 3 s of the fallback;
#  2b. NAT rebind answered (no wrap, tls-crypt-v2): the same rebind, the
#      server's new challenge (opcode 8, unasked) reaches the client, which
#      retransmits its third packet at once with the new cookie: no
#      fallback, no client reset (7 / 10) ever goes up, the wire is probe,
#      reply, third packet (4, or 11 with the tls-crypt-v2 key), challenge
#      (8), third packet again, and the client is connected before the
#      fallback it announced would have come;
#  2c. late third packet: the relay holds the shortened third packet and
#      sends it up with the fallback's reset (just before it, just after
#      it): the server holds the abandoned handshake for the client's
#      port; the client restarts from a new port (no pause, same remote,
#      not taken for a full server) and connects within 5 s of the
#      fallback (the series before: the 60 s handshake window, or the
#      next remote);
#   3. expired cookie: server --hand-window 2 advertises connect_lifetime
#      1 s, too short for the client (it wants >= 1 s left): normal
#      handshake, no restart;
#   4. unpatched server: no probe reply, no shortcut, normal handshake;
#   5. --lport (the connection binds): no shortcut, normal handshake from
#      the bound port;
#   6. timing at 100 ms one way, 7 interleaved connects of each kind: no
#      connect is faster than two round trips (400 ms: the relay delay is a
#      hard floor); the fastest with the shortcut must not exceed the fastest
#      without --server-probe + 150 ms, and must beat the fastest probing
#      without the shortcut (--lport) by >= 100 ms (one RTT is 200 ms);
#      load only adds time, so the fastest of 7 is the stable figure.
#   7. a server that fills up between probe and connect: server 1
#      (--max-clients 1) answers the probe of client B, which reaches it
#      through a relay that delays B's packets by 500 ms; client A, held
#      by --management-hold until B's phase has ended, then takes the only
#      slot.  B's third packet is refused (the server logs the
#      --max-clients message), B falls back, its normal reset is answered
#      statelessly and its third packet refused again: B gives up on
#      server 1 ("takes no new clients", a TLS error: SIGUSR1)
#      and connects to server 2 within 20 s, far from its --hand-window
#      of 40 s (the series before this waited the whole window there);
#      the phase after the refusal does not wait for the full server,
#      silent now, once server 2 answered (< 500 ms, not the 1 s
#      deadline).
#  7b. the same full server, now silent to probes, and a live server
#      that does not answer probes (--server-probe-reply off): client C
#      probes, nothing answers, it keeps the configured order and starts
#      a normal handshake with the full server; the reset is answered,
#      the third packet refused: C gives up on it within one
#      --tls-timeout and a few round trips and connects to the other
#      server (--hand-window 40 s; the series before waited it out).
#  7c. two servers (--max-clients 1, priority 1) fill up after client
#      D's probe, a third has room (priority 5): D gives up on the first
#      full one, probes again ("a server took no new client": the full
#      ones are silent now), ranks the third first and connects to it,
#      with one refusal only (the series before took the next remote of
#      the stale ranking, the other full server, and was refused twice).
# Exit 0 pass, 1 fail, 77 skip. Takes about 70 s (waits capped at 210 s).
set -u
: "${TB_PORT_BASE:=25000}"
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../../testbed/lib.sh
. "$here/../../testbed/lib.sh"

tb_setup shortcut server-probe -- "$@"


# every wait below is capped by what is left of this budget, so the whole
# file stays well under 4 minutes even when everything times out
SC_BUDGET=${SC_BUDGET:-210}
SC_T0=$SECONDS
sc_left() { echo $((SC_BUDGET - (SECONDS - SC_T0))); }
sc_cap()
{
    local want=$1 left
    left=$(sc_left)
    [ "$left" -lt 1 ] && left=1
    [ "$want" -lt "$left" ] && echo "$want" || echo "$left"
}

CONNECT_TIMEOUT=15   # s; a normal connect here takes < 1.5 s
DATA_TIMEOUT=8       # s; --ping 1 on both ends

LINE_SHORTCUT="server-probe: starting the handshake at its third packet"
LINE_FALLBACK="server-probe: no answer to the shortened handshake, falling back to a normal handshake"
LINE_NOSHORT="server-probe: no shortened handshake"
LINE_REFUSED="server-probe: the server answered the reset but not the handshake"
# what a client must never log in these scenarios: a restart or a TLS error
BAD_RE='SIGUSR1|SIGHUP|SIGTERM|process restarting|Restart pause|TLS Error|TLS handshake failed|ERROR:|Fatal|Exiting due to'

# sc_client_bound NAME LPORT [openvpn args]: like tb_client (no wrap), but
# bound to 127.0.0.1:LPORT instead of --nobind (tb_client always passes
# --nobind, and openvpn refuses --lport with it)
sc_client_bound()
{
    local name=$1 lport=$2; shift 2
    rm -f "$TB_DIR/$name.log" "$TB_DIR/$name.ms"
    echo "none $TB_BIN --lport $lport $*" >"$TB_DIR/$name.info"
    date +%s%N >"$TB_DIR/$name.t0"
    tb__spawn "$name" "$TB_BIN" --client --dev null --local 127.0.0.1 --lport "$lport" \
        --ifconfig-noexec --route-noexec --remote-cert-tls server \
        --ca "$TB_PKI/ca.crt" --cert "$TB_PKI/client.crt" \
        --key "$TB_PKI/client.key" \
        --verb "$TB_VERB" --log "$TB_DIR/$name.log" "$@"
}

# sc_wait NAME [LIMIT]: tb_wait_connected within the budget; sets MS
# (WAITED: the limit used, for the messages)
sc_wait()
{
    MS=""
    WAITED=$(sc_cap "${2:-$CONNECT_TIMEOUT}")
    MS=$(tb_wait_connected "$1" "$WAITED" 2>"$TB_DIR/$1.wait")
}

# sc_data RELAY: P_DATA_V2 seen both ways, within the budget
sc_data() { WAITED=$(sc_cap $DATA_TIMEOUT); tb_wait_ops "$1" "$WAITED" up 9 1 down 9 1; }

# sc_between NAME STR1 STR2: ms between the log lines holding STR1 and STR2
sc_between()
{
    local a b
    a=$(tb__logtime_ns "$(grep -m1 -F -- "$2" "$TB_DIR/$1.log")")
    b=$(tb__logtime_ns "$(grep -m1 -F -- "$3" "$TB_DIR/$1.log")")
    [ -n "$a" ] && [ -n "$b" ] && echo $(( (b - a) / 1000000 ))
}
has()   { grep -qF -- "$2" "$TB_DIR/$1.log" 2>/dev/null; }
# lineno NAME STRING: number of the first log line holding STRING (or 0)
lineno() { grep -nF -m1 -- "$2" "$TB_DIR/$1.log" 2>/dev/null | cut -d: -f1 | grep . || echo 0; }
# (the option dump at --verb 4, "  name = value", is not a complaint)
bad_lines()
{
    grep -E "$BAD_RE" "$TB_DIR/$1.log" 2>/dev/null |
        grep -vE '^[0-9-]+ [0-9:]+ us=[0-9]+ +[][A-Za-z0-9_]+ = ' | head -n 3
}
# first_ops RELAY K: the first K relay events, as dir:opcode
first_ops() { tb_opcodes "$1" | tr ' ' '\n' | head -n "$2" | tr '\n' ' ' | sed 's/ $//'; }
# client addresses the relay saw sending up
up_clients() { awk '$2 == "up" { print $3 }' "$TB_DIR/$1.relay.log" | sort -u | tr '\n' ' ' | sed 's/ $//'; }
# index (1-based) of the first event dir:op in the relay's sequence, 0 if none
op_index()
{
    tb_opcodes "$1" | tr ' ' '\n' | awk -v e="$2" '$0 == e { print NR; f = 1; exit } END { if (!f) print 0 }'
}

# report LABEL WHY CLIENT SERVER RELAY: one ok/not ok line plus diagnostics
report()
{
    local label=$1 why=$2 c=$3 s=$4 r=$5
    if [ -z "$why" ]; then
        ok "$label"
    else
        not_ok "$label: $why"
        echo "#   relay events: $(tb_opcodes "$r" | cut -c1-300)"
        grep -F "server-probe:" "$TB_DIR/$c.log" 2>/dev/null | sed 's/^/#   | /'
        cat "$TB_DIR/$c.wait" 2>/dev/null
        tb_tail "$c" "$s"
    fi
}

stop() { local x; for x in "$@"; do tb_stop "$x"; done; }

# ---------------------------------------------------------------- 1.
k=0
for wrap in none tls-auth tls-crypt tls-crypt-v2; do
    k=$((k + 1))
    s=s1$k r=r1$k c=c1$k
    sport=$(tb_port $((100 + 2 * k))) rport=$(tb_port $((101 + 2 * k)))
    probe_op=12 third=4
    [ "$wrap" = tls-crypt-v2 ] && { probe_op=13; third=11; }
    tb_server "$s" "$sport" --wrap "$wrap" -- --ping 1
    tb_relay "$r" "127.0.0.1:$rport" "127.0.0.1:$sport" --delay 50
    tb_client "$c" --wrap "$wrap" -- --remote 127.0.0.1 "$rport" udp4 --ping 1 --server-probe
    why=""
    if ! sc_wait "$c"; then
        why="did not connect within ${WAITED}s"
    elif [ "$(tb_connected_server "$c")" != "127.0.0.1:$rport" ]; then
        why="connected to $(tb_connected_server "$c"), not 127.0.0.1:$rport"
    elif ! has "$c" "$LINE_SHORTCUT"; then
        why="no '$LINE_SHORTCUT' line"
    elif has "$c" "falling back to a normal handshake"; then
        why="the client fell back to a normal handshake"
    elif has "$c" "$LINE_NOSHORT"; then
        why="the client logged '$LINE_NOSHORT'"
    elif ! sc_data "$r"; then
        why="no P_DATA_V2 (9) both ways within ${WAITED}s"
    fi
    ops=$(first_ops "$r" 3)
    n7=$(tb_count_op "$r" up 7) n10=$(tb_count_op "$r" up 10)
    nprobe=$(tb_count_op "$r" up "$probe_op") nreply=$(tb_count_op "$r" down 12)
    clients=$(up_clients "$r")
    if [ -n "$why" ]; then :
    elif [ "$n7" -ne 0 ] || [ "$n10" -ne 0 ]; then
        why="hard resets went up: $n7 x opcode 7, $n10 x opcode 10"
    elif [ "$ops" != "up:$probe_op down:12 up:$third" ]; then
        why="wire starts '$ops', expected 'up:$probe_op down:12 up:$third'"
    elif [ "$nprobe" -ne 1 ] || [ "$nreply" -ne 1 ] ||
         [ $(( $(tb_count_op "$r" up 12) + $(tb_count_op "$r" up 13) )) -ne 1 ]; then
        why="expected exactly one probe (op $probe_op) up and one reply (12) down, got $nprobe / $nreply"
    elif [ "$(wc -w <<<"$clients")" -ne 1 ]; then
        why="the probe socket was not reused: the relay saw clients $clients"
    elif [ -n "$(bad_lines "$c")" ]; then
        why="client log has: $(bad_lines "$c" | cut -c1-200 | tr '\n' '|')"
    elif ! grep -q "Peer Connection Initiated" "$TB_DIR/$s.log"; then
        why="the server did not log the peer connection"
    fi
    report "wrap=$wrap: shortcut taken, connected in ${MS:-?} ms; wire '$ops ...'; no opcode 7/10 up; data both ways" \
        "$why" "$c" "$s" "$r"
    stop "$c" "$r" "$s"
done

# fb_expected CLIENT: the shortcut line announces the fallback the client
# must choose from the RTT it measured: 4 RTT + 500 ms, at least 2 s, at
# most 5 s (2.6 series: in ms); the master series in whole seconds of its
# TLS timers, rounded up (at least 2), firing up to 1 s before it.
# Sets FB_RTT, FB_ANNOUNCED, FB_EXPECT and the window FB_MIN..FB_MAX (ms)
fb_expected()
{
    local rtt guess
    rtt=$(sed -n 's/.* rtt=\([0-9]*\)\.[0-9]*ms .*place=1$/\1/p' "$TB_DIR/$1.log" | head -n1)
    FB_RTT=${rtt:-?}
    FB_ANNOUNCED=$(grep -oE "fallback after [0-9]+ m?s" "$TB_DIR/$1.log" | head -n1 | sed 's/fallback after //')
    [ -n "$rtt" ] && [ -n "$FB_ANNOUNCED" ] || return 1
    guess=$((4 * rtt + 500))
    if [ "$(tb_series)" = master ]; then
        guess=$(( (guess + 999) / 1000 )); [ $guess -lt 2 ] && guess=2; [ $guess -gt 5 ] && guess=5
        FB_EXPECT="$guess s"
        FB_MIN=$(( (guess - 1) * 1000 - 100 )) FB_MAX=$(( (guess + 1) * 1000 + 700 ))
    else
        [ $guess -lt 2000 ] && guess=2000; [ $guess -gt 5000 ] && guess=5000
        FB_EXPECT="$guess ms"
        # a ms of rounding either way in the RTT the log shows
        FB_MIN=$((guess - 100)) FB_MAX=$((guess + 700))
        local a=${FB_ANNOUNCED% ms}
        [ "$a" -ge $((guess - 5)) ] && [ "$a" -le $((guess + 5)) ] && return 0
        return 1
    fi
    [ "$FB_ANNOUNCED" = "$FB_EXPECT" ]
}

# ---------------------------------------------------------------- 2.
s=s2 r=r2 c=c2
tb_server "$s" "$(tb_port 201)" -- --ping 1
tb_relay "$r" "127.0.0.1:$(tb_port 202)" "127.0.0.1:$(tb_port 201)" --delay 50 --rebind-after-packets 1 \
    --drop-unasked-resets
tb_client "$c" -- --remote 127.0.0.1 "$(tb_port 202)" udp4 --ping 1 --server-probe
why=""
FALLBACK_MS="" FB_DELAY=""
if ! sc_wait "$c" 20; then
    why="did not connect within ${WAITED}s"
else
    FALLBACK_MS=$MS
    l_sc=$(lineno "$c" "$LINE_SHORTCUT") l_fb=$(lineno "$c" "$LINE_FALLBACK")
    l_ok=$(lineno "$c" "Initialization Sequence Completed")
    i4=$(op_index "$r" up:4) i7=$(op_index "$r" up:7)
    FB_DELAY=$(sc_between "$c" "$LINE_SHORTCUT" "$LINE_FALLBACK")
    if [ "$l_sc" = 0 ]; then
        why="no '$LINE_SHORTCUT' line"
    elif [ "$l_fb" = 0 ]; then
        why="no fallback line"
    elif [ "$l_fb" -lt "$l_sc" ] || [ "$l_ok" -lt "$l_fb" ]; then
        why="log order: shortcut line $l_sc, fallback $l_fb, connected $l_ok"
    elif ! grep -q ' rebind ' "$TB_DIR/$r.relay.log"; then
        why="the relay did not rebind the client"
    elif [ "$i7" = 0 ]; then
        why="no hard reset (opcode 7) went up after the fallback"
    elif [ "$i4" = 0 ] || [ "$i7" -lt "$i4" ]; then
        why="opcode 7 (event $i7) did not follow the shortened third packet (opcode 4, event $i4)"
    elif [ "$(first_ops "$r" 3)" != "up:12 down:12 up:4" ]; then
        why="wire starts '$(first_ops "$r" 3)', expected 'up:12 down:12 up:4'"
    elif ! awk '$2 == "down" && $4 == 8 && $6 == "unasked" { f = 1 } END { exit !f }' "$TB_DIR/$r.relay.log"; then
        why="the server sent no new challenge for the relay to drop"
    elif ! fb_expected "$c"; then
        why="the shortcut line announces ${FB_ANNOUNCED:-no} fallback, expected 2 RTT + 250 ms of the probe (RTT $FB_RTT ms): $FB_EXPECT"
    elif [ -z "$FB_DELAY" ] || [ "$FB_DELAY" -lt "$FB_MIN" ] || [ "$FB_DELAY" -gt "$FB_MAX" ]; then
        why="the fallback came ${FB_DELAY:-?} ms after the shortcut started (announced $FB_ANNOUNCED: $FB_MIN..$FB_MAX ms)"
    elif [ "$MS" -gt $((FB_MAX + 3000)) ]; then
        why="connect time $MS ms is over the fallback's $FB_MAX ms + 3000"
    elif [ "$(tb_connected_server "$c")" != "127.0.0.1:$(tb_port 202)" ]; then
        why="connected to $(tb_connected_server "$c"), not the same server"
    elif ! grep -q "P_CONTROL_V1) with invalid or missing SID" "$TB_DIR/$s.log"; then
        why="the server did not reject the shortened third packet from the new port"
    elif [ "$(wc -w <<<"$(up_clients "$r")")" -ne 1 ]; then
        why="the fallback did not keep the probe socket: relay clients $(up_clients "$r")"
    elif ! sc_data "$r"; then
        why="no P_DATA_V2 (9) both ways within ${WAITED}s"
    elif [ -n "$(bad_lines "$c")" ]; then
        why="client log has: $(bad_lines "$c" | cut -c1-200 | tr '\n' '|')"
    fi
fi
report "fallback: relay rebinds after the probe (RTT ${FB_RTT:-?} ms), client falls back ${FB_DELAY:-?} ms after starting the shortcut (announced ${FB_ANNOUNCED:-?}), sends opcode 7 and connects in ${FALLBACK_MS:-?} ms" \
    "$why" "$c" "$s" "$r"
stop "$c" "$r" "$s"

# ---------------------------------------------------------------- 2b.
k=0
for wrap in none tls-crypt-v2; do
k=$((k + 1))
s=s2b$k r=r2b$k c=c2b$k
sport=$(tb_port $((204 + 2 * k))) rport=$(tb_port $((205 + 2 * k)))
third=4
[ "$wrap" = tls-crypt-v2 ] && third=11
probe_op=12
[ "$wrap" = tls-crypt-v2 ] && probe_op=13
tb_server "$s" "$sport" --wrap "$wrap" -- --ping 1
tb_relay "$r" "127.0.0.1:$rport" "127.0.0.1:$sport" --delay 50 --rebind-after-packets 1
tb_client "$c" --wrap "$wrap" -- --remote 127.0.0.1 "$rport" udp4 --ping 1 --server-probe
why=""
REBIND_MS="" RB_AFTER=""
want="up:$probe_op down:12 up:$third down:8 up:$third"
if ! sc_wait "$c" 20; then
    why="did not connect within ${WAITED}s"
else
    REBIND_MS=$MS
    fb_expected "$c" >/dev/null
    RB_AFTER=$(sc_between "$c" "$LINE_SHORTCUT" "Initialization Sequence Completed")
    a=${FB_ANNOUNCED% ms}
    case $FB_ANNOUNCED in *" s") a=$(( ${FB_ANNOUNCED% s} * 1000 )) ;; esac
    if ! has "$c" "$LINE_SHORTCUT"; then
        why="no '$LINE_SHORTCUT' line"
    elif has "$c" "falling back to a normal handshake"; then
        why="the client fell back"
    elif ! grep -q ' rebind ' "$TB_DIR/$r.relay.log"; then
        why="the relay did not rebind the client"
    elif [ "$(first_ops "$r" 5)" != "$want" ]; then
        why="wire starts '$(first_ops "$r" 5)', expected '$want'"
    elif [ "$(op_index "$r" up:7)" != 0 ] || [ "$(op_index "$r" up:10)" != 0 ]; then
        why="a client reset went up"
    elif [ -z "$RB_AFTER" ] || [ -z "$a" ] || [ "$RB_AFTER" -ge "$a" ]; then
        why="connected ${RB_AFTER:-?} ms after the shortcut started, not before its announced fallback (${FB_ANNOUNCED:-?})"
    elif [ "$(tb_connected_server "$c")" != "127.0.0.1:$rport" ]; then
        why="connected to $(tb_connected_server "$c"), not the same server"
    elif ! sc_data "$r"; then
        why="no P_DATA_V2 (9) both ways within ${WAITED}s"
    elif [ -n "$(bad_lines "$c")" ]; then
        why="client log has: $(bad_lines "$c" | cut -c1-200 | tr '\n' '|')"
    fi
fi
report "NAT rebind answered (wrap=$wrap): the server's new challenge reaches the client, which retransmits its third packet and connects in ${REBIND_MS:-?} ms, ${RB_AFTER:-?} ms after starting the shortcut (fallback announced ${FB_ANNOUNCED:-?}), no fallback" \
    "$why" "$c" "$s" "$r"
stop "$c" "$r" "$s"
done

# ---------------------------------------------------------------- 2c.
# The server takes a third packet of the shortened handshake late: the
# relay holds the first one, loses its retransmissions (so that the
# fallback fires) and sends it up just before (k=1) or just after (k=2)
# the fallback's hard reset.  Either way the server creates an instance for
# the client's address and port from the late third packet, ignores the
# new reset from there (1) or refuses the new handshake's third packet
# (2), and answers the abandoned handshake.  The series before waited for
# the whole handshake window (60 s) or gave up on the server as full (the
# next remote); the client now restarts from a new port with the same
# remote and connects within 5 s of the fallback.
LINE_STALE="server-probe: the server answers the abandoned shortened handshake"
k=0
for hold in hold-first-up hold-first-up-after; do
k=$((k + 1))
s=s2c$k r=r2c$k c=c2c$k s2=s2c${k}b
sport=$(tb_port $((220 + 4 * k))) rport=$(tb_port $((221 + 4 * k))) s2port=$(tb_port $((222 + 4 * k)))
tb_server "$s" "$sport" -- --ping 1 --server-probe-reply 0 50 1
tb_server "$s2" "$s2port" -- --ping 1 --server-probe-reply 0 50 5
tb_relay "$r" "127.0.0.1:$rport" "127.0.0.1:$sport" --delay 50 "--$hold" 4
tb_client "$c" -- --remote 127.0.0.1 "$rport" udp4 --remote 127.0.0.1 "$s2port" udp4 \
    --ping 1 --server-probe
why=""
STALE_MS="" STALE_AFTER=""
if ! sc_wait "$c" 20; then
    why="did not connect within ${WAITED}s"
else
    STALE_MS=$MS
    STALE_AFTER=$(sc_between "$c" "$LINE_FALLBACK" "Initialization Sequence Completed")
    held=$(awk '$2 == "up" && $4 == 4 && $6 == "held" { n++ } END { print n + 0 }' "$TB_DIR/$r.relay.log")
    if ! has "$c" "$LINE_SHORTCUT"; then
        why="no '$LINE_SHORTCUT' line"
    elif [ "$held" != 1 ]; then
        why="the relay held $held third packets, expected 1"
    elif ! has "$c" "$LINE_FALLBACK"; then
        why="no fallback line"
    elif ! has "$c" "$LINE_STALE"; then
        why="no '$LINE_STALE' line"
    elif has "$c" "$LINE_REFUSED"; then
        why="the client took the server for a full one"
    elif ! has "$c" "SIGUSR1[soft,server-probe-new-port]"; then
        why="no 'SIGUSR1[soft,server-probe-new-port]' restart"
    elif has "$c" "Restart pause"; then
        why="a restart pause before the new port"
    elif [ "$(wc -w <<<"$(up_clients "$r")")" -ne 2 ]; then
        why="the client did not restart from a new port: relay clients $(up_clients "$r")"
    elif [ "$(tb_connected_port "$c")" != "$rport" ]; then
        why="connected to $(tb_connected_server "$c"), not the same server"
    elif [ -z "$STALE_AFTER" ] || [ "$STALE_AFTER" -gt 5000 ]; then
        why="connected ${STALE_AFTER:-?} ms after the fallback, more than 5000"
    elif ! sc_data "$r"; then
        why="no P_DATA_V2 (9) both ways within ${WAITED}s"
    fi
fi
report "late third packet ($hold): the server holds the abandoned handshake, the client restarts from a new port and connects to the same server ${STALE_AFTER:-?} ms after the fallback (${STALE_MS:-?} ms in all)" \
    "$why" "$c" "$s" "$r"
stop "$c" "$r" "$s" "$s2"
done

# ---------------------------------------------------------------- 3.
s=s3 r=r3 c=c3
tb_server "$s" "$(tb_port 301)" -- --ping 1 --hand-window 2
tb_relay "$r" "127.0.0.1:$(tb_port 302)" "127.0.0.1:$(tb_port 301)" --delay 50
tb_client "$c" -- --remote 127.0.0.1 "$(tb_port 302)" udp4 --ping 1 --server-probe
why=""
if ! sc_wait "$c"; then
    why="did not connect within ${WAITED}s"
elif ! has "$c" "1 of 1 addresses answered"; then
    why="the probe was not answered"
elif ! grep -qE "no shortened handshake|cookie expired" "$TB_DIR/$c.log"; then
    why="no 'no shortened handshake' / 'cookie expired' line"
elif has "$c" "$LINE_SHORTCUT"; then
    why="the client took the shortcut with a 1 s cookie lifetime"
elif [ "$(first_ops "$r" 3)" != "up:12 down:12 up:7" ]; then
    why="wire starts '$(first_ops "$r" 3)', expected 'up:12 down:12 up:7'"
elif ! sc_data "$r"; then
    why="no P_DATA_V2 (9) both ways within ${WAITED}s"
elif [ -n "$(bad_lines "$c")" ]; then
    why="client log has: $(bad_lines "$c" | cut -c1-200 | tr '\n' '|')"
fi
report "expired cookie (server --hand-window 2): '$(grep -ohE "no shortened handshake: [^,]*|cookie expired[^,]*" "$TB_DIR/$c.log" | head -n 1)', opcode 7 up, connected in ${MS:-?} ms, no restart" \
    "$why" "$c" "$s" "$r"
stop "$c" "$r" "$s"

# ---------------------------------------------------------------- 4.
s=s4 r=r4 c=c4
tb_server "$s" "$(tb_port 401)" --bin "$TB_BASELINE" -- --ping 1
tb_relay "$r" "127.0.0.1:$(tb_port 402)" "127.0.0.1:$(tb_port 401)" --delay 50
tb_client "$c" -- --remote 127.0.0.1 "$(tb_port 402)" udp4 --ping 1 --server-probe
why=""
if ! sc_wait "$c"; then
    why="did not connect within ${WAITED}s"
elif [ "$(tb_count_op "$r" down 12)" -ne 0 ]; then
    why="the baseline server answered a probe"
elif [ "$(tb_count_op "$r" up 12)" -lt 1 ]; then
    why="no probe went up"
elif ! has "$c" "0 of 1 addresses answered"; then
    why="no '0 of 1 addresses answered' line"
elif has "$c" "$LINE_SHORTCUT" || has "$c" "falling back to a normal handshake"; then
    why="the client logged a shortcut or fallback line"
elif [ "$(tb_opcodes "$r" up | tr ' ' '\n' | grep -vx 12 | head -n 1)" != 7 ]; then
    why="the first non-probe packet up is not opcode 7: $(tb_opcodes "$r" up | cut -c1-80)"
elif ! sc_data "$r"; then
    why="no P_DATA_V2 (9) both ways within ${WAITED}s"
elif [ -n "$(bad_lines "$c")" ]; then
    why="client log has: $(bad_lines "$c" | cut -c1-200 | tr '\n' '|')"
fi
report "baseline server: $(tb_count_op "$r" up 12) probe(s), no reply, no shortcut, opcode 7 up, connected in ${MS:-?} ms" \
    "$why" "$c" "$s" "$r"
stop "$c" "$r" "$s"

# ---------------------------------------------------------------- 5.
s=s5 r=r5 c=c5
lport=$(tb_port 503)
tb_server "$s" "$(tb_port 501)" -- --ping 1
tb_relay "$r" "127.0.0.1:$(tb_port 502)" "127.0.0.1:$(tb_port 501)" --delay 50
sc_client_bound "$c" "$lport" --remote 127.0.0.1 "$(tb_port 502)" udp4 --ping 1 --server-probe
why=""
if ! sc_wait "$c"; then
    why="did not connect within ${WAITED}s"
elif ! has "$c" "$LINE_NOSHORT: the connection binds"; then
    why="no '$LINE_NOSHORT: the connection binds...' line"
elif has "$c" "$LINE_SHORTCUT"; then
    why="the client took the shortcut although it binds"
elif ! has "$c" "1 of 1 addresses answered"; then
    why="the probe was not answered"
elif [ "$(awk '$2 == "up" && $4 == 7 { print $3; exit }' "$TB_DIR/$r.relay.log")" != "127.0.0.1:$lport" ]; then
    why="the hard reset did not come from 127.0.0.1:$lport (relay clients: $(up_clients "$r"))"
elif [ "$(awk '$2 == "up" && $4 == 12 { print $3; exit }' "$TB_DIR/$r.relay.log")" = "127.0.0.1:$lport" ]; then
    why="the probe came from the bound port (expected a separate probe socket)"
elif ! sc_data "$r"; then
    why="no P_DATA_V2 (9) both ways within ${WAITED}s"
elif [ -n "$(bad_lines "$c")" ]; then
    why="client log has: $(bad_lines "$c" | cut -c1-200 | tr '\n' '|')"
fi
report "--lport $lport: no shortcut ('the connection binds...'), opcode 7 up from the bound port, connected in ${MS:-?} ms" \
    "$why" "$c" "$s" "$r"
stop "$c" "$r" "$s"

# ---------------------------------------------------------------- 6.
s=s6 r=r6
tb_server "$s" "$(tb_port 601)" -- --ping 1
tb_relay "$r" "127.0.0.1:$(tb_port 602)" "127.0.0.1:$(tb_port 601)" --delay 100
remote=(--remote 127.0.0.1 "$(tb_port 602)" udp4)
T_SC=() T_NP=() T_LP=() why=""
NRUNS=7
for ((i = 1; i <= NRUNS; i++)); do
    # interleaved, so that any drift of the machine hits all three alike
    tb_client "c6s$i" -- "${remote[@]}" --server-probe
    if sc_wait "c6s$i"; then
        T_SC+=("$MS")
        has "c6s$i" "$LINE_SHORTCUT" || why="${why}c6s$i took no shortcut; "
        has "c6s$i" "falling back" && why="${why}c6s$i fell back; "
    else
        why="${why}c6s$i did not connect; "
    fi
    tb_stop "c6s$i"
    tb_client "c6n$i" -- "${remote[@]}"
    if sc_wait "c6n$i"; then T_NP+=("$MS"); else why="${why}c6n$i did not connect; "; fi
    tb_stop "c6n$i"
    sc_client_bound "c6l$i" "$(tb_port $((610 + i)))" "${remote[@]}" --server-probe
    if sc_wait "c6l$i"; then
        T_LP+=("$MS")
        has "c6l$i" "$LINE_NOSHORT" || why="${why}c6l$i did not skip the shortcut; "
    else
        why="${why}c6l$i did not connect; "
    fi
    tb_stop "c6l$i"
done
median() { printf '%s\n' "$@" | sort -n | sed -n "$(( ($# + 1) / 2 ))p"; }
fastest() { printf '%s\n' "$@" | sort -n | head -n 1; }
m_sc="" m_np="" m_lp=""
if [ ${#T_SC[@]} -eq $NRUNS ] && [ ${#T_NP[@]} -eq $NRUNS ] && [ ${#T_LP[@]} -eq $NRUNS ]; then
    m_sc=$(median "${T_SC[@]}") m_np=$(median "${T_NP[@]}") m_lp=$(median "${T_LP[@]}")
    # load only ever adds time: the comparisons use the fastest of each
    # kind (medians are printed; measured under load 13: medians 1283 /
    # 1367 / 1509 ms, fastest 1046 / 1218 / 1437 ms)
    f_sc=$(fastest "${T_SC[@]}") f_np=$(fastest "${T_NP[@]}") f_lp=$(fastest "${T_LP[@]}")
    for x in "${T_SC[@]}" "${T_NP[@]}" "${T_LP[@]}"; do
        [ "$x" -lt 400 ] && why="${why}a connect took $x ms < 2 RTTs (400 ms) through a 100 ms relay; "
    done
fi
tb_log "connect ms at 100 ms one way (RTT 200 ms): shortcut ${T_SC[*]:-} (median ${m_sc:-?});" \
    "no probe ${T_NP[*]:-} (median ${m_np:-?}); probe without shortcut (--lport) ${T_LP[*]:-} (median ${m_lp:-?})"
if [ -z "$why" ] && [ -n "$m_sc" ]; then
    if [ "$f_sc" -gt $((f_np + 150)) ]; then
        why="fastest shortcut connect $f_sc ms > fastest without probing $f_np ms + 150 ms"
    elif [ "$f_sc" -gt $((f_lp - 100)) ]; then
        why="fastest shortcut connect $f_sc ms saves less than 100 ms against the fastest probing without it ($f_lp ms)"
    fi
fi
if [ -z "$why" ]; then
    ok "timing (fastest of $NRUNS): shortcut ${f_sc} ms <= no-probe ${f_np} ms + 150; probe without shortcut ${f_lp} ms (saves $((f_lp - f_sc)) ms; medians $m_sc / $m_np / $m_lp)"
else
    not_ok "timing: $why"
    for x in c6s1 c6n1 c6l1; do grep -F "server-probe:" "$TB_DIR/$x.log" 2>/dev/null | sed "s/^/#   $x | /"; done
fi
stop "$r" "$s"

# ---------------------------------------------------------------- 7.
s=s7a s2=s7b r=r7 a=c7a c=c7b
mport=$(tb_port 705)
tb_server "$s" "$(tb_port 701)" -- --ping 1 --max-clients 1
tb_server "$s2" "$(tb_port 702)" -- --ping 1 --server-probe-reply 0 50 200
tb_relay "$r" "127.0.0.1:$(tb_port 703)" "127.0.0.1:$(tb_port 701)" --delay-up 500
tb_client "$a" -- --remote 127.0.0.1 "$(tb_port 701)" udp4 --ping 1 \
    --management 127.0.0.1 "$mport" --management-hold
tb_client "$c" -- --remote 127.0.0.1 "$(tb_port 703)" udp4 --remote 127.0.0.1 "$(tb_port 702)" udp4 \
    --ping 1 --server-probe --hand-window 40
why=""
B_MS="" GAVE_UP=""
if ! tb_wait_lines "$c" 1 "addresses answered in"; then
    why="client B logged no probe phase"
elif ! exec 7<>"/dev/tcp/127.0.0.1/$mport"; then
    why="no management connection to client A"
else
    # the greeting first, then the command, then its answer: a
    # connection closed before openvpn read the command loses it
    read -r -t 5 -u 7 _ || true
    printf 'hold release\n' >&7
    read -r -t 5 -u 7 _ || true
    exec 7>&-
    if ! sc_wait "$a" 10; then
        why="client A did not connect within ${WAITED}s"
    elif ! sc_wait "$c" 25; then
        why="client B did not connect within ${WAITED}s (its --hand-window is 40 s)"
    else
        B_MS=$MS
        GAVE_UP=$(sc_between "$c" "$LINE_SHORTCUT" "$LINE_REFUSED")
        nfull=$(grep -cF "would exceed maximum number of clients" "$TB_DIR/$s.log")
        if [ "$(tb_phase_summary "$c" 1 | sed 's/.*first remote now //')" != "127.0.0.1:$(tb_port 703)" ] &&
           ! tb_phase_summary "$c" 1 | grep -qF ":$(tb_port 703)"; then
            why="B's first phase did not rank server 1 first: $(tb_phase_summary "$c" 1)"
        elif ! has "$c" "$LINE_SHORTCUT"; then
            why="B did not start the shortened handshake with server 1"
        elif ! has "$c" "$LINE_FALLBACK"; then
            why="B did not fall back"
        elif ! has "$c" "$LINE_REFUSED"; then
            why="B did not give up on the full server"
        elif ! has "$c" "SIGUSR1[soft,tls-error]"; then
            why="no SIGUSR1 tls-error restart"
        elif [ "$nfull" -lt 2 ]; then
            why="server 1 refused $nfull third packet(s) for --max-clients, expected the shortcut's and the fallback's"
        elif ! tb_phase_summary "$c" 2 | grep -qE "^1 of 2 addresses answered in [0-9]+ ms; first remote now 127.0.0.1:$(tb_port 702)\$" ||
             [ "$(tb_phase_summary "$c" 2 | sed -n 's/.* answered in \([0-9]*\) ms.*/\1/p')" -ge 500 ]; then
            why="B's phase after the refusal: $(tb_phase_summary "$c" 2), expected server 2 first in < 500 ms (the full server is not waited for)"
        elif [ "$(tb_connected_port "$a")" != "$(tb_port 701)" ]; then
            why="A connected to $(tb_connected_server "$a"), not server 1"
        elif [ "$(tb_connected_port "$c")" != "$(tb_port 702)" ]; then
            why="B connected to $(tb_connected_server "$c"), not server 2"
        elif [ -z "$GAVE_UP" ] || [ "$GAVE_UP" -gt 15000 ]; then
            why="B gave up ${GAVE_UP:-?} ms after the shortcut started (fallback, reset and one --tls-timeout: at most 15 s)"
        fi
    fi
fi
report "a server full since the probe: refused twice ($(grep -cF "would exceed maximum number of clients" "$TB_DIR/$s.log" 2>/dev/null) --max-clients lines), B gave up on it ${GAVE_UP:-?} ms after the shortcut started and connected to server 2 in ${B_MS:-?} ms (--hand-window 40); then: $(tb_phase_summary "$c" 2 | cut -c1-40)" \
    "$why" "$c" "$s" "$r"
stop "$c" "$r" "$s2"

# ---------------------------------------------------------------- 7b.
# server 1 ($s) is still full with client A
s3=s7c c=c7c
tb_server "$s3" "$(tb_port 704)" -- --ping 1 --server-probe-reply off
nfull0=$(grep -cF "would exceed maximum number of clients" "$TB_DIR/$s.log")
tb_client "$c" -- --remote 127.0.0.1 "$(tb_port 701)" udp4 --remote 127.0.0.1 "$(tb_port 704)" udp4 \
    --ping 1 --server-probe --hand-window 40
why=""
C_MS="" GAVE_UP=""
if ! tb_is_connected "$a"; then
    why="client A is no longer connected to server 1 (it must stay full)"
elif ! sc_wait "$c" 25; then
    why="client C did not connect within ${WAITED}s (its --hand-window is 40 s)"
else
    C_MS=$MS
    GAVE_UP=$(sc_between "$c" "addresses answered in" "$LINE_REFUSED")
    nfull=$(( $(grep -cF "would exceed maximum number of clients" "$TB_DIR/$s.log") - nfull0 ))
    if ! tb_phase_summary "$c" 1 | grep -q "^0 of 2 addresses answered"; then
        why="C's phase: $(tb_phase_summary "$c" 1), expected no answer"
    elif has "$c" "$LINE_SHORTCUT"; then
        why="C started a shortened handshake without a reply"
    elif ! has "$c" "$LINE_REFUSED"; then
        why="C did not give up on the full server"
    elif [ "$nfull" -lt 1 ]; then
        why="server 1 refused no third packet of C for --max-clients"
    elif [ "$(tb_connected_port "$c")" != "$(tb_port 704)" ]; then
        why="C connected to $(tb_connected_server "$c"), not server 3"
    elif [ -z "$GAVE_UP" ] || [ "$GAVE_UP" -gt 10000 ]; then
        why="C gave up ${GAVE_UP:-?} ms after its phase (reset, one --tls-timeout and a few RTTs: at most 10 s)"
    fi
fi
report "a full server silent to the probe: C tried it first (no server answered), gave up on it ${GAVE_UP:-?} ms after its phase and connected to server 3 in ${C_MS:-?} ms (--hand-window 40)" \
    "$why" "$c" "$s" "$s3"
stop "$a" "$c" "$s" "$s3"

# ---------------------------------------------------------------- 7c.
# two servers fill up after D's probe, a third has room but a worse
# priority: D gives up on the first full one, probes again (the full ones
# are silent now) and connects to the third without trying the other full
# one (the series before took the next remote of the stale ranking: a
# second refusal, one --tls-timeout and a few round trips more)
sx=s7d sy=s7e sz=s7f rx=r7d ry=r7e fx=c7d fy=c7e d=c7f
mx=$(tb_port 716) my=$(tb_port 717)
tb_server "$sx" "$(tb_port 711)" -- --ping 1 --max-clients 1 --server-probe-reply 0 50 1
tb_server "$sy" "$(tb_port 712)" -- --ping 1 --max-clients 1 --server-probe-reply 0 50 1
tb_server "$sz" "$(tb_port 713)" -- --ping 1 --server-probe-reply 0 50 5
tb_relay "$rx" "127.0.0.1:$(tb_port 714)" "127.0.0.1:$(tb_port 711)" --delay-up 800
tb_relay "$ry" "127.0.0.1:$(tb_port 715)" "127.0.0.1:$(tb_port 712)" --delay-up 800
tb_client "$fx" -- --remote 127.0.0.1 "$(tb_port 711)" udp4 --ping 1 \
    --management 127.0.0.1 "$mx" --management-hold
tb_client "$fy" -- --remote 127.0.0.1 "$(tb_port 712)" udp4 --ping 1 \
    --management 127.0.0.1 "$my" --management-hold
tb_client "$d" -- --remote 127.0.0.1 "$(tb_port 714)" udp4 --remote 127.0.0.1 "$(tb_port 715)" udp4 \
    --remote 127.0.0.1 "$(tb_port 713)" udp4 --ping 1 --server-probe --hand-window 40
# release the client that waits on management port $1
sc_release()
{
    exec 7<>"/dev/tcp/127.0.0.1/$1" || return 1
    read -r -t 5 -u 7 _ || true
    printf 'hold release\n' >&7
    read -r -t 5 -u 7 _ || true
    exec 7>&-
}
why=""
D_MS="" NREF=""
if ! tb_wait_lines "$d" 1 "addresses answered in"; then
    why="client D logged no probe phase"
elif ! sc_release "$mx" || ! sc_release "$my"; then
    why="no management connection to the clients that fill the servers"
elif ! sc_wait "$fx" 10 || ! sc_wait "$fy" 10; then
    why="the clients that fill servers 1 and 2 did not connect within ${WAITED}s"
elif ! sc_wait "$d" 35; then
    why="client D did not connect within ${WAITED}s (its --hand-window is 40 s)"
else
    D_MS=$MS
    NREF=$(grep -cF "$LINE_REFUSED" "$TB_DIR/$d.log")
    second=$(tb_phase_summary "$d" 2)
    if ! tb_phase_summary "$d" 1 | grep -qE "first remote now 127.0.0.1:($(tb_port 714)|$(tb_port 715))\$"; then
        why="D's first phase did not rank a server with priority 1 first: $(tb_phase_summary "$d" 1)"
    elif [ "$NREF" != 1 ]; then
        why="D gave up on $NREF full servers, expected 1 (then a new phase)"
    elif ! has "$d" "(a server took no new client)"; then
        why="no probe phase after the refusal"
    elif ! echo "$second" | grep -qF "first remote now 127.0.0.1:$(tb_port 713)"; then
        why="the phase after the refusal: ${second:-none}, expected server 3 first"
    elif [ "$(tb_connected_port "$d")" != "$(tb_port 713)" ]; then
        why="D connected to $(tb_connected_server "$d"), not server 3"
    fi
fi
report "two servers full since the probe: D gave up on ${NREF:-?} of them, probed again ($(tb_phase_summary "$d" 2 | cut -c1-60)) and connected to server 3 in ${D_MS:-?} ms" \
    "$why" "$d" "$sx" "$sy"
stop "$d" "$fx" "$fy" "$rx" "$ry" "$sx" "$sy" "$sz"

echo "1..$n"
echo "# $n checks, $fails failed, $((SECONDS - SC_T0)) s"
[ $fails -eq 0 ] || exit 1
exit 0
