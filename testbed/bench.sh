#!/bin/bash
# testbed/bench.sh (make bench): patched vs baseline, side by side.
#
#  (a) dead first, 4 remotes (blackhole, 150, 60, 20 ms RTT): time to
#      connect, baseline vs patched (--server-probe when the binary has it,
#      else the patched client without it, labelled so);
#  (b) one remote at 200 ms RTT: no probing vs --server-probe vs
#      --server-probe with the one-RTT shortcut defeated by a relay rebind
#      between probe and connect (udprelay --rebind-after-packets 1),
#      answered by the server's new challenge, and with that challenge
#      dropped (--drop-unasked-resets: the client falls back);
#      in ms and in RTTs;
#  (c) server cost: CPU per stateless reply (HMAC-cookie reset vs probe
#      reply; N crafted packets from testbed/pktgen.py at a server with
#      --connect-freq-initial 1000000 1) and the server's VmRSS before and
#      after 100000 probes.
#  (d) failover: a closed port (ICMP port unreachable) before a 20 ms
#      server, against a blackhole: probe phase and connect time; and the
#      reconnect case: servers A (20 ms, prio 10), B (60 ms, prio 20), C
#      (150 ms, prio 30), clients with --keepalive 1 4 connected to A; A
#      and B are stopped at the same moment; time from the kill to
#      "Initialization Sequence Completed" on C, for the patched client
#      (probes again after the ping-restart), the first version of the
#      series (BENCH_V1_BIN, if built: probes only once) and unpatched
#      2.6.14.
#  (e) probe memory: the dead-first remotes of (a) on a second start with
#      --server-probe-persist; two unpatched servers (baseline client,
#      patched cold, patched on a second start with the file); the phase
#      of a re-probe after SIGUSR1 with the blackholed remote; each also
#      for the series without the memory (BENCH_NOMEM_BIN, default
#      build/bin/openvpn-nomem, from make nomem) when it is built.
#  (f) the field (tests/e2e/t_field.sh): kill-switch reconnect with
#      --persist-tun and redirect-gateway (IPv4, IPv6), without
#      persist-tun, NAT rebind between probe and connect, upstream's sample
#      configs; unpatched and patched in the same run (BENCH_FIELD=0 skips).
# Rows that need a feature the binary lacks print "n/a (feature not present)".
# Results: a markdown table in build/bench/results.md (printed too).
#
#   testbed/bench.sh           full run
#   testbed/bench.sh --smoke   one quick run of each row, small N (< 2 min),
#                              written to build/bench/smoke.md; not a timing
#
# Env: BENCH_RUNS (connect benches, default 3), BENCH_RUNS_SLOW (runs that
# wait out the dead remote, ~1 min each, default 1), BENCH_N (packets per
# CPU run, default 20000), BENCH_RSS_N (probes for the RSS row, 100000),
# TB_* (testbed/lib.sh). The slow runs go on in the background while the
# other rows are measured: they only wait for a 60 s timer.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

SMOKE=0
for a in "$@"; do
    case $a in
        --smoke) SMOKE=1 ;;
        -h|--help) sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//; /^set -u/d'; exit 0 ;;
        *) echo "bench.sh: unknown argument $a" >&2; exit 2 ;;
    esac
done

tb_need_root
tb_need_bin "$TB_BIN" "$TB_BASELINE"
tb_need_relay
tb_isolate "$@"

if [ $SMOKE = 1 ]; then
    RUNS=1 RUNS_SLOW=1 N=${BENCH_N:-2000} RSS_N=${BENCH_RSS_N:-5000} CPU_RUNS=1
    OUT="$TB_TOP/build/bench/smoke.md"
    tb_init bench-smoke
else
    RUNS=${BENCH_RUNS:-3} RUNS_SLOW=${BENCH_RUNS_SLOW:-1}
    N=${BENCH_N:-20000} RSS_N=${BENCH_RSS_N:-100000} CPU_RUNS=${BENCH_CPU_RUNS:-3}
    OUT="$TB_TOP/build/bench/results.md"
    tb_init bench
fi
mkdir -p "$(dirname "$OUT")"
PKTGEN="$here/pktgen.py"
SLOW_TIMEOUT=200     # s, bound for a client that waits out the dead remote
FAST_TIMEOUT=60      # s, bound for any other connect
NA="n/a (feature not present)"

have_probe=0 have_reply=0
tb_has_opt "$TB_BIN" server-probe && have_probe=1
tb_has_opt "$TB_BIN" server-probe-reply && have_reply=1

say() { printf '[bench %3ds] %s\n' "$(( $(date +%s) - T_START ))" "$*"; }
T_START=$(date +%s)

# median of the arguments (integers); empty when none
median()
{
    [ $# -gt 0 ] || return 0
    printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END {
        if (NR % 2) print v[(NR + 1) / 2]; else print int((v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}

tb_pki

# ---- servers
# (a) four patched servers behind relays: dead, 75, 30, 10 ms one way
A_DELAYS=(dead 75 30 10)
A_RTT=(dead 150 60 20)
A_REMOTES=()
for i in 0 1 2 3; do
    sp=$(tb_port $((i + 1))) rp=$(tb_port $((i + 11)))
    tb_server "as$i" "$sp"
    if [ "${A_DELAYS[$i]}" = dead ]; then
        tb_relay "ar$i" "127.0.0.1:$rp" "127.0.0.1:$sp" --blackhole
    else
        tb_relay "ar$i" "127.0.0.1:$rp" "127.0.0.1:$sp" --delay "${A_DELAYS[$i]}"
    fi
    A_REMOTES+=(--remote 127.0.0.1 "$rp" udp4)
done
# (b) one patched server at 200 ms RTT, plus a rebinding relay to it
B_SP=$(tb_port 5) B_RP=$(tb_port 15) B_RBP=$(tb_port 16)
tb_server bs "$B_SP"
tb_relay br "127.0.0.1:$B_RP" "127.0.0.1:$B_SP" --delay 100
tb_relay brb "127.0.0.1:$B_RBP" "127.0.0.1:$B_SP" --delay 100 --rebind-after-packets 1
# the same, and the server's new challenge dropped: a server that does not
# answer the rebound third packet, so the client falls back
B_RDP=$(tb_port 17)
tb_relay brd "127.0.0.1:$B_RDP" "127.0.0.1:$B_SP" --delay 100 --rebind-after-packets 1 --drop-unasked-resets

# ---- (a) slow runs in the background: baseline, and patched without probing
SLOW_CLIENTS=()
for ((r = 1; r <= RUNS_SLOW; r++)); do
    tb_client "a_base_$r" --bin "$TB_BASELINE" -- "${A_REMOTES[@]}"
    SLOW_CLIENTS+=("a_base_$r")
    if [ $have_probe = 0 ]; then
        tb_client "a_patched_$r" --bin "$TB_BIN" -- "${A_REMOTES[@]}"
        SLOW_CLIENTS+=("a_patched_$r")
    fi
done
say "(a) started ${#SLOW_CLIENTS[@]} client(s) that wait out the dead remote (~60 s each, in parallel)"

# connect_runs PREFIX RUNS TIMEOUT [tb_client args]: sequential runs; sets
# RUNS_OUT to the connect times (ms) of the successful runs, space separated
# (no $(...): the library's processes must belong to the main shell)
# A failed run ends the series (the next ones would most likely fail the
# same way, each after the full timeout). With RELAY set, RESETS_OUT is the
# number of P_CONTROL_HARD_RESET_CLIENT_V2 the clients sent through it, per
# successful run (0 = every run took the one-RTT shortcut).
connect_runs()
{
    local prefix=$1 runs=$2 limit=$3; shift 3
    local r ms out=() r0=0
    [ -n "${RELAY:-}" ] && r0=$(tb_count_op "$RELAY" up 7)
    for ((r = 1; r <= runs; r++)); do
        # @LPORT@: a local port of its own per run (a reused source port
        # would meet the server's instance of the previous run)
        tb_client "${prefix}_$r" "${@//@LPORT@/$(tb_port $((20 + r)))}"
        if ms=$(tb_wait_connected "${prefix}_$r" "$limit" 2>>"$TB_DIR/failures.log"); then
            out+=("$ms")
            tb_stop "${prefix}_$r"
        else
            tb_stop "${prefix}_$r"
            echo "# ${prefix}: run $r failed, no further runs" >>"$TB_DIR/failures.log"
            break
        fi
    done
    RUNS_OUT="${out[*]}"
    RESETS_OUT="-"
    if [ -n "${RELAY:-}" ] && [ ${#out[@]} -gt 0 ]; then
        RESETS_OUT=$(awk -v d="$(( $(tb_count_op "$RELAY" up 7) - r0 ))" -v n=${#out[@]} \
            'BEGIN { printf "%.3g", d / n }')
    fi
}

# ---- (b) one remote at 200 ms RTT
declare -A B_MS=() B_RESETS=()
say "(b) 200 ms RTT: baseline, no probing ($RUNS runs)"
RELAY=br connect_runs b_base "$RUNS" $FAST_TIMEOUT --bin "$TB_BASELINE" -- --remote 127.0.0.1 "$B_RP" udp4
B_MS[base]=$RUNS_OUT B_RESETS[base]=$RESETS_OUT
say "(b) 200 ms RTT: patched, no probing ($RUNS runs)"
RELAY=br connect_runs b_patched "$RUNS" $FAST_TIMEOUT --bin "$TB_BIN" -- --remote 127.0.0.1 "$B_RP" udp4
B_MS[patched]=$RUNS_OUT B_RESETS[patched]=$RESETS_OUT
if [ $have_probe = 1 ]; then
    say "(b) 200 ms RTT: patched, --server-probe ($RUNS runs)"
    RELAY=br connect_runs b_probe "$RUNS" $FAST_TIMEOUT --bin "$TB_BIN" -- --remote 127.0.0.1 "$B_RP" udp4 --server-probe
    B_MS[probe]=$RUNS_OUT B_RESETS[probe]=$RESETS_OUT
    say "(b) 200 ms RTT: patched, --server-probe without the shortcut (client binds --lport) ($RUNS runs)"
    RELAY=br connect_runs b_noshort "$RUNS" $FAST_TIMEOUT --bin "$TB_BIN" --bind -- --remote 127.0.0.1 "$B_RP" udp4 --server-probe --lport @LPORT@
    B_MS[noshort]=$RUNS_OUT B_RESETS[noshort]=$RESETS_OUT
    say "(b) 200 ms RTT: patched, --server-probe, rebind between probe and connect ($RUNS runs)"
    RELAY=brb connect_runs b_rebind "$RUNS" $FAST_TIMEOUT --bin "$TB_BIN" -- --remote 127.0.0.1 "$B_RBP" udp4 --server-probe
    B_MS[rebind]=$RUNS_OUT B_RESETS[rebind]=$RESETS_OUT
    say "(b) 200 ms RTT: patched, --server-probe, rebind, the server's new challenge dropped ($RUNS runs)"
    RELAY=brd connect_runs b_rebind_fb "$RUNS" $FAST_TIMEOUT --bin "$TB_BIN" -- --remote 127.0.0.1 "$B_RDP" udp4 --server-probe
    B_MS[rebind_fb]=$RUNS_OUT B_RESETS[rebind_fb]=$RESETS_OUT
fi

# ---- (a) fast runs: patched with --server-probe
A_PATCHED=""
if [ $have_probe = 1 ]; then
    say "(a) dead first: patched, --server-probe ($RUNS runs)"
    connect_runs a_probe "$RUNS" $FAST_TIMEOUT --bin "$TB_BIN" -- "${A_REMOTES[@]}" --server-probe
    A_PATCHED=$RUNS_OUT
fi

# ---- (c) server cost
# cpu_cost NAME BIN KIND: CPU_RUNS pktgen runs of N packets at a fresh
# server; sets COST_OUT to "us_per_reply(stat) us_per_reply(schedstat)
# replies sent", summed over the runs
cpu_cost()
{
    local name=$1 bin=$2 kind=$3 port line r
    port=$(tb_port $((30 + ${#CPU_SRV[@]})))
    CPU_SRV+=("$name")
    local pb=()
    tb_has_opt "$bin" server-probe-budget && pb=(--server-probe-budget 1000000 1)
    tb_server "$name" "$port" --bin "$bin" -- --connect-freq-initial 1000000 1 "${pb[@]}" --verb 1
    local ticks=0 sched=0 valid=0 sent=0 hz=100 has_sched=1
    for ((r = 1; r <= CPU_RUNS; r++)); do
        line=$(python3 "$PKTGEN" --target "127.0.0.1:$port" --kind "$kind" \
               --count "$N" --pid "$(tb_pid "$name")" 2>&1)
        echo "$name run $r: $line" >>"$TB_DIR/pktgen.log"
        ticks=$((ticks + $(kv cpu_ticks "$line" 0)))
        valid=$((valid + $(kv valid "$line" 0)))
        sent=$((sent + $(kv sent "$line" 0)))
        hz=$(kv clk_tck "$line" 100)
        if [ -n "$(kv cpu_ns_sched "$line")" ]; then
            sched=$((sched + $(kv cpu_ns_sched "$line")))
        else
            has_sched=0
        fi
    done
    tb_stop "$name"
    if [ $valid -eq 0 ]; then
        COST_OUT="- - 0 $sent"
        return
    fi
    COST_OUT=$(awk -v t="$ticks" -v hz="$hz" -v v="$valid" -v s="$sched" -v hs="$has_sched" -v n="$sent" \
        'BEGIN { printf "%.2f %s %d %d\n", t * 1e6 / hz / v, (hs ? sprintf("%.2f", s / 1e3 / v) : "-"), v, n }')
}
# kv KEY LINE [DEFAULT]: value of KEY=VALUE in a pktgen output line
kv()
{
    local v
    v=$(sed -n "s/.*\(^\| \)$1=\([^ ]*\).*/\2/p" <<<"$2")
    echo "${v:-${3:-}}"
}
CPU_SRV=()

say "(c) server CPU per HMAC-cookie reset, baseline server (${CPU_RUNS}x$N)"
cpu_cost cs_base "$TB_BASELINE" reset
C_RESET_BASE=$COST_OUT
say "(c) server CPU per HMAC-cookie reset, patched server (${CPU_RUNS}x$N)"
cpu_cost cs_patched "$TB_BIN" reset
C_RESET_PATCHED=$COST_OUT

# does the patched server answer probes at all?
PROBE_PORT=$(tb_port 40)
PB=()
tb_has_opt "$TB_BIN" server-probe-budget && PB=(--server-probe-budget 1000000 1)
tb_server cs_probe "$PROBE_PORT" -- --connect-freq-initial 1000000 1 "${PB[@]}" --verb 1
PROBE_ANSWERS=0
line=$(python3 "$PKTGEN" --target "127.0.0.1:$PROBE_PORT" --kind probe --count 5 --timeout 1 2>&1)
echo "probe check: $line" >>"$TB_DIR/pktgen.log"
[ "$(kv valid "$line" 0)" -gt 0 ] && PROBE_ANSWERS=1
C_PROBE="" RSS_BEFORE="" RSS_AFTER="" RSS_REPLIES=""
if [ $PROBE_ANSWERS = 1 ]; then
    tb_stop cs_probe
    say "(c) server CPU per probe reply, patched server (${CPU_RUNS}x$N)"
    cpu_cost cs_probe2 "$TB_BIN" probe
    C_PROBE=$COST_OUT
    # RSS before/after RSS_N probes, on a fresh server
    tb_server cs_rss "$(tb_port 41)" -- --connect-freq-initial 1000000 1 "${PB[@]}" --verb 1
    say "(c) server VmRSS around $RSS_N probes"
    line=$(python3 "$PKTGEN" --target "127.0.0.1:$(tb_port 41)" --kind probe \
           --count "$RSS_N" --window 64 --pid "$(tb_pid cs_rss)" 2>&1)
    echo "rss: $line" >>"$TB_DIR/pktgen.log"
    RSS_BEFORE=$(kv rss_kb_before "$line") RSS_AFTER=$(kv rss_kb_after "$line")
    RSS_REPLIES=$(kv valid "$line" 0)
    tb_stop cs_rss
else
    say "(c) the patched server does not answer probes: probe rows n/a"
    tb_stop cs_probe
fi
# reference: RSS around as many resets
tb_server cs_rss_reset "$(tb_port 42)" -- --connect-freq-initial 1000000 1 --verb 1
line=$(python3 "$PKTGEN" --target "127.0.0.1:$(tb_port 42)" --kind reset \
       --count "$RSS_N" --window 64 --pid "$(tb_pid cs_rss_reset)" 2>&1)
echo "rss reset: $line" >>"$TB_DIR/pktgen.log"
RSSR_BEFORE=$(kv rss_kb_before "$line") RSSR_AFTER=$(kv rss_kb_after "$line")
RSSR_REPLIES=$(kv valid "$line" 0)
tb_stop cs_rss_reset

# ---- (d) failover
V1_BIN=${BENCH_V1_BIN:-$TB_TOP/build/bin/openvpn-v1}
declare -A D_MS=()
D_CLOSED=$(tb_port 40) D_BH_SP=$(tb_port 41) D_BH=$(tb_port 42) D_20_SP=$(tb_port 43) D_20=$(tb_port 44)
tb_server ds20 "$D_20_SP"
tb_relay dr20 "127.0.0.1:$D_20" "127.0.0.1:$D_20_SP" --delay 10
tb_relay drbh "127.0.0.1:$D_BH" "127.0.0.1:$D_20_SP" --blackhole
# phase_of CLIENT: the probe phase length in ms, from its summary line
phase_of() { grep -F "addresses answered in" "$TB_DIR/$1.log" 2>/dev/null | head -n1 | sed -n 's/.* answered in \([0-9]*\) ms.*/\1/p'; }
D_PH_REF=() D_PH_BH=()
if [ $have_probe = 1 ]; then
    say "(d) refused: [closed port, 20 ms] and [blackhole, 20 ms], --server-probe ($RUNS runs each)"
    for ((r = 1; r <= RUNS; r++)); do
        connect_runs "d_ref$r" 1 $FAST_TIMEOUT --bin "$TB_BIN" -- --remote 127.0.0.1 "$D_CLOSED" udp4 --remote 127.0.0.1 "$D_20" udp4 --server-probe
        D_MS[ref]+=" $RUNS_OUT"; D_PH_REF+=("$(phase_of "d_ref${r}_1")")
        connect_runs "d_bh$r" 1 $FAST_TIMEOUT --bin "$TB_BIN" -- --remote 127.0.0.1 "$D_BH" udp4 --remote 127.0.0.1 "$D_20" udp4 --server-probe
        D_MS[bh]+=" $RUNS_OUT"; D_PH_BH+=("$(phase_of "d_bh${r}_1")")
    done
fi
say "(d) refused: [closed port, 20 ms], baseline (1 run)"
connect_runs d_refbase 1 $SLOW_TIMEOUT --bin "$TB_BASELINE" -- --remote 127.0.0.1 "$D_CLOSED" udp4 --remote 127.0.0.1 "$D_20" udp4
D_MS[refbase]=$RUNS_OUT

# reconnect: one A/B/C triple per client kind, all killed at once
D_KINDS=(patched baseline)
[ -x "$V1_BIN" ] && D_KINDS=(patched v1 baseline)
k=0
for kind in "${D_KINDS[@]}"; do
    case $kind in
        patched) bin=$TB_BIN; extra=(--server-probe) ;;
        v1) bin=$V1_BIN; extra=(--server-probe) ;;
        baseline) bin=$TB_BASELINE; extra=() ;;
    esac
    [ $have_probe = 0 ] && [ "$kind" != baseline ] && continue
    remotes=()
    for i in 0 1 2; do
        sp=$(tb_port $((50 + 10 * k + i))) rp=$(tb_port $((55 + 10 * k + i)))
        tb_server "dsv_${kind}_$i" "$sp" -- --server-probe-reply 0 50 $((10 * (i + 1))) --keepalive 1 4
        tb_relay "drv_${kind}_$i" "127.0.0.1:$rp" "127.0.0.1:$sp" --delay "$(echo "10 30 75" | cut -d' ' -f$((i + 1)))"
        remotes+=(--remote 127.0.0.1 "$rp" udp4)
    done
    eval "D_C_$kind=127.0.0.1:$(tb_port $((55 + 10 * k + 2)))"
    tb_client "dc_$kind" --bin "$bin" -- "${remotes[@]}" "${extra[@]}" --keepalive 1 4
    k=$((k + 1))
done
for kind in "${D_KINDS[@]}"; do
    [ $have_probe = 0 ] && [ "$kind" != baseline ] && continue
    tb_wait_connected "dc_$kind" $FAST_TIMEOUT >/dev/null 2>>"$TB_DIR/failures.log"
done
sleep 2
say "(d) reconnect: stopping A and B of every triple"
D_KILL_NS=$(date +%s%N)
for kind in "${D_KINDS[@]}"; do
    for i in 0 1; do kill -TERM "$(tb_pid "dsv_${kind}_$i")" 2>/dev/null; done
done
for kind in "${D_KINDS[@]}"; do
    for i in 0 1; do tb_stop "dsv_${kind}_$i"; done
done
for ((w = 0; w < SLOW_TIMEOUT * 10; w++)); do
    done_all=1
    for kind in "${D_KINDS[@]}"; do
        [ $have_probe = 0 ] && [ "$kind" != baseline ] && continue
        [ "$(grep -cF 'Initialization Sequence Completed' "$TB_DIR/dc_$kind.log" 2>/dev/null)" -ge 2 ] || done_all=0
    done
    [ $done_all = 1 ] && break
    sleep 0.1
done
for kind in "${D_KINDS[@]}"; do
    line=$(grep -F 'Initialization Sequence Completed' "$TB_DIR/dc_$kind.log" 2>/dev/null | sed -n 2p)
    ns=$(tb__logtime_ns "$line")
    if [ -n "$ns" ]; then
        D_MS[re_$kind]=$(( (ns - D_KILL_NS) / 1000000 ))
        D_MS[re_${kind}_on]=$(grep -F 'Peer Connection Initiated' "$TB_DIR/dc_$kind.log" | tail -n1 | sed -n 's/.*\[AF_INET\]\([0-9.:]*\).*/\1/p')
    fi
    tb_stop "dc_$kind"
done

# ---- (e) probe memory (issue 19)
have_mem=0
tb_has_opt "$TB_BIN" server-probe-persist && have_mem=1
NOMEM_BIN=${BENCH_NOMEM_BIN:-$TB_TOP/build/bin/openvpn-nomem}
[ -x "$NOMEM_BIN" ] && tb_has_opt "$NOMEM_BIN" server-probe || NOMEM_BIN=""
declare -A E_MS=() E_PH=()
# the phase lengths (ms) of the Nth phase of each client PREFIX_1..RUNS
phases_of()
{
    local prefix=$1 nth=$2 r out=()
    for ((r = 1; r <= RUNS; r++)); do
        out+=("$(sed -n 's/.* answered in \([0-9]*\) ms.*/\1/p' "$TB_DIR/${prefix}_$r.log" 2>/dev/null | sed -n "${nth}p")")
    done
    echo "${out[*]}"
}
E_U1=$(tb_port 6) E_U2=$(tb_port 7)
tb_server eu1 "$E_U1" --bin "$TB_BASELINE"
tb_server eu2 "$E_U2" --bin "$TB_BASELINE"
E_UREMOTES=(--remote 127.0.0.1 "$E_U1" udp4 --remote 127.0.0.1 "$E_U2" udp4)
say "(e) unpatched servers: baseline client, patched cold ($RUNS runs each)"
connect_runs e_ubase "$RUNS" $FAST_TIMEOUT --bin "$TB_BASELINE" -- "${E_UREMOTES[@]}"
E_MS[ubase]=$RUNS_OUT
if [ $have_probe = 1 ]; then
    connect_runs e_ucold "$RUNS" $FAST_TIMEOUT --bin "$TB_BIN" -- "${E_UREMOTES[@]}" --server-probe
    E_MS[ucold]=$RUNS_OUT E_PH[ucold]=$(phases_of e_ucold 1)
fi
if [ $have_mem = 1 ]; then
    say "(e) with --server-probe-persist: a first run writes the file, then $RUNS runs from it"
    EF="$TB_DIR/bench-memory" EFU="$TB_DIR/bench-memory-unpatched"
    rm -f "$EF" "$EFU"
    tb_client e_warm -- "${A_REMOTES[@]}" --server-probe --server-probe-persist "$EF"
    tb_wait_connected e_warm $FAST_TIMEOUT >/dev/null 2>&1
    tb_stop e_warm
    connect_runs e_file "$RUNS" $FAST_TIMEOUT --bin "$TB_BIN" -- "${A_REMOTES[@]}" --server-probe --server-probe-persist "$EF"
    E_MS[file]=$RUNS_OUT E_PH[file]=$(phases_of e_file 1)
    tb_client e_uwarm -- "${E_UREMOTES[@]}" --server-probe --server-probe-persist "$EFU"
    tb_wait_connected e_uwarm $FAST_TIMEOUT >/dev/null 2>&1
    tb_stop e_uwarm
    connect_runs e_ufile "$RUNS" $FAST_TIMEOUT --bin "$TB_BIN" -- "${E_UREMOTES[@]}" --server-probe --server-probe-persist "$EFU"
    E_MS[ufile]=$RUNS_OUT E_PH[ufile]=$(phases_of e_ufile 1)
fi
# re-probe on reconnect (SIGUSR1) with the blackholed remote: the second phase
reprobe_runs()
{
    local prefix=$1 bin=$2 r i
    for ((r = 1; r <= RUNS; r++)); do
        tb_client "${prefix}_$r" --bin "$bin" -- "${A_REMOTES[@]}" --server-probe
        tb_wait_connected "${prefix}_$r" $FAST_TIMEOUT >/dev/null 2>&1
        kill -USR1 "$(tb_pid "${prefix}_$r")" 2>/dev/null
        for ((i = 0; i < 1000; i++)); do
            [ "$(grep -c 'Initialization Sequence Completed' "$TB_DIR/${prefix}_$r.log")" -ge 2 ] && break
            sleep 0.01
        done
        tb_stop "${prefix}_$r"
    done
}
if [ $have_probe = 1 ]; then
    say "(e) re-probe on reconnect with a blackholed remote ($RUNS runs per binary)"
    reprobe_runs e_re "$TB_BIN"
    E_PH[re]=$(phases_of e_re 2)
    E_PH[cold]=$(phases_of a_probe 1)
    if [ -n "$NOMEM_BIN" ]; then
        reprobe_runs e_renm "$NOMEM_BIN"
        E_PH[renm]=$(phases_of e_renm 2)
        connect_runs e_nmcold "$RUNS" $FAST_TIMEOUT --bin "$NOMEM_BIN" -- "${A_REMOTES[@]}" --server-probe
        E_MS[nmcold]=$RUNS_OUT E_PH[nmcold]=$(phases_of e_nmcold 1)
        connect_runs e_unm "$RUNS" $FAST_TIMEOUT --bin "$NOMEM_BIN" -- "${E_UREMOTES[@]}" --server-probe
        E_MS[unm]=$RUNS_OUT
    fi
fi

# ---- (a) collect the slow runs
say "(a) waiting for the dead-first clients (bounded ${SLOW_TIMEOUT}s from their start)"
A_BASE=() A_NOPROBE=()
declare -A A_SRV=()
for c in "${SLOW_CLIENTS[@]}"; do
    if ms=$(tb_wait_connected "$c" $SLOW_TIMEOUT 2>>"$TB_DIR/failures.log"); then
        case $c in
            a_base_*) A_BASE+=("$ms") ;;
            *) A_NOPROBE+=("$ms") ;;
        esac
        A_SRV[$c]=$(tb_connected_server "$c")
    fi
    tb_stop "$c"
done
A_PROBE_SRV=""
[ $have_probe = 1 ] && A_PROBE_SRV=$(tb_connected_server a_probe_1 2>/dev/null)

# ---- table
rtt_of_port()
{
    local p=${1##*:} i
    for i in 0 1 2 3; do
        [ "$p" = "$(tb_port $((i + 11)))" ] && { echo "${A_RTT[$i]} ms"; return; }
    done
    echo "?"
}
# row_ms "times..." -> "median (min..max, n runs)"
fmt_ms()
{
    # shellcheck disable=SC2206
    local v=($1)
    [ ${#v[@]} -gt 0 ] || { echo "failed (see logs)"; return; }
    local m lo hi
    m=$(median "${v[@]}")
    lo=$(printf '%s\n' "${v[@]}" | sort -n | head -n 1)
    hi=$(printf '%s\n' "${v[@]}" | sort -n | tail -n 1)
    if [ ${#v[@]} -eq 1 ]; then echo "$m"; else echo "$m ($lo..$hi, ${#v[@]} runs)"; fi
}
# shellcheck disable=SC2086
med_of() { local m; m=$(median $1); echo "${m:-}"; }
ratio()
{
    [ -n "$1" ] && [ -n "$2" ] && [ "$2" -gt 0 ] || { echo "-"; return; }
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'
}
rtts() { [ -n "$1" ] && awk -v m="$1" 'BEGIN { printf "%.1f", m / 200 }' || echo "-"; }

# ---- (f) the field bed: client, NAT router and servers in namespaces
# (tests/e2e/t_field.sh, patched and unpatched in its own run); its table
F_TABLE="" F_RC=""
if [ "${BENCH_FIELD:-1}" = 1 ] && [ $SMOKE = 0 ]; then
    say "(f) field: client, NAT router, servers in namespaces (tests/e2e/t_field.sh, ~3 min)"
    F_OUT=$(TB_BIN="$TB_BIN" TB_BASELINE="$TB_BASELINE" TB_ROOT="$TB_ROOT" \
        "$TB_TOP/tests/e2e/t_field.sh" 2>&1)
    F_RC=$?
    F_TABLE=$(grep '^# |' <<<"$F_OUT" | sed 's/^# //')
    grep -E '^(ok|not ok|# [0-9]+ checks)' <<<"$F_OUT" >"$TB_DIR/field.tap"
fi

{
    echo "# server-probe bench$([ $SMOKE = 1 ] && echo " (smoke run: one run per row, small N; not a timing)")"
    echo
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), host: $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- patched: \`${TB_BIN#"$TB_TOP"/}\` ($(git -C "$TB_TOP/build/openvpn" log -1 --format='%h %s' 2>/dev/null || echo '?'));" \
         "--server-probe: $([ $have_probe = 1 ] && echo yes || echo no), --server-probe-reply: $([ $have_reply = 1 ] && echo yes || echo no)"
    echo "- baseline: \`${TB_BIN#"$TB_TOP"/}-baseline\` (unpatched 2.6.14)"
    echo "- connect time: client process start to \"Initialization Sequence Completed\" (log timestamp); medians"
    echo
    echo "## (a) dead first: 4 remotes (blackhole, 150, 60, 20 ms RTT), default timeouts"
    echo
    echo "| client | time to connect, ms | ended on | vs baseline |"
    echo "|---|---|---|---|"
    bm=$(med_of "${A_BASE[*]}")
    echo "| baseline 2.6.14 | $(fmt_ms "${A_BASE[*]}") | ${A_SRV[a_base_1]:+${A_SRV[a_base_1]} ($(rtt_of_port "${A_SRV[a_base_1]}"))} | 1.00x |"
    if [ $have_probe = 1 ]; then
        pm=$(med_of "$A_PATCHED")
        echo "| patched, --server-probe | $(fmt_ms "$A_PATCHED") | ${A_PROBE_SRV:+$A_PROBE_SRV ($(rtt_of_port "$A_PROBE_SRV"))} | $(ratio "$bm" "$pm") faster |"
    else
        pm=$(med_of "${A_NOPROBE[*]}")
        echo "| patched, without --server-probe (not in this binary) | $(fmt_ms "${A_NOPROBE[*]}") | ${A_SRV[a_patched_1]:+${A_SRV[a_patched_1]} ($(rtt_of_port "${A_SRV[a_patched_1]}"))} | $(ratio "$bm" "$pm") |"
        echo "| patched, --server-probe | $NA | - | - |"
    fi
    echo
    echo "## (b) one remote at 200 ms RTT"
    echo
    echo "| client | time to connect, ms | in RTTs | vs baseline | resets sent per run |"
    echo "|---|---|---|---|---|"
    b0=$(med_of "${B_MS[base]}")
    echo "| baseline 2.6.14, no probing | $(fmt_ms "${B_MS[base]}") | $(rtts "$b0") | 1.00x | ${B_RESETS[base]} |"
    b1=$(med_of "${B_MS[patched]}")
    echo "| patched, no probing | $(fmt_ms "${B_MS[patched]}") | $(rtts "$b1") | $(ratio "$b0" "$b1") | ${B_RESETS[patched]} |"
    if [ $have_probe = 1 ]; then
        b2=$(med_of "${B_MS[probe]}")
        echo "| patched, --server-probe | $(fmt_ms "${B_MS[probe]}") | $(rtts "$b2") | $(ratio "$b0" "$b2") | ${B_RESETS[probe]} |"
        b4=$(med_of "${B_MS[noshort]}")
        echo "| patched, --server-probe, no shortcut (client binds \`--lport\`) | $(fmt_ms "${B_MS[noshort]}") | $(rtts "$b4") | $(ratio "$b0" "$b4") | ${B_RESETS[noshort]} |"
        b3=$(med_of "${B_MS[rebind]}")
        echo "| patched, --server-probe, rebind between probe and connect | $(fmt_ms "${B_MS[rebind]}") | $(rtts "$b3") | $(ratio "$b0" "$b3") | ${B_RESETS[rebind]} |"
        b5=$(med_of "${B_MS[rebind_fb]}")
        echo "| the same, the server's new challenge dropped (fallback) | $(fmt_ms "${B_MS[rebind_fb]}") | $(rtts "$b5") | $(ratio "$b0" "$b5") | ${B_RESETS[rebind_fb]} |"
    else
        echo "| patched, --server-probe | $NA | - | - | - |"
        echo "| patched, --server-probe, no shortcut (client binds \`--lport\`) | $NA | - | - | - |"
        echo "| patched, --server-probe, rebind between probe and connect | $NA | - | - | - |"
        echo "| the same, the server's new challenge dropped (fallback) | $NA | - | - | - |"
    fi
    echo
    echo "A run that sends no reset (P_CONTROL_HARD_RESET_CLIENT_V2) took the one-RTT shortcut;"
    echo "in the rebind rows the relay gives the client a new source port after its first"
    echo "datagram (the probe), so the cookie no longer matches: the server answers the third"
    echo "packet with a new challenge (one more RTT), or, when the relay drops that challenge"
    echo "(a server that does not answer), the client falls back to a normal handshake."
    echo
    echo "## (c) server cost of a stateless reply (unwrapped packets, ${CPU_RUNS}x$N per row)"
    echo
    echo "| request -> reply | server | CPU us/reply (/proc/PID/stat) | CPU us/reply (schedstat) | answered |"
    echo "|---|---|---|---|---|"
    read -r s1 s2 v n <<<"$C_RESET_BASE"
    echo "| HARD_RESET_CLIENT_V2 -> HMAC-cookie reset | baseline | $s1 | $s2 | $v/$n |"
    read -r s1 s2 v n <<<"$C_RESET_PATCHED"
    echo "| HARD_RESET_CLIENT_V2 -> HMAC-cookie reset | patched | $s1 | $s2 | $v/$n |"
    if [ $PROBE_ANSWERS = 1 ]; then
        read -r s1 s2 v n <<<"$C_PROBE"
        echo "| SERVER_PROBE -> PROBE_REPLY | patched | $s1 | $s2 | $v/$n |"
    else
        echo "| SERVER_PROBE -> PROBE_REPLY | patched | n/a (no reply: feature not present) | n/a | 0 |"
    fi
    echo
    echo "| server VmRSS, kB | before | after | answered |"
    echo "|---|---|---|---|"
    if [ $PROBE_ANSWERS = 1 ]; then
        echo "| $RSS_N probes (patched) | $RSS_BEFORE | $RSS_AFTER | $RSS_REPLIES/$RSS_N |"
    else
        echo "| $RSS_N probes (patched) | n/a (no reply: feature not present) | n/a | 0 |"
    fi
    echo "| $RSS_N resets (patched, reference) | $RSSR_BEFORE | $RSSR_AFTER | $RSSR_REPLIES/$RSS_N |"
    echo
    echo "## (d) failover"
    echo
    echo "| remotes | client | probe phase, ms | time to connect, ms |"
    echo "|---|---|---|---|"
    if [ $have_probe = 1 ]; then
        echo "| closed port (ICMP), 20 ms | patched, --server-probe | $(fmt_ms "${D_PH_REF[*]}") | $(fmt_ms "${D_MS[ref]}") |"
        echo "| blackhole, 20 ms | patched, --server-probe | $(fmt_ms "${D_PH_BH[*]}") | $(fmt_ms "${D_MS[bh]}") |"
    fi
    echo "| closed port (ICMP), 20 ms | baseline 2.6.14 | - | $(fmt_ms "${D_MS[refbase]}") |"
    echo
    echo "| reconnect: A (20 ms) and B (60 ms) die, C (150 ms) alive; --keepalive 1 4 | kill -> connected, ms | ended on | vs baseline |"
    echo "|---|---|---|---|"
    for kind in "${D_KINDS[@]}"; do
        case $kind in
            patched) label="patched, --server-probe (probes again after the ping-restart)" ;;
            v1) label="first version of the series, --server-probe (probes once)" ;;
            baseline) label="baseline 2.6.14" ;;
        esac
        echo "| $label | ${D_MS[re_$kind]:-failed} | ${D_MS[re_${kind}_on]:-?} | $(ratio "${D_MS[re_baseline]:-}" "${D_MS[re_$kind]:-}") faster |"
    done
    echo
    echo "## (e) probe memory"
    echo
    echo "\"without memory\": the series before the probe memory (\`${NOMEM_BIN#"$TB_TOP"/}\`, from \`make nomem\`), same run."
    echo
    echo "| case | client | probe phase, ms | time to connect, ms | vs baseline 2.6.14 |"
    echo "|---|---|---|---|---|"
    nm=$(med_of "${E_MS[nmcold]:-}") em=$(med_of "${E_MS[file]:-}")
    if [ $have_mem = 1 ]; then
        echo "| dead first (blackhole, 150, 60, 20 ms), second start with the file | patched, --server-probe-persist | $(fmt_ms "${E_PH[file]}") | $(fmt_ms "${E_MS[file]}") | $(ratio "$bm" "$em") faster |"
    else
        echo "| dead first, second start with the file | patched | $NA | - | - |"
    fi
    echo "| dead first, first start, nothing remembered | patched | $(fmt_ms "${E_PH[cold]:-}") | $(fmt_ms "$A_PATCHED") | $(ratio "$bm" "$pm") faster |"
    [ -n "$NOMEM_BIN" ] && echo "| dead first, first start | without memory | $(fmt_ms "${E_PH[nmcold]}") | $(fmt_ms "${E_MS[nmcold]}") | $(ratio "$bm" "$nm") faster |"
    ub=$(med_of "${E_MS[ubase]}")
    echo "| all servers unpatched | baseline 2.6.14 | - | $(fmt_ms "${E_MS[ubase]}") | 1.00x |"
    [ -n "$NOMEM_BIN" ] && echo "| all servers unpatched | without memory, --server-probe | - | $(fmt_ms "${E_MS[unm]}") | +$(( $(med_of "${E_MS[unm]}") - ub )) ms |"
    echo "| all servers unpatched, first start | patched, --server-probe | $(fmt_ms "${E_PH[ucold]:-}") | $(fmt_ms "${E_MS[ucold]:-}") | +$(( $(med_of "${E_MS[ucold]:-0}") - ub )) ms |"
    if [ $have_mem = 1 ]; then
        echo "| all servers unpatched, second start with the file | patched, --server-probe-persist | $(fmt_ms "${E_PH[ufile]}") | $(fmt_ms "${E_MS[ufile]}") | +$(( $(med_of "${E_MS[ufile]}") - ub )) ms |"
    fi
    echo "| re-probe on reconnect (SIGUSR1), blackholed remote first | patched | $(fmt_ms "${E_PH[re]:-}") | - | - |"
    [ -n "$NOMEM_BIN" ] && echo "| re-probe on reconnect (SIGUSR1), blackholed remote first | without memory | $(fmt_ms "${E_PH[renm]}") | - | - |"
    echo
    echo "## (f) the field: client, NAT router and servers in network namespaces"
    echo
    if [ -n "$F_TABLE" ]; then
        echo "$F_TABLE"
        echo
        echo "From \`tests/e2e/t_field.sh\` in this run (exit $F_RC; its checks: \`${TB_DIR#"$TB_TOP"/}/field.tap\`):"
        echo "real tun devices and routes, servers pushing \`redirect-gateway def1\` and \`keepalive 1 4\`,"
        echo "the connected server killed (SIGKILL); \"never (20 s)\": not back within the test's 20 s."
    else
        echo "not run ($([ $SMOKE = 1 ] && echo "smoke run" || echo "BENCH_FIELD=0"))"
    fi
    echo
    echo "Slow (a) runs went on in parallel with the other rows (they wait for a 60 s timer)."
    echo "Logs: \`${TB_DIR#"$TB_TOP"/}/\`."
} >"$OUT"

echo
cat "$OUT"
echo
echo "written to ${OUT#"$TB_TOP"/}"
if [ -s "$TB_DIR/failures.log" ]; then
    echo "some runs failed; see ${TB_DIR#"$TB_TOP"/}/failures.log"
fi
exit 0
