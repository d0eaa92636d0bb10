#!/bin/bash
# shellcheck disable=SC2317  # helpers run through check()
# SPEC 2 promises about the server that no other test checks:
#   (a) "A TCP server ... never answers": a plain SERVER_PROBE over TCP
#       (2-byte length framing) to a --proto tcp-server --mode server
#       (with --server-probe-reply) gets no PROBE_REPLY; a HARD_RESET on
#       another connection right after is answered (opcode 8);
#   (b) "... a p2p instance never answers": a --tls-server without
#       --mode server gets a probe and no reply; a HARD_RESET from the
#       same socket right after is answered (opcode 8);
#   (c) "... a client never answers": probes to a connected client's
#       bound port, from a fresh port and spoofed from its server's own
#       address (raw socket), get no reply; the client stays connected;
#   (d) --server-probe-reply argument errors (not a number, 65536, a
#       negative number, four arguments): a non-zero exit and the
#       option's own message, never the generic "Unrecognized option";
#       65535 65535 65535 is accepted and advertised;
#   (e) memory: 100000 tls-auth, 100000 tls-crypt and 100000 tls-crypt-v2
#       wrapped probes (spec_tools.py wflood, after 1000 warm-up, >= 80 %
#       answered) do not grow the server's VmRSS by 1 MiB or more: the
#       bound t_server_probe.sh (c) uses for plain probes, about 10 bytes
#       per probe (a leak of one malloc chunk, >= 32 bytes, per probe
#       would be 3 MiB).
# Exit 0 pass, 1 fail, 77 skip. Takes about 60 s.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by lib.sh (tb_port)
TB_PORT_BASE=${TB_PORT_BASE_SPEC_SERVER:-30000}
# shellcheck source=../../testbed/lib.sh
. "$here/../../testbed/lib.sh"

command -v python3 >/dev/null 2>&1 || tb_skip_or_ci_fail "python3 is missing"
tb_setup spec-server server-probe-reply -- "$@"

ST=(timeout 120 python3 "$here/spec_tools.py")
PT=(timeout 60 python3 "$here/probe_tool.py")
T0=$(date +%s)
kv() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"; }
# opt_error RC OUTPUT REGEX: openvpn refused its options: failed (not by
# timeout), said REGEX and not the generic "Unrecognized option" line
opt_error()
{
    [ "$1" -ne 0 ] && [ "$1" -ne 124 ] && grep -qE -- "$3" <<<"$2" &&
        ! grep -qiE "Unrecognized option|no such option" <<<"$2"
}

# ------------------------------------------------------------------ (a)
tb_log "(a) a TCP server"
PA=$(tb_port 1)
if [ "$(tb_series)" = master ]; then
    # master: --server-probe-reply without a UDP listener is a usage error
    [ -n "$TB_PKI" ] || tb_pki
    out=$(timeout 10 "$TB_BIN" --mode server --tls-server --proto tcp-server --port "$PA" \
        --dev null --ca "$TB_PKI/ca.crt" --cert "$TB_PKI/server.crt" --key "$TB_PKI/server.key" \
        --dh none --server-probe-reply 0 50 100 2>&1)
    rc=$?
    check "TCP-only server: --server-probe-reply refused, exit $rc ($(grep -m1 -- "server-probe-reply" <<<"$out"))" \
        opt_error "$rc" "$out" "Options error: --server-probe-reply only works with --mode server and a UDP"
    # 2.7+: one server with two UDP listeners and a TCP one; each UDP
    # socket answers, from itself (the probe tool's socket is connected to
    # the address it probed: a reply from another socket never reaches it)
    PA2=$(tb_port 21) PA3=$(tb_port 22)
    tb_server sm "$PA" -- --local 127.0.0.1 "$PA2" udp4 --local 127.0.0.1 "$PA3" tcp-server \
        --server-probe-reply 0 50 100 --verb 7
    l1=$("${PT[@]}" one --target "127.0.0.1:$PA" --timeout 2)
    l2=$("${PT[@]}" one --target "127.0.0.1:$PA2" --timeout 2)
    lt=$("${ST[@]}" tcp-one --target "127.0.0.1:$PA3" --kind probe --timeout 1.5)
    lr=$("${ST[@]}" tcp-one --target "127.0.0.1:$PA3" --kind reset --timeout 2)
    check "multi-socket server: UDP :$PA answers from :$PA ($l1)" \
        test "$(kv reply "$l1")" = 1 -a "$(kv sid_ok "$l1")" = 1 -a "$(kv prio "$l1")" = 100
    check "multi-socket server: UDP :$PA2 answers from :$PA2 ($l2)" \
        test "$(kv reply "$l2")" = 1 -a "$(kv sid_ok "$l2")" = 1 -a "$(kv prio "$l2")" = 100
    check "multi-socket server: TCP :$PA3 gets no reply to a probe ($lt); a reset right after is answered with opcode 8 ($lr)" \
        test "$(kv reply "$lt")" = 0 -a "$(kv reply "$lr")" = 1 -a "$(kv op "$lr")" = 8
    nrep=$(grep -c "Server probe from client, sending probe reply" "$TB_DIR/sm.log")
    check "multi-socket server: the log shows 2 probe replies ($nrep)" test "$nrep" -eq 2
    tb_stop sm
fi
# (2.6: the option is accepted there, with a warning)
spr=(--server-probe-reply 0 50 100)
[ "$(tb_series)" = master ] && spr=()
tb_server sa "$PA" --proto tcp-server -- "${spr[@]}"
line=$("${ST[@]}" tcp-one --target "127.0.0.1:$PA" --kind probe --timeout 1.5)
ctl=$("${ST[@]}" tcp-one --target "127.0.0.1:$PA" --kind reset --timeout 2)
check "TCP server: a probe over TCP gets no reply ($line); a reset right after is answered with opcode 8 ($ctl)" \
    test "$(kv reply "$line")" = 0 -a "$(kv reply "$ctl")" = 1 -a "$(kv op "$ctl")" = 8
check "TCP server: no 'server probe ... answered' in its log" \
    bash -c "! grep -qiE 'server probe from .* answered|sending probe reply' '$TB_DIR/sa.log'"
tb_stop sa

# ------------------------------------------------------------------ (b)
tb_log "(b) a p2p --tls-server"
PB=$(tb_port 2)
dev="tb$(( $$ % 100000 ))p"
TB_TUNS+=("$dev")
tb__spawn sb "$TB_BIN" --tls-server --proto udp4 --local 127.0.0.1 --lport "$PB" \
    --dev "$dev" --dev-type tun --ifconfig 10.233.7.1 10.233.7.2 --disable-dco \
    --ca "$TB_PKI/ca.crt" --cert "$TB_PKI/server.crt" --key "$TB_PKI/server.key" --dh none \
    --verb 4 --log "$TB_DIR/sb.log"
tb__wait_log sb "link local (bound)" 20 || { tb_tail sb; tb_die "the p2p instance did not start"; }
sleep 0.3
line=$("${ST[@]}" udp-seq --target "127.0.0.1:$PB" --kinds probe,reset --timeout 1.5)
probe=${line%% ; *} reset=${line#* ; }
check "p2p --tls-server: a probe gets no reply ($probe); a reset from the same socket right after is answered with opcode 8 ($reset)" \
    test "$(kv reply "$probe")" = 0 -a "$(kv reply "$reset")" = 1 -a "$(kv op "$reset")" = 8
tb_stop sb

# ------------------------------------------------------------------ (c)
tb_log "(c) a connected client with a bound port"
PC=$(tb_port 3) LC=$(tb_port 4)
tb_server sc "$PC" -- --ping 1
date +%s%N >"$TB_DIR/cc.t0"
tb__spawn cc "$TB_BIN" --client --dev null --local 127.0.0.1 --lport "$LC" \
    --ifconfig-noexec --route-noexec --remote-cert-tls server \
    --ca "$TB_PKI/ca.crt" --cert "$TB_PKI/client.crt" --key "$TB_PKI/client.key" \
    --verb 4 --log "$TB_DIR/cc.log" --remote 127.0.0.1 "$PC" udp4 --ping 1 --server-probe
if tb_wait_connected cc 30 >/dev/null; then
    fresh=$("${PT[@]}" one --target "127.0.0.1:$LC" --timeout 1)
    spoof=$("${PT[@]}" spoof --target "127.0.0.1:$LC" --src-port "$PC" --count 3 --timeout 1.5)
    check "client: a probe from a fresh port gets no reply ($fresh)" test "$(kv reply "$fresh")" = 0
    check "client: 3 probes from its server's address (127.0.0.1:$PC) get no reply ($spoof)" \
        test "$(kv sent "$spoof")" = 3 -a "$(kv replies "$spoof")" = 0 -a "$(kv other "$spoof")" = 0
    sleep 1
    restarts=$(grep -c -E "SIGUSR1\[|Restart pause|process restarting|Assertion failed" "$TB_DIR/cc.log")
    check "client: still running and connected after the probes ($restarts restart lines)" \
        test "$restarts" -eq 0 -a "$(tb__alive cc && echo 1)" = 1
else
    not_ok "client: the bound client did not connect"
    tb_tail cc sc
fi
tb_stop cc
tb_stop sc

# ------------------------------------------------------------------ (d)
tb_log "(d) --server-probe-reply argument errors"
srv_args=(--mode server --tls-server --proto udp4 --port "$(tb_port 5)" --dev tun --dev-type tun
    --topology subnet --ifconfig 10.233.8.1 255.255.255.0 --disable-dco
    --ca "$TB_PKI/ca.crt" --cert "$TB_PKI/server.crt" --key "$TB_PKI/server.key" --dh none)
for spec in "abc|Options error: --server-probe-reply: max-latency-diff 'abc' must be 'off' or an integer from 0 to 65535" \
            "0 65536|Options error: --server-probe-reply: weight '65536' must be 'load' or an integer from 0 to 65535" \
            "0 50 -1|Options error: --server-probe-reply: priority '-1' must be an integer from 0 to 65535" \
            "-5|Options error: --server-probe-reply: max-latency-diff '-5' must be 'off' or an integer from 0 to 65535" \
            "1.5|Options error: --server-probe-reply: max-latency-diff '1.5' must be 'off' or an integer from 0 to 65535" \
            "1 2 3 4|Options error: --server-probe-reply[: ].*(too many|at most 3|extra)"; do
    args=${spec%%|*} want=${spec#*|}
    # shellcheck disable=SC2086
    out=$(timeout 10 "$TB_BIN" "${srv_args[@]}" --server-probe-reply $args 2>&1)
    rc=$?
    check "--server-probe-reply $args: exit $rc != 0, '$want' ($(grep -m1 -iE "server-probe-reply|Unrecognized" <<<"$out" | cut -c1-160))" \
        opt_error "$rc" "$out" "$want"
done
PD=$(tb_port 6)
tb_server sd "$PD" -- --server-probe-reply 65535 65535 65535
line=$("${PT[@]}" one --target "127.0.0.1:$PD" --timeout 2)
check "--server-probe-reply 65535 65535 65535 is accepted and advertised ($line)" \
    test "$(kv mld "$line")" = 65535 -a "$(kv weight "$line")" = 65535 -a "$(kv prio "$line")" = 65535
tb_stop sd

# ------------------------------------------------------------------ (e)
# the plain path's bound (t_server_probe.sh (c)), for every wrap mode
MEM_PROBES=100000
tb_log "(e) memory under $MEM_PROBES tls-auth, tls-crypt and tls-crypt-v2 probes each"
if ! python3 -c 'import cryptography' 2>/dev/null; then
    not_ok "memory (tls-crypt, tls-crypt-v2): python3-cryptography is missing, cannot wrap probes"
else
    k=0
    for wrap in tls-auth tls-crypt tls-crypt-v2; do
        k=$((k + 1))
        P=$(tb_port $((10 + k)))
        case $wrap in
            tls-auth)     key=$TB_PKI/ta.key ;;
            tls-crypt)    key=$TB_PKI/tc.key ;;
            tls-crypt-v2) key=$TB_PKI/v2c.key ;;
        esac
        # --verb 3: no log line per probe
        tb_server "se$k" "$P" --wrap "$wrap" -- --connect-freq-initial 1000000 1 --server-probe-budget 1000000 1 --verb 3
        one=$("${ST[@]}" wone --target "127.0.0.1:$P" --wrap "$wrap" --key "$key" --timeout 2)
        check "$wrap: a wrapped probe is answered and the reply unwraps ($one)" \
            test "$(kv sid_ok "$one")" = 1
        line=$("${ST[@]}" wflood --target "127.0.0.1:$P" --wrap "$wrap" --key "$key" \
               --pid "$(tb_pid "se$k")" --count "$MEM_PROBES" --warmup 1000)
        echo "# memory $wrap: $line"
        growth=$(kv rss_growth_kb "$line") valid=$(kv valid "$line") sent=$(kv sent "$line")
        if [ -n "$growth" ] && tb__alive "se$k" && [ "$growth" -lt 1024 ] &&
           [ "${valid:-0}" -ge $(( ${sent:-1} * 8 / 10 )) ]; then
            ok "$wrap memory: VmRSS $(kv rss_kb_before "$line") kB -> $(kv rss_kb_after "$line") kB (+$growth kB < 1024 kB) over $sent probes, $valid valid replies"
        else
            not_ok "$wrap memory: VmRSS growth < 1024 kB over $MEM_PROBES probes, >= 80 % answered ($line; server alive: $(tb__alive "se$k" && echo yes || echo no))"
        fi
        tb_stop "se$k"
    done
fi

echo "1..$n"
echo "# $n checks, $fails failed, $(( $(date +%s) - T0 )) s"
[ $fails -eq 0 ] || exit 1
exit 0
