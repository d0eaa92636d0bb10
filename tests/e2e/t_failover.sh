#!/bin/bash
# shellcheck disable=SC2317  # helpers run through check()
# Failover that stays smart (SPEC 3: "a probe phase runs before each pass
# through the connection list"; "the phase ends when every target has
# answered or been refused"), end to end:
#   (a) refused: remotes [a closed UDP port, a 20 ms server]: the closed
#       port's ICMP port unreachable ends its wait at once, the phase
#       takes about one RTT of the live server (< 300 ms), not the 1 s
#       deadline; the log says "refused"; against a blackhole (no ICMP)
#       the phase takes the deadline;
#   (b) reconnect: servers A (20 ms, prio 10), B (60 ms, prio 20), C
#       (150 ms, prio 30); the client (--keepalive 1 4) connects to A;
#       A and B are stopped at the same moment; the client's ping-restart
#       starts a new probe phase ("reconnect"), which finds only C: the
#       client is on C within ping-restart + 4 s of the kill;
#   (c) every remote failed: remotes [a server that answers probes but
#       fails the TLS handshake (wrong CA), a good server with a worse
#       priority]: the probe ranks the first at place 1, the client tries
#       it (link remote, its certificate refused), then the second, in
#       one pass, and is not trapped;
#   (d) a client with --user nobody, --persist-key and a tls-auth key file
#       only root can read probes again after its server died and
#       reconnects (the probes use the keys as the connection does);
#   (e) nothing answers: remotes [a closed port (refused), a blackhole
#       (silent)]: a refusal never ranks ahead of a silence (the silent
#       address may be a server that lost a probe, or whose probe went
#       astray): the blackhole at place 1, the closed port at place 2;
#   (f) --local on a multi-homed host: the probes leave from the address
#       the connection binds (127.0.0.5), not from the one the routing
#       table would pick (127.0.0.1).
# Prints the figures. Exit 0 pass, 1 fail, 77 skip.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by lib.sh (tb_port)
TB_PORT_BASE=${TB_PORT_BASE_FAILOVER:-29000}
# shellcheck source=../../testbed/lib.sh
. "$here/../../testbed/lib.sh"

tb_setup failover server-probe -- "$@"

has() { grep -qF -- "$2" "$TB_DIR/$1.log" 2>/dev/null; }
summary() { grep -F "addresses answered in" "$TB_DIR/$1.log" 2>/dev/null | sed -n "${2:-1}p" | sed 's/.*server-probe: //'; }
phase_ms() { sed -n 's/.* answered in \([0-9]*\) ms.*/\1/p' <<<"$1"; }
# ms between the first log line holding STR and time T0 (ns)
line_ns() { tb__logtime_ns "$(grep -F -- "$2" "$TB_DIR/$1.log" | sed -n "${3:-1}p")"; }

# ------------------------------------------------------------------ (a)
tb_log "(a) a closed port refuses at once"
S1=$(tb_port 1) R20=$(tb_port 101) CLOSED=$(tb_port 150) BH=$(tb_port 151)
tb_server s1 "$S1" -- --server-probe-reply 0 50 100
tb_relay r20 "127.0.0.1:$R20" "127.0.0.1:$S1" --delay 10
tb_relay rbh "127.0.0.1:$BH" "127.0.0.1:$S1" --blackhole
tb_client ca -- --remote 127.0.0.1 "$CLOSED" udp4 --remote 127.0.0.1 "$R20" udp4 --server-probe
ms_a=$(tb_wait_connected ca 20) || ms_a=""
sa=$(summary ca) pa=$(phase_ms "$(summary ca)")
tb_log "refused: $sa; connected in $ms_a ms"
check "(a) the closed port: 'refused' at place 2" \
    grep -qF "server-probe: [AF_INET]127.0.0.1:$CLOSED refused place=2" "$TB_DIR/ca.log"
check "(a) the phase ends after about one RTT of the live server: ${pa:-?} ms in [15, 300]" \
    bash -c "[ -n '$pa' ] && [ '$pa' -ge 15 ] && [ '$pa' -le 300 ]"
check "(a) connected to the live remote 127.0.0.1:$R20 in ${ms_a:-?} ms (< 1500)" \
    bash -c "[ '$(tb_connected_server ca)' = '127.0.0.1:$R20' ] && [ -n '$ms_a' ] && [ '$ms_a' -lt 1500 ]"
tb_stop ca
tb_client cb -- --remote 127.0.0.1 "$BH" udp4 --remote 127.0.0.1 "$R20" udp4 --server-probe
ms_b=$(tb_wait_connected cb 20) || ms_b=""
pb=$(phase_ms "$(summary cb)")
tb_log "blackhole: $(summary cb); connected in $ms_b ms"
check "(a) a blackhole instead: 'no reply', the phase takes the deadline (${pb:-?} ms >= 950)" \
    bash -c "grep -qF 'server-probe: [AF_INET]127.0.0.1:$BH no reply place=2' '$TB_DIR/cb.log' && [ -n '$pb' ] && [ '$pb' -ge 950 ]"
tb_stop cb
echo "# refused vs blackhole: phase $pa / $pb ms, connect $ms_a / $ms_b ms"

# ------------------------------------------------------------------ (b)
tb_log "(b) A (20 ms, prio 10), B (60 ms, prio 20), C (150 ms, prio 30); A and B die"
A=$(tb_port 2) B=$(tb_port 3) C=$(tb_port 4)
RA=$(tb_port 102) RB=$(tb_port 103) RC=$(tb_port 104)
tb_server sa "$A" -- --server-probe-reply 0 50 10 --keepalive 1 4
tb_server sb "$B" -- --server-probe-reply 0 50 20 --keepalive 1 4
tb_server sc "$C" -- --server-probe-reply 0 50 30 --keepalive 1 4
tb_relay ra "127.0.0.1:$RA" "127.0.0.1:$A" --delay 10
tb_relay rb "127.0.0.1:$RB" "127.0.0.1:$B" --delay 30
tb_relay rc "127.0.0.1:$RC" "127.0.0.1:$C" --delay 75
tb_client cr -- --remote 127.0.0.1 "$RA" udp4 --remote 127.0.0.1 "$RB" udp4 \
    --remote 127.0.0.1 "$RC" udp4 --server-probe --keepalive 1 4
if tb_wait_connected cr 20 >/dev/null && [ "$(tb_connected_server cr)" = "127.0.0.1:$RA" ]; then
    ok "(b) connected to A first"
    sleep 1
    kill_ns=$(date +%s%N)
    kill -TERM "$(tb_pid sa)" "$(tb_pid sb)"
    tb_stop sa
    tb_stop sb
    # wait for the second "Initialization Sequence Completed"
    i=0
    while [ "$(grep -cF 'Initialization Sequence Completed' "$TB_DIR/cr.log")" -lt 2 ] && [ $i -lt 3000 ]; do
        sleep 0.01; i=$((i + 1))
    done
    done_ns=$(line_ns cr "Initialization Sequence Completed" 2)
    if [ -n "$done_ns" ]; then
        fail_ms=$(( (done_ns - kill_ns) / 1000000 ))
        restart_ns=$(line_ns cr "Inactivity timeout")
        second=$(summary cr 2)
        tb_log "kill -> connected on C: $fail_ms ms; second phase: $second"
        check "(b) a new phase after the ping-restart, reason reconnect" \
            grep -qF "server-probe: probing 3 UDP remote(s) (reconnect)" "$TB_DIR/cr.log"
        check "(b) the second phase: only C answered, C first ($second)" \
            bash -c "[[ '$second' == '1 of 3 addresses answered'*'first remote now 127.0.0.1:$RC' ]]"
        check "(b) landed on C (got $(tb_connected_server cr))" \
            bash -c "grep -F 'Peer Connection Initiated' '$TB_DIR/cr.log' | tail -n1 | grep -qF '127.0.0.1:$RC'"
        if [ -n "$restart_ns" ]; then
            after_ms=$(( (done_ns - restart_ns) / 1000000 ))
            check "(b) on C $after_ms ms after the ping-restart (< 4000), $fail_ms ms after the kill" \
                test "$after_ms" -lt 4000
        else
            not_ok "(b) no 'Inactivity timeout' line"
        fi
        echo "# reconnect: kill of A and B -> connected on C: $fail_ms ms"
    else
        not_ok "(b) not connected again within 30 s of the kill"
        tb_tail cr
    fi
else
    not_ok "(b) did not connect to A first ($(tb_connected_server cr))"
    tb_tail cr
fi
tb_stop cr

# ------------------------------------------------------------------ (c)
tb_log "(c) the best server answers probes but fails TLS"
D=$(tb_port 5) E=$(tb_port 6)
tb_pki_other "$TB_DIR/pki2"
tb_server sd "$D" -- --server-probe-reply 0 50 10 --cert "$TB_DIR/pki2/s.crt" \
    --key "$TB_DIR/pki2/s.key"
tb_server se "$E" -- --server-probe-reply 0 50 20
tb_client cf -- --remote 127.0.0.1 "$D" udp4 --remote 127.0.0.1 "$E" udp4 \
    --server-probe --hand-window 5
if ms=$(tb_wait_connected cf 40); then
    check "(c) the probe ranked the TLS-failing server 127.0.0.1:$D first (place=1, priority 10)" \
        grep -qE "server-probe: \[AF_INET\]127\.0\.0\.1:$D rtt=[0-9.]+ms prio=10 .*place=1\$" "$TB_DIR/cf.log"
    # the client's log, in order: the link to D, D's certificate refused
    # (it is signed by the other CA: CN=other-server), the link to E
    lnum() { grep -nE -- "$1" "$TB_DIR/cf.log" | head -n1 | cut -d: -f1; }
    l_d=$(lnum "link remote: \[AF_INET\]127\.0\.0\.1:$D\$")
    l_v=$(lnum "VERIFY ERROR: .*CN=other-server")
    l_e=$(lnum "link remote: \[AF_INET\]127\.0\.0\.1:$E\$")
    check "(c) tried 127.0.0.1:$D first (link remote, line ${l_d:-none}), its certificate was refused (line ${l_v:-none}), then moved on to 127.0.0.1:$E (line ${l_e:-none})" \
        bash -c "[ -n '$l_d' ] && [ -n '$l_v' ] && [ -n '$l_e' ] && [ '$l_d' -lt '$l_v' ] && [ '$l_v' -lt '$l_e' ]"
    check "(c) not trapped by the TLS-failing server: connected to 127.0.0.1:$E in $ms ms" \
        test "$(tb_connected_server cf)" = "127.0.0.1:$E"
    check "(c) one phase only before the connection (within a pass the ranking is followed)" \
        test "$(grep -cF 'addresses answered in' "$TB_DIR/cf.log")" -eq 1
else
    not_ok "(c) did not connect within 40 s"; tb_tail cf
fi
tb_stop cf

# ------------------------------------------------------------------ (d)
tb_log "(d) re-probe after --user nobody: the tls-auth key file is out of reach"
G=$(tb_port 7) H=$(tb_port 8)
install -m 600 "$TB_PKI/ta.key" "$TB_DIR/ta-root.key"
tb_server sg "$G" --wrap tls-auth -- --server-probe-reply 0 50 10 --keepalive 1 4
tb_server sh "$H" --wrap tls-auth -- --server-probe-reply 0 50 20 --keepalive 1 4
nogroup=nogroup; getent group nogroup >/dev/null || nogroup=nobody
tb_client cu -- --remote 127.0.0.1 "$G" udp4 --remote 127.0.0.1 "$H" udp4 \
    --tls-auth "$TB_DIR/ta-root.key" 1 --server-probe --keepalive 1 4 \
    --user nobody --group "$nogroup" --persist-key
if tb_wait_connected cu 20 >/dev/null && [ "$(tb_connected_server cu)" = "127.0.0.1:$G" ]; then
    tb_stop sg
    i=0
    while [ "$(grep -cF 'Initialization Sequence Completed' "$TB_DIR/cu.log")" -lt 2 ] && [ $i -lt 2000 ] && tb__alive cu; do
        sleep 0.01; i=$((i + 1))
    done
    check "(d) the key file is unreadable for nobody" \
        bash -c "! setpriv --reuid=nobody --regid=nobody --clear-groups cat '$TB_DIR/ta-root.key' >/dev/null 2>&1"
    check "(d) the second phase ran (reconnect) and the client reconnected to 127.0.0.1:$H" \
        bash -c "grep -qF 'probing 2 UDP remote(s) (reconnect)' '$TB_DIR/cu.log' && [ \$(grep -cF 'Initialization Sequence Completed' '$TB_DIR/cu.log') -ge 2 ] && grep -F 'Peer Connection Initiated' '$TB_DIR/cu.log' | tail -n1 | grep -qF '127.0.0.1:$H'"
    check "(d) the client is alive, no fatal error" \
        bash -c "kill -0 $(tb_pid cu) && ! grep -qE 'Exiting due to fatal error|Cannot open' '$TB_DIR/cu.log'"
else
    not_ok "(d) did not connect to 127.0.0.1:$G first"; tb_tail cu
fi
tb_stop cu

# ------------------------------------------------------------------ (e)
tb_log "(e) no reply at all: [closed port, blackhole]"
tb_client ce -- --remote 127.0.0.1 "$CLOSED" udp4 --remote 127.0.0.1 "$BH" udp4 \
    --server-probe --connect-retry 30
for ((i = 0; i < 500; i++)); do has ce "addresses answered in" && break; sleep 0.01; done
se=$(summary ce)
tb_log "nothing answered: $se"
check "(e) the blackhole (silent) at place 1" \
    grep -qF "server-probe: [AF_INET]127.0.0.1:$BH no reply place=1" "$TB_DIR/ce.log"
check "(e) the closed port (refused) at place 2" \
    grep -qF "server-probe: [AF_INET]127.0.0.1:$CLOSED refused place=2" "$TB_DIR/ce.log"
check "(e) first remote: the silent one ($se)" \
    bash -c "grep -qF 'first remote now 127.0.0.1:$BH' '$TB_DIR/ce.log'"
tb_stop ce

# ------------------------------------------------------------------ (f)
tb_log "(f) --local 127.0.0.5: probes leave from the connection's address"
RF=$(tb_port 160) LP=$(tb_port 161)
tb_relay rf "127.0.0.1:$RF" "127.0.0.1:$S1"
tb_client cf5 --bind -- --local 127.0.0.5 --lport "$LP" --remote 127.0.0.1 "$RF" udp4 --server-probe
tb_wait_connected cf5 20 >/dev/null
probe_src=$(awk '$2 == "up" && $4 == 12 { print $3; exit }' "$TB_DIR/rf.relay.log")
reset_src=$(awk '$2 == "up" && $4 == 7 { print $3; exit }' "$TB_DIR/rf.relay.log")
check "(f) the probe came from 127.0.0.5 (${probe_src:-none})" test "${probe_src%:*}" = 127.0.0.5
check "(f) the connection from 127.0.0.5:$LP (${reset_src:-none})" test "$reset_src" = "127.0.0.5:$LP"
check "(f) connected ($(tb_connected_server cf5))" test "$(tb_connected_server cf5)" = "127.0.0.1:$RF"
tb_stop cf5

echo "1..$n"
echo "# $n checks, $fails failed"
[ "$fails" -eq 0 ]
