#!/bin/bash
# shellcheck disable=SC2317  # helpers run through check()
# Reconnects and the probe phase's own processes and sockets (issue
# "Reconnects that never crash"; SPEC 3). Clients run in a mount namespace
# of their own with a private /etc/hosts: multi.test resolves to 127.0.0.1
# and 127.0.0.2.
#   (a) remote multi.test, no server, --connect-timeout 2 --connect-retry 1:
#       the client survives several "every remote failed" phases (series
#       v2: SIGSEGV after the first, next_connection_entry() read
#       l->array[-1]) and connects once a server comes up on 127.0.0.2;
#   (b) the same name, a server that does not answer probes
#       (--server-probe-reply off), so the connection is not pinned; the
#       server is SIGSTOPped: ping-restart, a "reconnect" phase, no crash,
#       connected again after SIGCONT;
#   (c) a local send error (192.0.2.1: no route in the test's namespace)
#       is "unreachable" at once, logged once, and does not hold the
#       phase to its deadline;
#   (d) resolver children: with a silent name server, each child holds
#       nothing but its pipe (0-2 on /dev/null, the pipe on 3; not the
#       management socket), at most 8 run at once, they die with a
#       SIGKILLed client, and a new client can bind the same management
#       port at once; an instant NXDOMAIN is logged with the resolver's
#       error, not as "not resolved within 1000 ms"; 150 names with
#       ulimit -n 64 give at most one warning;
#   (e) a forged ICMP port unreachable quoting the client's probe port but
#       not a probe of ours (wrong session id; a quote cut after the UDP
#       header) does not demote a live server: it is still ranked first;
#   (f) a name with two addresses whose better one (priority 10) answers
#       probes but fails TLS: the client tries the name's other address
#       next and connects there (as unpatched does), instead of moving on,
#       re-probing and picking the failing address again (found by the
#       soak: seeds 28, 74, 84, 100, 133);
#   The master series has no resolver children (see t_resolve.sh): for it
#   (d) checks that the client starts no process during a phase with 12
#       names behind the silent name server, and that it looks up one
#       name and leaves the others for the time for names was spent;
#   (g) a server closes no descriptor of its own when a client instance
#       ends (series v2 closed descriptor 0 at every instance's end: the
#       instance's adopt_sd was 0);
#   (h) after SIGUSR1 the client pauses for its --connect-retry (3 s when
#       given, 1 s by default) before it reconnects; unpatched master and
#       2.7 pause 2 s whatever --connect-retry says (since their commit
#       619c3e9a, fixed by the series).
# Exit 0 pass, 1 fail, 77 skip.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by lib.sh (tb_port)
TB_PORT_BASE=${TB_PORT_BASE_RECONNECT:-33000}
# shellcheck source=../../testbed/lib.sh
. "$here/../../testbed/lib.sh"

tb_setup reconnect server-probe -- "$@"
command -v unshare >/dev/null || tb_skip_or_ci_fail "unshare (util-linux) is missing"
command -v python3 >/dev/null || tb_skip_or_ci_fail "python3 is missing"

ip addr add 127.0.0.2/8 dev lo 2>/dev/null || true
printf '127.0.0.1 multi.test\n127.0.0.2 multi.test\n' >"$TB_DIR/hosts"
# the silent name server of (d) is 127.0.0.53 (started there)
printf 'nameserver 127.0.0.53\noptions timeout:3 attempts:1\n' >"$TB_DIR/resolv.conf"
printf 'hosts: files dns\n' >"$TB_DIR/nsswitch.conf"
cat >"$TB_DIR/ovpn-hosts" <<WRAP
#!/bin/bash
exec unshare -m bash -c 'mount --bind "$TB_DIR/hosts" /etc/hosts && mount --bind "$TB_DIR/resolv.conf" /etc/resolv.conf && mount --bind "$TB_DIR/nsswitch.conf" /etc/nsswitch.conf && exec "\$0" "\$@"' "$TB_BIN" "\$@"
WRAP
chmod +x "$TB_DIR/ovpn-hosts"

# the openvpn process of a client started through the wrapper (unshare
# and bash exec it: the same process)
ovpn_pid() { tb_pid "$1"; }

# count_log NAME PATTERN
count_log()
{
    local c
    c=$(grep -cF -- "$2" "$TB_DIR/$1.log" 2>/dev/null)
    echo "${c:-0}"
}

# ------------------------------------------------------------------ (a)
A=$(tb_port 1)
tb_log "(a) remote multi.test:$A (2 addresses), no server"
tb_client ca --bin "$TB_DIR/ovpn-hosts" -- --remote multi.test "$A" udp4 \
    --server-probe --connect-timeout 2 --connect-retry 1
for ((i = 0; i < 200; i++)); do
    [ "$(count_log ca "(every remote failed)")" -ge 2 ] && break
    tb__alive ca || break
    sleep 0.1
done
sleep 1
check "(a) two 'every remote failed' phases ran ($(count_log ca "(every remote failed)"))" \
    test "$(count_log ca "(every remote failed)")" -ge 2
check "(a) the client is still running" tb__alive ca
tb_server sa "$A" --local 127.0.0.2
if ms=$(tb_wait_connected ca 40); then
    ok "(a) connected once a server was up on 127.0.0.2 ($ms ms after the start)"
else
    not_ok "(a) not connected after the server came up"
fi
tb_stop ca
tb_stop sa

# ------------------------------------------------------------------ (b)
B=$(tb_port 2)
tb_log "(b) ping-restart with an unpinned connection to multi.test:$B"
tb_server sb "$B" -- --server-probe-reply off --keepalive 1 4
tb_client cb --bin "$TB_DIR/ovpn-hosts" -- --remote multi.test "$B" udp4 \
    --server-probe --connect-retry 1
if tb_wait_connected cb 30 >/dev/null; then
    kill -STOP "$(tb_pid sb)"
    for ((i = 0; i < 150; i++)); do
        [ "$(count_log cb "(reconnect)")" -ge 1 ] && break
        tb__alive cb || break
        sleep 0.1
    done
    sleep 1.5
    check "(b) a 'reconnect' phase ran after the ping-restart" \
        test "$(count_log cb "(reconnect)")" -ge 1
    check "(b) the client is still running after it" tb__alive cb
    kill -CONT "$(tb_pid sb)"
    for ((i = 0; i < 300; i++)); do
        [ "$(count_log cb "Initialization Sequence Completed")" -ge 2 ] && break
        tb__alive cb || break
        sleep 0.1
    done
    check "(b) connected again after SIGCONT" \
        test "$(count_log cb "Initialization Sequence Completed")" -ge 2
else
    not_ok "(b) the client did not connect"
fi
tb_stop cb
tb_stop sb

# ------------------------------------------------------------------ (c)
C=$(tb_port 3)
tb_log "(c) a remote without a route (192.0.2.1) and a live one"
tb_server sc "$C" -- --server-probe-reply 0 50 100
tb_client cc -- --remote 192.0.2.1 "$C" udp4 --remote 127.0.0.1 "$C" udp4 --server-probe
tb_wait_connected cc 20 >/dev/null || true
phase=$(sed -n 's/.*addresses answered in \([0-9]*\) ms.*/\1/p' "$TB_DIR/cc.log" | head -n1)
check "(c) the phase ended without waiting for the deadline (${phase:-none} ms < 500)" \
    bash -c "[ -n '$phase' ] && [ '$phase' -lt 500 ]"
check "(c) one line: 192.0.2.1 unreachable from here ($(count_log cc "unreachable from here"))" \
    test "$(count_log cc "unreachable from here")" -eq 1
check "(c) no 'sending to ... failed' lines" test "$(count_log cc "failed:")" -eq 0
check "(c) ranked: [AF_INET]192.0.2.1:$C unreachable place=2" \
    grep -qF "server-probe: [AF_INET]192.0.2.1:$C unreachable place=2" "$TB_DIR/cc.log"
tb_stop cc
tb_stop sc

# ------------------------------------------------------------------ (d)
tb_log "(d) resolver children"
ip addr add 127.0.0.53/8 dev lo 2>/dev/null || true
tb__spawn dns python3 "$here/dns_stub.py" --addr 127.0.0.53 --mode silent
for ((i = 0; i < 500; i++)); do grep -q listening "$TB_DIR/dns.stderr" 2>/dev/null && break; sleep 0.01; done
D=$(tb_port 4) M=$(tb_port 40)
remotes=()
for k in $(seq 1 12); do remotes+=(--remote "slow$k.example.org" "$D" udp4); done
tb_client cd --bin "$TB_DIR/ovpn-hosts" -- "${remotes[@]}" --server-probe \
    --management 127.0.0.1 "$M" --connect-retry 1
# sample the children during the phase
max_children=0 bad_fds="" samples=0 looks=0
for ((i = 0; i < 80; i++)); do
    op=$(ovpn_pid cd)
    [ -n "$op" ] || { sleep 0.02; continue; }
    # until the wrapper's bash has exec'ed openvpn, its children are
    # the mount commands, not resolvers
    case $(cat /proc/"$op"/comm 2>/dev/null) in
        openvpn*) ;;
        *) sleep 0.01; continue ;;
    esac
    looks=$((looks + 1))
    kids=$(pgrep -P "$op" 2>/dev/null | tr '\n' ' ')
    nk=$(wc -w <<<"$kids")
    [ "$nk" -gt "$max_children" ] && max_children=$nk
    for k in $kids; do
        samples=$((samples + 1))
        fds=$(ls /proc/"$k"/fd 2>/dev/null | sort -n | tr '\n' ' ')
        [ -z "$fds" ] && continue
        # what the child opened itself (the resolver's socket to the name
        # server) is fine; nothing of the parent's may be there
        parent_fds=" $(for f in /proc/"$op"/fd/*; do readlink "$f"; done 2>/dev/null | tr '\n' ' ') "
        for f in $fds; do
            [ "$f" -le 3 ] && continue
            t=$(readlink /proc/"$k"/fd/"$f" 2>/dev/null) || continue
            case $parent_fds in *" $t "*) bad_fds="$bad_fds [$k: fd $f -> $t, the parent's]" ;; esac
        done
        for f in 0 1 2; do
            t=$(readlink /proc/"$k"/fd/$f 2>/dev/null) || continue
            [ "$t" = /dev/null ] || bad_fds="$bad_fds [$k: fd $f -> $t]"
        done
        t=$(readlink /proc/"$k"/fd/3 2>/dev/null) || continue
        case $t in pipe:*) ;; *) bad_fds="$bad_fds [$k: fd 3 -> $t]" ;; esac
    done
    [ "$nk" -ge 1 ] && [ $samples -ge 20 ] && break
    sleep 0.02
done
tb_log "children at once: at most $max_children; $samples child samples in $looks looks at the openvpn process"
if [ "$(tb_series)" = master ]; then
    for ((i = 0; i < 150; i++)); do
        grep -qF "addresses answered in" "$TB_DIR/cd.log" 2>/dev/null && break
        sleep 0.05
    done
    nspent=$(grep -c "not probed: the time for names was spent" "$TB_DIR/cd.log")
    check "(d) master: no child process during the phase ($samples child samples in $looks looks)" \
        test "$samples" -eq 0 -a "$looks" -ge 10
    check "(d) master: one name looked up, the other 11 left for the time for names was spent ($nspent)" \
        test "$nspent" -eq 11
    tb_stop cd
else
check "(d) resolver children were seen ($samples samples)" test "$samples" -gt 0
check "(d) at most 8 children at once ($max_children)" test "$max_children" -le 8
check "(d) each child holds 0-2 on /dev/null, its pipe on 3, nothing of the parent's${bad_fds:+:$bad_fds}" \
    test -z "$bad_fds"
tb_stop cd
# a client SIGKILLed while its children resolve
tb_client ck --bin "$TB_DIR/ovpn-hosts" -- "${remotes[@]}" --server-probe \
    --management 127.0.0.1 "$M" --connect-retry 1
kids=""
for ((i = 0; i < 200; i++)); do
    kids=$(pgrep -P "$(ovpn_pid ck)" 2>/dev/null | tr '\n' ' ')
    [ -n "$kids" ] && break
    sleep 0.01
done
kill -KILL "$(ovpn_pid ck)" 2>/dev/null
sleep 0.3
left=""
for k in $kids; do [ -d /proc/"$k" ] && ! grep -q '^State:.*Z' /proc/"$k"/status 2>/dev/null && left="$left $k"; done
check "(d) children were running when the client was SIGKILLed (${kids:-none})" test -n "$kids"
check "(d) the children die with a SIGKILLed client (left:${left:- none})" test -z "$left"
tb_stop ck
fi
tb_client cd2 -- --remote 127.0.0.1 "$D" udp4 --management 127.0.0.1 "$M" --connect-retry 1
sleep 1
check "(d) a new client binds the same management port at once" \
    bash -c "grep -qF 'MANAGEMENT: TCP Socket listening' '$TB_DIR/cd2.log' && ! grep -qF 'Address already in use' '$TB_DIR/cd2.log'"
tb_stop cd2
tb_stop dns

# NXDOMAIN: a name server that answers at once with NXDOMAIN
tb__spawn nx python3 "$here/dns_stub.py" --addr 127.0.0.53 --mode nxdomain
for ((i = 0; i < 500; i++)); do grep -q listening "$TB_DIR/nx.stderr" 2>/dev/null && break; sleep 0.01; done
tb_client cn --bin "$TB_DIR/ovpn-hosts" -- --remote nx.example.org "$D" udp4 \
    --remote 127.0.0.1 "$D" udp4 --server-probe --connect-retry 1
for ((i = 0; i < 100; i++)); do grep -qF "addresses answered in" "$TB_DIR/cn.log" 2>/dev/null && break; sleep 0.05; done
sed -n '/server-probe: nx.example.org/p' "$TB_DIR/cn.log" | sed 's/^/#   | /'
check "(d) an instant NXDOMAIN says what failed (cannot resolve: ...)" \
    grep -qE "server-probe: nx.example.org:$D not probed: cannot resolve: " "$TB_DIR/cn.log"
check "(d) ... not 'not resolved within'" bash -c "! grep -qF 'not resolved within' '$TB_DIR/cn.log'"
tb_stop cn

# 150 names, ulimit -n 64
remotes=()
for k in $(seq 1 150); do remotes+=(--remote "nx$k.example.org" "$D" udp4); done
(
    ulimit -n 64
    timeout 30 "$TB_DIR/ovpn-hosts" --client --dev null --nobind --ca "$TB_PKI/ca.crt" \
        --cert "$TB_PKI/client.crt" --key "$TB_PKI/client.key" --verb 3 \
        "${remotes[@]}" --server-probe-only >"$TB_DIR/c150.out" 2>"$TB_DIR/c150.err"
)
nwarn=$(grep -cE "cannot (create a pipe|start a resolver|fork)" "$TB_DIR/c150.err")
check "(d) 150 names with ulimit -n 64: at most one resolver warning ($nwarn)" test "$nwarn" -le 1
check "(d) ... and the phase ran to its end" grep -q "^SERVER-PROBE " "$TB_DIR/c150.out"
tb_stop nx

# ------------------------------------------------------------------ (e)
E=$(tb_port 5) ER=$(tb_port 105) E2=$(tb_port 6)
tb_log "(e) forged ICMP errors for a live server"
tb_server se "$E" -- --server-probe-reply 0 50 10
tb_relay re "127.0.0.1:$ER" "127.0.0.1:$E" --delay 150
tb_server se2 "$E2" -- --server-probe-reply 0 50 100
tb__spawn spoof python3 "$here/icmp_spoof.py" --port "$ER" --log "$TB_DIR/spoof.log"
for ((i = 0; i < 500; i++)); do grep -q listening "$TB_DIR/spoof.log" 2>/dev/null && break; sleep 0.01; done
tb_client ce -- --remote 127.0.0.1 "$E2" udp4 --remote 127.0.0.1 "$ER" udp4 --server-probe --verb 4
tb_wait_connected ce 20 >/dev/null || true
sleep 0.2
nspoof=$(grep -c "^forged" "$TB_DIR/spoof.log" 2>/dev/null)
check "(e) the spoofer forged ICMP errors for the probes to :$ER ($nspoof)" test "${nspoof:-0}" -ge 2
check "(e) the client ignored them (logged)" \
    grep -qF "ignoring an ICMP error for [AF_INET]127.0.0.1:$ER that quotes no probe of ours" "$TB_DIR/ce.log"
check "(e) the live server behind them is still ranked first (priority 10)" \
    grep -qE "server-probe: \[AF_INET\]127\.0\.0\.1:$ER rtt=[0-9.]+ms prio=10 weight=50 place=1" "$TB_DIR/ce.log"
check "(e) and connected to" test "$(tb_connected_port ce)" = "$ER"
tb_stop ce

# ------------------------------------------------------------------ (f)
F=$(tb_port 7)
tb_log "(f) multi.test:$F: 127.0.0.1 answers probes but fails TLS, 127.0.0.2 works"
tb_pki_other "$TB_DIR/pki2"
tb_server sf1 "$F" -- --server-probe-reply 0 50 10 \
    --cert "$TB_DIR/pki2/s.crt" --key "$TB_DIR/pki2/s.key"
tb_server sf2 "$F" --local 127.0.0.2 -- --server-probe-reply 0 50 100
tb_client cf --bin "$TB_DIR/ovpn-hosts" -- --remote multi.test "$F" udp4 \
    --server-probe --hand-window 5 --connect-retry 1
if ms=$(tb_wait_connected cf 40); then
    check "(f) the failing address was ranked first (prio 10)" \
        grep -qE "server-probe: \[AF_INET\]127\.0\.0\.1:$F rtt=[0-9.]+ms prio=10" "$TB_DIR/cf.log"
    check "(f) connected to the name's other address 127.0.0.2:$F ($ms ms)" \
        test "$(tb_connected_server cf)" = "127.0.0.2:$F"
    check "(f) without a second phase (one phase: $(count_log cf "server-probe: probing"))" \
        test "$(count_log cf "server-probe: probing")" -eq 1
else
    not_ok "(f) not connected within 40 s ($(count_log cf "server-probe: probing") phases)"
fi
tb_stop cf; tb_stop sf1; tb_stop sf2

# ------------------------------------------------------------------ (g)
G=$(tb_port 8)
tb_log "(g) a client instance ends: the server keeps its descriptor 0"
tb_server sg "$G" -- --server-probe-reply 0 50 100
sgpid=$(tb_pid sg)
fd0_before=$(readlink /proc/"$sgpid"/fd/0 2>/dev/null)
tb_client cg -- --remote 127.0.0.1 "$G" udp4 --explicit-exit-notify 1
tb_wait_connected cg 20 >/dev/null || true
tb_stop cg
for ((i = 0; i < 300; i++)); do
    grep -qE "client-instance exiting|SIGTERM\[soft,remote-exit\]" "$TB_DIR/sg.log" && break
    sleep 0.02
done
sleep 0.3
fd0_after=$(readlink /proc/"$sgpid"/fd/0 2>/dev/null)
check "(g) the server saw the client instance end" \
    grep -qE "client-instance exiting|remote-exit" "$TB_DIR/sg.log"
check "(g) its descriptor 0 is still open (${fd0_before:-none} -> ${fd0_after:-closed})" \
    bash -c "[ -n '$fd0_before' ] && [ '$fd0_before' = '$fd0_after' ]"
tb_stop sg

# ------------------------------------------------------------------ (h)
H=$(tb_port 9)
tb_log "(h) SIGUSR1: the client's restart pause is its --connect-retry"
tb_server sh "$H" -- --server-probe-reply 0 50 100
for cr in 3 default; do
    args=()
    [ "$cr" = default ] || args=(--connect-retry "$cr")
    tb_client "ch$cr" -- --remote 127.0.0.1 "$H" udp4 --server-probe "${args[@]}"
    if tb_wait_connected "ch$cr" 20 >/dev/null; then
        kill -USR1 "$(tb_pid "ch$cr")"
        for ((i = 0; i < 250; i++)); do
            grep -q "Restart pause" "$TB_DIR/ch$cr.log" && break
            sleep 0.02
        done
    fi
    pause=$(sed -n 's/.*Restart pause, \([0-9]*\) second.*/\1/p' "$TB_DIR/ch$cr.log" | head -n1)
    want=$cr
    [ "$cr" = default ] && want=1
    check "(h) --connect-retry $cr: restart pause ${pause:-none} s, want $want (unpatched master and 2.7: 2)" \
        test "${pause:-none}" = "$want"
    tb_stop "ch$cr"
done
tb_stop sh

echo "1..$n"
echo "# $n checks, $fails failed"
[ "$fails" -eq 0 ]
