#!/bin/bash
# testbed/demo.sh (make demo): what --server-probe changes for a client
# whose first remote is dead.
#
# Four OpenVPN servers on loopback, each behind the UDP delay relay:
#   dead (relay --blackhole), ~150 ms, ~60 ms and ~20 ms RTT.
# The client config lists them in that order: dead first, the nearest last.
#   1. the unpatched 2.6.14 client, default timeouts: it waits out the
#      dead remote (about a minute), then connects to the next one;
#   2. the patched client with --server-probe (when the binary has it):
#      it probes all four, reorders them and connects to the best one.
# Everything runs in a private network namespace on 127.0.0.1 only.
#
# Env: DEMO_TIMEOUT (s, per client, default 180), TB_* (see testbed/lib.sh)
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

tb_need_root
tb_need_bin "$TB_BIN" "$TB_BASELINE"
tb_need_relay
tb_isolate "$@"
tb_init demo

DEMO_TIMEOUT=${DEMO_TIMEOUT:-180}

# ------------------------------------------------------------------------
# demo_parse_probe_lines LOGFILE
#
# >>> ADAPT HERE when the patched client's log format is final. <<<
#
# Reads the ranking lines the patched client logs after its probe phase and
# prints one line per target:   ADDRESS|RTT_MS|PRIO|WEIGHT|PLACE
# with RTT_MS = "no reply" (and PRIO/WEIGHT "-") for a target that did not
# answer. ADDRESS is normalised to 127.0.0.1:PORT / [::1]:PORT.
# Assumed log lines (anywhere in the line, after openvpn's timestamp):
#   server-probe: 127.0.0.1:21001 rtt=20.3ms prio=100 weight=50 place=1
#   server-probe: 127.0.0.1:21004 no reply place=4
DEMO_PROBE_RE_REPLY='server-probe: ([^ ]+) rtt=([0-9.]+) ?ms( lost=[0-9.]+ms)? prio=([0-9]+) weight=([0-9]+) place=([0-9]+)'
DEMO_PROBE_RE_NOREPLY='server-probe: ([^ ]+) no reply place=([0-9]+)'
demo_parse_probe_lines()
{
    local line addr
    while IFS= read -r line; do
        if [[ $line =~ $DEMO_PROBE_RE_REPLY ]]; then
            addr=$(demo_norm_addr "${BASH_REMATCH[1]}")
            echo "$addr|${BASH_REMATCH[2]}|${BASH_REMATCH[4]}|${BASH_REMATCH[5]}|${BASH_REMATCH[6]}"
        elif [[ $line =~ $DEMO_PROBE_RE_NOREPLY ]]; then
            addr=$(demo_norm_addr "${BASH_REMATCH[1]}")
            echo "$addr|no reply|-|-|${BASH_REMATCH[2]}"
        fi
    done <"$1"
}

# "[AF_INET]127.0.0.1:21001" / "[AF_INET6]::1:21001" / "[::1]:21001" -> canonical
demo_norm_addr()
{
    local a=$1
    a=${a#"[AF_INET]"}
    if [[ $a == "[AF_INET6]"* ]]; then
        a=${a#"[AF_INET6]"}
        a="[${a%:*}]:${a##*:}"
    fi
    echo "${a%,}"
}
# ------------------------------------------------------------------------

# the four servers: label, relay one-way delay (ms; "dead" = blackhole),
# the --server-probe-reply values [max-latency-diff weight prio] they
# advertise (used only when the patched binary has that option)
DELAYS=(dead 75 30 10)
RTTS=("dead" "150 ms" "60 ms" "20 ms")
REPLY=("0 50 10" "0 50 200" "0 30 100" "0 70 100")

have_reply=0 have_probe=0
tb_has_opt "$TB_BIN" server-probe-reply && have_reply=1
tb_has_opt "$TB_BIN" server-probe && have_probe=1

is_tty=0
[ -t 1 ] && is_tty=1

hr() { printf '%s\n' "------------------------------------------------------------------------------"; }

echo "OpenVPN server-probe demo"
hr
echo "Four servers on loopback, each behind a UDP delay relay:"
echo "  one dead (blackholed), the others at about 150, 60 and 20 ms RTT."
echo "The client lists them as: dead, 150 ms, 60 ms, 20 ms (the nearest last)."
if [ $have_reply = 1 ]; then
    echo "The servers run the patched openvpn with --server-probe-reply."
else
    echo "The servers run the patched openvpn; it has no --server-probe-reply yet,"
    echo "so they advertise nothing."
fi
echo
echo "setting up ..."
tb_pki
REMOTES=()
declare -A NAME_OF_PORT=()
for i in 0 1 2 3; do
    sport=$(tb_port $((i + 1)))
    rport=$(tb_port $((i + 11)))
    extra=()
    if [ $have_reply = 1 ]; then
        # shellcheck disable=SC2206
        extra=(--server-probe-reply ${REPLY[$i]})
    fi
    tb_server "s$i" "$sport" -- "${extra[@]}"
    if [ "${DELAYS[$i]}" = dead ]; then
        tb_relay "r$i" "127.0.0.1:$rport" "127.0.0.1:$sport" --blackhole
    else
        tb_relay "r$i" "127.0.0.1:$rport" "127.0.0.1:$sport" --delay "${DELAYS[$i]}"
    fi
    REMOTES+=(--remote 127.0.0.1 "$rport" udp4)
    NAME_OF_PORT[$rport]=$i
done

# describe ADDR -> "127.0.0.1:21012 (150 ms)"
describe()
{
    local a=$1 i
    i=${NAME_OF_PORT[${a##*:}]:-}
    if [ -n "$i" ]; then echo "$a (${RTTS[$i]})"; else echo "$a"; fi
}

# client_status NAME: what the client is doing, from its log
client_status()
{
    local log="$TB_DIR/$1.log" last port i line
    if tb_is_connected "$1"; then
        echo "connected"
        return
    fi
    last=$(grep -E 'link remote: |TLS: Initial packet from|TLS Error: TLS key negotiation failed|Peer Connection Initiated|server-probe' "$log" 2>/dev/null | tail -n 1)
    case $last in
        *"link remote:"*)
            port=${last##*:}
            i=${NAME_OF_PORT[$port]:-}
            if [ -n "$i" ] && [ "${DELAYS[$i]}" = dead ]; then
                echo "waiting for 127.0.0.1:$port (dead) to answer: $(( $(tb_count_op "r$i" up 7) - ${RESETS_AT_START[$i]:-0} )) resets sent, no reply"
            else
                echo "trying $(describe "127.0.0.1:$port")"
            fi ;;
        *"Initial packet from"*)
            line=${last##*"from [AF_INET]"}
            echo "TLS handshake with $(describe "${line%%,*}")" ;;
        *"negotiation failed"*)
            echo "gave up on that remote (TLS handshake window expired), next remote" ;;
        *"Peer Connection Initiated"*)
            echo "authenticated, waiting for the pushed options" ;;
        *server-probe*)
            echo "probing the remotes" ;;
        *) if grep -q -- "--server-probe" "$TB_DIR/$1.info" 2>/dev/null; then
               echo "probing all remotes (up to the probe deadline for silent ones)"
           else
               echo "starting"
           fi ;;
    esac
}

declare -A RESETS_AT_START=()
# run_client NAME LABEL [tb_client args]: start a client, show progress,
# wait until it connects (bounded); prints nothing on stdout but progress
run_client()
{
    local name=$1 label=$2 i; shift 2
    # the relay logs are shared by both clients: count from here on
    for i in 0 1 2 3; do
        RESETS_AT_START[$i]=$(tb_count_op "r$i" up 7)
    done
    tb_client "$name" "$@"
    local t0 el last_print=-10 st last_key="" key
    t0=$(date +%s)
    while ! tb_is_connected "$name"; do
        el=$(( $(date +%s) - t0 ))
        if ! tb__alive "$name"; then
            [ $is_tty = 1 ] && printf '\n'
            echo "  $label: the client exited without connecting"
            tb_tail "$name"
            return 1
        fi
        if [ "$el" -ge "$DEMO_TIMEOUT" ]; then
            [ $is_tty = 1 ] && printf '\n'
            echo "  $label: not connected after ${DEMO_TIMEOUT}s, giving up"
            tb_tail "$name"
            return 1
        fi
        st=$(client_status "$name")
        if [ $is_tty = 1 ]; then
            printf '\r  %3ds  %-70.70s' "$el" "$st"
        else
            # not a terminal: a line on every change of activity, and every 10 s
            key=${st//[0-9]/}
            if [ "$key" != "$last_key" ] || [ $((el - last_print)) -ge 10 ]; then
                printf '  %3ds  %s\n' "$el" "$st"
                last_print=$el
                last_key=$key
            fi
        fi
        sleep 0.2
    done
    tb_wait_connected "$name" 1 >/dev/null
    [ $is_tty = 1 ] && printf '\r%-78s\r' ""
    printf '  %s: connected to %s after %s ms\n' "$label" \
        "$(describe "$(tb_connected_server "$name")")" "$(tb_connect_ms "$name")"
    tb_stop "$name"
    return 0
}

hr
echo "1. The unpatched 2.6.14 client, default timeouts."
echo "   Its first remote is dead: it keeps resending its reset there until the"
echo "   TLS handshake window (--hand-window, 60 s) runs out, then moves on."
echo "   This takes about a minute; progress below."
base_ok=0
run_client cbase "baseline client" --bin "$TB_BASELINE" -- "${REMOTES[@]}" && base_ok=1

hr
probe_ok=0
if [ $have_probe = 1 ]; then
    echo "2. The patched client with --server-probe (same config otherwise)."
    run_client cprobe "patched client" --bin "$TB_BIN" -- "${REMOTES[@]}" --server-probe && probe_ok=1
else
    echo "2. the patched client has no --server-probe yet: probing part not available"
fi

# ---- results
declare -A P_RTT=() P_PRIO=() P_WEIGHT=() P_PLACE=()
nprobe=0
if [ $have_probe = 1 ] && [ -f "$TB_DIR/cprobe.log" ]; then
    while IFS='|' read -r a rtt prio weight place; do
        P_RTT[$a]=$rtt P_PRIO[$a]=$prio P_WEIGHT[$a]=$weight P_PLACE[$a]=$place
        nprobe=$((nprobe + 1))
    done < <(demo_parse_probe_lines "$TB_DIR/cprobe.log")
fi

echo
hr
echo "Remotes, in config order"
printf '  %-2s %-17s %-9s %-13s | %s\n' "#" "address" "emulated" "advertised" "probe result (patched client)"
if [ $have_probe = 1 ]; then
    printf '  %-2s %-17s %-9s %-13s | %-9s %-6s %-7s %-5s\n' "" "" "RTT" "prio/weight" "RTT" "prio" "weight" "rank"
else
    printf '  %-2s %-17s %-9s %-13s |\n' "" "" "RTT" "prio/weight"
fi
for i in 0 1 2 3; do
    a="127.0.0.1:$(tb_port $((i + 11)))"
    if [ $have_reply = 1 ]; then
        read -r _ w p <<<"${REPLY[$i]}"
        adv="$p/$w"
    else
        adv="-"
    fi
    if [ $have_probe = 0 ]; then
        pr="not available (no --server-probe yet)"
        printf '  %-2s %-17s %-9s %-13s | %s\n' $((i + 1)) "$a" "${RTTS[$i]}" "$adv" "$pr"
    elif [ -n "${P_PLACE[$a]:-}" ]; then
        rtt=${P_RTT[$a]}
        [ "$rtt" != "no reply" ] && rtt="$rtt ms"
        printf '  %-2s %-17s %-9s %-13s | %-9s %-6s %-7s %-5s\n' $((i + 1)) "$a" "${RTTS[$i]}" "$adv" \
            "$rtt" "${P_PRIO[$a]}" "${P_WEIGHT[$a]}" "${P_PLACE[$a]}"
    else
        printf '  %-2s %-17s %-9s %-13s | %s\n' $((i + 1)) "$a" "${RTTS[$i]}" "$adv" \
            "no ranking line found in the client log"
    fi
done
if [ $have_probe = 1 ] && [ $nprobe = 0 ]; then
    echo "  (the patched client logged no line demo_parse_probe_lines understands;"
    echo "   see ${TB_DIR#"$TB_TOP"/}/cprobe.log and adapt the parser in testbed/demo.sh)"
fi

echo
printf '  %-34s %-28s %s\n' "client" "ended on" "time to connect"
if [ $base_ok = 1 ]; then
    bms=$(tb_connect_ms cbase)
    printf '  %-34s %-28s %8s ms\n' "baseline 2.6.14" "$(describe "$(tb_connected_server cbase)")" "$bms"
else
    printf '  %-34s %-28s %s\n' "baseline 2.6.14" "-" "did not connect"
fi
if [ $have_probe = 0 ]; then
    printf '  %-34s %-28s %s\n' "patched, --server-probe" "-" "not available"
elif [ $probe_ok = 1 ]; then
    pms=$(tb_connect_ms cprobe)
    printf '  %-34s %-28s %8s ms\n' "patched, --server-probe" "$(describe "$(tb_connected_server cprobe)")" "$pms"
else
    printf '  %-34s %-28s %s\n' "patched, --server-probe" "-" "did not connect"
fi
if [ $base_ok = 1 ] && [ $probe_ok = 1 ] && [ "${pms:-0}" -gt 0 ]; then
    echo
    awk -v b="$bms" -v p="$pms" 'BEGIN { printf "  ratio (baseline time / probing client time): %.1fx  (%d ms / %d ms)\n", b / p, b, p }'
else
    echo
    echo "  ratio: n/a (needs both clients connected)"
fi
hr
echo "logs: ${TB_DIR#"$TB_TOP"/}/"
[ $base_ok = 1 ] || exit 1
[ $have_probe = 0 ] || [ $probe_ok = 1 ] || exit 1
exit 0
