#!/bin/bash
# shellcheck disable=SC2317  # helpers run through check()
# Probe memory (issue 19, SPEC 3a), end to end. One patched server behind
# relays on loopback: a blackhole (BH), 150, 60 and 20 ms; unpatched
# 2.6.14 servers; all of one priority.
#   (a) cold start is today's phase: the remotes [BH, 150, 60, 20]
#       without memory: "no reply place=4" for BH, the phase takes the
#       deadline (>= 950 ms), the 20 ms remote first;
#   (b) in one process: SIGUSR1 (reconnect) and SIGHUP (start, the memory
#       is in context_persist) each run a phase that does not wait for BH
#       ("not waited for (offline-for-Ns)") nor for the 60 and 150 ms
#       remotes once the 20 ms one answered ("cannot-come-first"): the
#       phase takes <= 150 ms (the slowest live RTT + margin would be
#       160), and the first place is the same 20 ms remote; the remotes
#       not waited for by their remembered answer are placed by it (after
#       SIGHUP the list is in configured order again: 60 ms at place 2,
#       BH last);
#   (c) --server-probe-persist: the first run writes the file (mode 0600,
#       the format's magic line, one line per address, no temporary file
#       left); a second run from the file: the phase <= 150 ms and BH is
#       not waited for; the client connects to the 20 ms remote;
#   (d) a server that comes back: BH's relay is replaced by a 5 ms one
#       to a server of priority 5; a run from the file (BH still OFFLINE)
#       with the remotes [BH, 150 ms] ranks BH's reply, which comes
#       within the phase: "rtt=" for BH at place 1, and the file then
#       holds BH as answered;
#   (e) servers without probe support: two unpatched servers; the first
#       run waits the deadline, connects and logs that the server "took a
#       connection without answering probes"; the second run from the
#       file: "0 of 2 addresses answered in N ms" with N the memory's grace
#       time of 100 ms (95..250; before the grace time, about
#       5 ms on an idle machine; the bench compares it with unpatched);
#   (f) bad files never stop the client: a foreign file (a key) gives
#       "is not a probe memory file" and stays byte for byte; a corrupt
#       one gives "is corrupt" and is rewritten; a directory gives "not a
#       regular file"; --server-probe-persist without --server-probe is
#       an option error;
#   (g) two clients share one file: b loaded it with GX answered; a then
#       finds GX silent and saves; b's next save keeps GX as no-reply
#       (without the merge on save it wrote back what it loaded), and
#       a's next run does not wait for GX.
# Prints the figures. Exit 0 pass, 1 fail, 77 skip.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by lib.sh (tb_port)
TB_PORT_BASE=${TB_PORT_BASE_MEMORY:-37000}
# shellcheck source=../../testbed/lib.sh
. "$here/../../testbed/lib.sh"

tb_setup memory server-probe server-probe-persist -- "$@"

summary() { tb_phase_summary "$@"; }
phase_ms() { sed -n 's/.* answered in \([0-9]*\) ms.*/\1/p' <<<"$1"; }
first_remote() { sed -n 's/.*first remote now \(.*\)$/\1/p' <<<"$1"; }
# the Nth phase's log lines (from its "probing" line to its summary)
phase_lines()
{
    awk -v want="$2" '/server-probe: probing/ { k++ } k == want && /server-probe: / { print }' "$TB_DIR/$1.log"
}
export -f phase_lines
export TB_DIR
le() { [ -n "$1" ] && [ "$1" -le "$2" ]; }
ge() { [ -n "$1" ] && [ "$1" -ge "$2" ]; }
wait_lines() { tb_wait_lines "$@"; }
wait_phases() { wait_lines "$1" "$2" "addresses answered in"; }
wait_connects() { wait_lines "$1" "$2" "Initialization Sequence Completed"; }

S1=$(tb_port 1)
BH=$(tb_port 100) R150=$(tb_port 101) R60=$(tb_port 102) R20=$(tb_port 103)
tb_server s1 "$S1" -- --server-probe-reply 0 50 10
tb_relay rbh "127.0.0.1:$BH" "127.0.0.1:$S1" --blackhole
tb_relay r150 "127.0.0.1:$R150" "127.0.0.1:$S1" --delay 75
tb_relay r60 "127.0.0.1:$R60" "127.0.0.1:$S1" --delay 30
tb_relay r20 "127.0.0.1:$R20" "127.0.0.1:$S1" --delay 10
remotes=(--remote 127.0.0.1 "$BH" udp4 --remote 127.0.0.1 "$R150" udp4
         --remote 127.0.0.1 "$R60" udp4 --remote 127.0.0.1 "$R20" udp4)

# ------------------------------------------------------------------ (a)
tb_log "(a) cold start: [BH, 150, 60, 20 ms] without memory"
tb_client ca -- "${remotes[@]}" --server-probe
ms=$(tb_wait_connected ca 20) || ms=""
s1=$(summary ca 1) p1=$(phase_ms "$s1")
tb_log "cold: $s1; connected in ${ms:-?} ms"
check "(a) BH: 'no reply place=4', as without memory" \
    grep -qF "server-probe: [AF_INET]127.0.0.1:$BH no reply place=4" "$TB_DIR/ca.log"
check "(a) the phase takes the deadline: ${p1:-?} ms >= 950" ge "$p1" 950
check "(a) first remote: the 20 ms one ($(first_remote "$s1"))" test "$(first_remote "$s1")" = "127.0.0.1:$R20"
check "(a) no 'not waited for' in a cold phase" bash -c "! grep -qF 'not waited for' '$TB_DIR/ca.log'"

# ------------------------------------------------------------------ (b)
tb_log "(b) the same process: SIGUSR1, then SIGHUP"
kill -USR1 "$(tb_pid ca)"
wait_phases ca 2
wait_connects ca 2
s2=$(summary ca 2) p2=$(phase_ms "$s2")
kill -HUP "$(tb_pid ca)"
wait_phases ca 3
wait_connects ca 3
s3=$(summary ca 3) p3=$(phase_ms "$s3")
tb_log "after SIGUSR1: $s2"
tb_log "after SIGHUP:  $s3"
phase_lines ca 2 | sed 's/^/#   | /'
for k in 2 3; do
    sk=$(summary ca $k) pk=$(phase_ms "$sk")
    check "(b) phase $k: BH not waited for (OFFLINE)" \
        bash -c "phase_lines ca $k | grep -qE 'server-probe: \[AF_INET\]127\.0\.0\.1:$BH not waited for \(offline-for-[0-9]+s\) place=4'"
    check "(b) phase $k: the 150 ms remote not waited for (cannot-come-first)" \
        bash -c "phase_lines ca $k | grep -qF 'server-probe: [AF_INET]127.0.0.1:$R150 not waited for (cannot-come-first)'"
    check "(b) phase $k takes ${pk:-?} ms <= 150 (the slowest live RTT + margin: 160)" le "$pk" 150
    check "(b) phase $k: the same first remote, the 20 ms one ($(first_remote "$sk"))" \
        test "$(first_remote "$sk")" = "127.0.0.1:$R20"
done
check "(b) after SIGHUP (the configured order again) the 60 ms remote, not waited for, is placed by its remembered answer: place=2, before BH" \
    bash -c "phase_lines ca 3 | grep -qF 'server-probe: [AF_INET]127.0.0.1:$R60 not waited for (cannot-come-first) place=2'"
check "(b) connected to the 20 ms remote after both" test "$(tb_connected_server ca)" = "127.0.0.1:$R20"
tb_stop ca
echo "# phase: cold $p1 ms, after SIGUSR1 $p2 ms, after SIGHUP $p3 ms"

# ------------------------------------------------------------------ (c)
tb_log "(c) --server-probe-persist across runs"
F="$TB_DIR/memory"
rm -f "$F"
tb_client cc1 -- "${remotes[@]}" --server-probe --server-probe-persist "$F"
tb_wait_connected cc1 20 >/dev/null
tb_stop cc1
sed 's/^/#   | /' "$F"
check "(c) the file is mode 0600" test "$(stat -c %a "$F")" = 600
check "(c) its first line is the format's name and version" \
    test "$(head -n1 "$F")" = "openvpn-server-probe-memory 1"
check "(c) one line per probed address (4)" \
    test "$(grep -c "^127\.0\.0\.1 [0-9]* udp 127\.0\.0\.1 " "$F")" = 4
check "(c) BH remembered as no-reply with a retry time of 60 s" \
    grep -qE "^127\.0\.0\.1 $BH udp 127\.0\.0\.1 no-reply [0-9]+ 0 0 0 0 0 60 [0-9]+ 0$" "$F"
check "(c) no temporary file left" bash -c "! ls '$F'.tmp.* >/dev/null 2>&1"
tb_client cc2 -- "${remotes[@]}" --server-probe --server-probe-persist "$F"
ms2=$(tb_wait_connected cc2 20) || ms2=""
sc=$(summary cc2) pc=$(phase_ms "$sc")
tb_log "second run: $sc; connected in ${ms2:-?} ms"
check "(c) the second run's phase takes ${pc:-?} ms <= 150" le "$pc" 150
check "(c) BH not waited for" grep -qE "server-probe: \[AF_INET\]127\.0\.0\.1:$BH not waited for \(offline-for-[0-9]+s\)" "$TB_DIR/cc2.log"
check "(c) connected to the 20 ms remote ($(tb_connected_server cc2))" test "$(tb_connected_server cc2)" = "127.0.0.1:$R20"
tb_stop cc2
echo "# dead first, with the file: phase $pc ms (cold $p1 ms), connected in ${ms2:-?} ms (cold ${ms:-?} ms)"

# ------------------------------------------------------------------ (d)
tb_log "(d) BH comes back (a 5 ms relay to a server of priority 5 on its port) while remembered OFFLINE"
tb_stop rbh
S2=$(tb_port 4)
tb_server s2 "$S2" -- --server-probe-reply 0 50 5
tb_relay rbh2 "127.0.0.1:$BH" "127.0.0.1:$S2" --delay 2
# BH and the 150 ms remote: the phase waits for the 150 ms one (nothing
# in hand yet), so BH's reply comes within the phase
tb_client cd -- --remote 127.0.0.1 "$BH" udp4 --remote 127.0.0.1 "$R150" udp4 \
    --server-probe --server-probe-persist "$F"
tb_wait_connected cd 20 >/dev/null
sd=$(summary cd)
tb_log "back: $sd"
check "(d) its reply within the phase is ranked: BH rtt=... prio=5 place=1" \
    grep -qE "server-probe: \[AF_INET\]127\.0\.0\.1:$BH rtt=[0-9.]+ms prio=5 weight=50 place=1" "$TB_DIR/cd.log"
check "(d) ... and it is first ($(first_remote "$sd"))" test "$(first_remote "$sd")" = "127.0.0.1:$BH"
tb_stop cd
check "(d) the file holds BH as answered, online (retry 0)" \
    grep -qE "^127\.0\.0\.1 $BH udp 127\.0\.0\.1 answered [0-9]+ [0-9]+ [0-9]+ 5 50 0 0 0 0$" "$F"
tb_stop rbh2

# ------------------------------------------------------------------ (e)
tb_log "(e) servers without probe support (unpatched 2.6.14)"
U1=$(tb_port 2) U2=$(tb_port 3)
tb_server u1 "$U1" --bin "$TB_BASELINE"
tb_server u2 "$U2" --bin "$TB_BASELINE"
FU="$TB_DIR/memory-unpatched"
rm -f "$FU"
uremotes=(--remote 127.0.0.1 "$U1" udp4 --remote 127.0.0.1 "$U2" udp4)
tb_client ce1 -- "${uremotes[@]}" --server-probe --server-probe-persist "$FU"
tb_wait_connected ce1 20 >/dev/null
pe1=$(phase_ms "$(summary ce1)")
check "(e) first run: the phase takes the deadline (${pe1:-?} ms >= 950)" ge "$pe1" 950
check "(e) ... and the server took a connection without answering probes" \
    grep -qF "127.0.0.1:$U1 (127.0.0.1) took a connection without answering probes" "$TB_DIR/ce1.log"
tb_stop ce1
tb_client ce2 -- "${uremotes[@]}" --server-probe --server-probe-persist "$FU"
mse=$(tb_wait_connected ce2 20) || mse=""
se=$(summary ce2) pe2=$(phase_ms "$se")
tb_log "second run: $se; connected in ${mse:-?} ms"
check "(e) second run: '0 of 2 addresses answered in ${pe2:-?} ms', the grace time (100 ms) and <= 250 ms (the bench measures it against unpatched)" \
    bash -c "grep -qE '0 of 2 addresses answered in [0-9]+ ms' '$TB_DIR/ce2.log' && [ -n '$pe2' ] && [ '$pe2' -ge 95 ] && [ '$pe2' -le 250 ]"
check "(e) U1 not waited for (no-probe-answers)" \
    grep -qF "server-probe: [AF_INET]127.0.0.1:$U1 not waited for (no-probe-answers) place=1" "$TB_DIR/ce2.log"
check "(e) connected to U1 ($(tb_connected_server ce2))" test "$(tb_connected_server ce2)" = "127.0.0.1:$U1"
tb_stop ce2
echo "# unpatched servers: phase $pe1 ms cold, $pe2 ms with the file"

# ------------------------------------------------------------------ (f)
tb_log "(f) bad files"
probe_only()
{
    local name=$1; shift
    timeout 20 "$TB_BIN" --client --dev null --nobind --ca "$TB_PKI/ca.crt" \
        --cert "$TB_PKI/client.crt" --key "$TB_PKI/client.key" \
        --remote 127.0.0.1 "$R20" udp4 "$@" --server-probe-only \
        >"$TB_DIR/$name.out" 2>"$TB_DIR/$name.err"
    RC=$?
}
FF="$TB_DIR/foreign.key"
printf -- '-----BEGIN OpenVPN Static key V1-----\n00112233\n-----END OpenVPN Static key V1-----\n' >"$FF"
cp "$FF" "$FF.orig"
probe_only pf1 --server-probe-persist "$FF"
check "(f) a foreign file: exit 0 (got $RC), 'is not a probe memory file'" \
    bash -c "[ $RC = 0 ] && grep -qF 'is not a probe memory file; not used, never written' '$TB_DIR/pf1.err'"
check "(f) ... and it is unchanged" cmp -s "$FF" "$FF.orig"
FC="$TB_DIR/corrupt"
printf 'openvpn-server-probe-memory 1\n127.0.0.1 1 udp 127.0.0.1 answered x\n' >"$FC"
probe_only pf2 --server-probe-persist "$FC"
check "(f) a corrupt file: exit 0 (got $RC), 'is corrupt'" \
    bash -c "[ $RC = 0 ] && grep -qF 'is corrupt (line 2' '$TB_DIR/pf2.err'"
check "(f) ... and it is rewritten" grep -qE "^127\.0\.0\.1 $R20 udp 127\.0\.0\.1 answered " "$FC"
mkdir -p "$TB_DIR/adir"
probe_only pf3 --server-probe-persist "$TB_DIR/adir"
check "(f) a directory: exit 0 (got $RC), 'not a regular file'" \
    bash -c "[ $RC = 0 ] && grep -qF 'is not a regular file' '$TB_DIR/pf3.err'"
timeout 10 "$TB_BIN" --client --dev null --remote 127.0.0.1 "$R20" \
    --ca "$TB_PKI/ca.crt" --cert "$TB_PKI/client.crt" --key "$TB_PKI/client.key" \
    --server-probe-persist "$FF" >"$TB_DIR/pf4.out" 2>&1
rc=$?
check "(f) --server-probe-persist without --server-probe: an option error (exit $rc)" \
    bash -c "[ $rc = 1 ] && grep -qF -- '--server-probe-persist requires --server-probe' '$TB_DIR/pf4.out'"

# ------------------------------------------------------------------ (g)
tb_log "(g) two clients share one file"
S3=$(tb_port 5) GX=$(tb_port 104) GR=$(tb_port 105)
tb_server s3 "$S3" -- --server-probe-reply 0 50 10
tb_relay rgx "127.0.0.1:$GX" "127.0.0.1:$S3" --delay 2
tb_relay rgr "127.0.0.1:$GR" "127.0.0.1:$S3" --delay 20
FG="$TB_DIR/memory-shared"
rm -f "$FG"
probe_only pg1 --remote 127.0.0.1 "$GX" udp4 --remote 127.0.0.1 "$GR" udp4 --server-probe-persist "$FG"
# b loads the file (GX answered) and stays connected; its list has GR only
tb_client cgb -- --remote 127.0.0.1 "$GR" udp4 --server-probe --server-probe-persist "$FG"
tb_wait_connected cgb 20 >/dev/null
tb_stop rgx
tb_relay rgx2 "127.0.0.1:$GX" "127.0.0.1:$S3" --blackhole
# a finds GX silent and saves it so
probe_only pg2 --remote 127.0.0.1 "$GX" udp4 --remote 127.0.0.1 "$GR" udp4 --server-probe-persist "$FG"
check "(g) a's run: GX remembered as no-reply" \
    grep -qE "^127\.0\.0\.1 $GX udp 127\.0\.0\.1 no-reply " "$FG"
# b saves after its reconnect's phase: it must not write back GX as
# answered, the view it loaded
kill -USR1 "$(tb_pid cgb)"
wait_phases cgb 2
wait_connects cgb 2
check "(g) after b's save GX is still remembered as no-reply" \
    grep -qE "^127\.0\.0\.1 $GX udp 127\.0\.0\.1 no-reply " "$FG"
tb_client cga -- --remote 127.0.0.1 "$GX" udp4 --remote 127.0.0.1 "$GR" udp4 \
    --server-probe --server-probe-persist "$FG"
tb_wait_connected cga 20 >/dev/null
pg=$(phase_ms "$(summary cga)")
check "(g) a's next start does not wait for GX (OFFLINE): phase ${pg:-?} ms < 900" \
    bash -c "grep -qE 'server-probe: \[AF_INET\]127\.0\.0\.1:$GX not waited for \(offline-for-[0-9]+s\)' '$TB_DIR/cga.log' && [ -n '$pg' ] && [ '$pg' -lt 900 ]"
check "(g) ... and connects to GR ($(tb_connected_server cga))" test "$(tb_connected_server cga)" = "127.0.0.1:$GR"
tb_stop cga
tb_stop cgb
echo "# shared file: the next run's phase $pg ms (without the merge: the deadline, 1000 ms)"

echo "1..$n"
echo "# $n checks, $fails failed"
[ "$fails" -eq 0 ]
