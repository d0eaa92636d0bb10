#!/bin/bash
# shellcheck disable=SC2317  # helpers run through check()
# Probe memory that never lies, never hangs, and keeps saving (issue 28),
# end to end, in a network namespace of its own. Servers A (priority 10,
# 10 ms away) and B (priority 65535: drained, 4 ms away), behind relays;
# the remotes are [B, A], so the configured order prefers the drained one.
#   (a) a healthy server is not labelled "no-probe-answers": both down
#       (run 1: both OFFLINE in the file); A back (run 2, remotes [A]):
#       the phase, whose every target the memory skips, still waits a
#       grace time, A's reply counts ("rtt=... place=1"), and nothing
#       "took a connection without answering probes"; B back (run 3,
#       [B, A]): A first, connected to A, not to the drained B;
#   (b) the client's own network trouble is no evidence: both addresses
#       prohibited by a routing rule of this host (EACCES on send, run 1:
#       "unreachable from here"), then the rules lifted (run 2 from the
#       file): both answered, A first, connected to A;
#   (c) files that are not ours never block and are never written: a
#       symbolic link (to a memory file: the target stays as it was), a
#       file on procfs (/proc/kmsg, whose read blocks), a FIFO; the
#       client connects, and exits within 2 s of SIGTERM; a file of a
#       newer format version is left alone;
#   (d) saving goes on after --user/--group and after --chroot: the file
#       is rewritten by the phase after a SIGUSR1 (the client runs as
#       nobody, or chrooted away from the file's directory), and no
#       "cannot save" warning;
#   (e) a server that took the connection is not OFFLINE: server E
#       answers (run 1), then is silent to probes (management
#       "server-probe-reply off", as when its probe budget is spent) and
#       takes the connection of run 2: the file does not keep it OFFLINE
#       (the series before: "no-reply ... 60"), and run 3 waits for it
#       ("no reply", not "not waited for (offline-for-...)").
# Exit 0 pass, 1 fail, 77 skip.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by lib.sh (tb_port)
TB_PORT_BASE=${TB_PORT_BASE_MEMORY_EVIDENCE:-38000}
# shellcheck source=../../testbed/lib.sh
. "$here/../../testbed/lib.sh"

tb_setup memory_evidence server-probe server-probe-persist -- "$@"

summary() { tb_phase_summary "$@"; }
first_remote() { sed -n 's/.*first remote now \(.*\)$/\1/p' <<<"$1"; }
has() { grep -qF -- "$2" "$TB_DIR/$1.log" 2>/dev/null; }
wait_lines() { tb_wait_lines "$@"; }

SA=$(tb_port 1) SB=$(tb_port 2)
A=$(tb_port 101) B=$(tb_port 102)
tb_server sa "$SA" -- --server-probe-reply 0 50 10
tb_server sb "$SB" -- --server-probe-reply 0 50 65535

# ------------------------------------------------------------------ (a)
tb_log "(a) A and B down, then A back, then B back"
F="$TB_DIR/memory-a"
rm -f "$F"
tb_relay ra0 "127.0.0.1:$A" "127.0.0.1:$SA" --blackhole
tb_relay rb0 "127.0.0.1:$B" "127.0.0.1:$SB" --blackhole
tb_client a1 -- --remote 127.0.0.1 "$B" udp4 --remote 127.0.0.1 "$A" udp4 \
    --server-probe --server-probe-persist "$F"
wait_lines a1 1 "addresses answered in"
tb_stop a1
check "(a) run 1: A and B remembered as no-reply (OFFLINE)" \
    test "$(grep -cE "^127\.0\.0\.1 ($A|$B) udp 127\.0\.0\.1 no-reply .* 60 [0-9]+ 0$" "$F")" = 2
tb_stop ra0
tb_relay ra "127.0.0.1:$A" "127.0.0.1:$SA" --delay 5
tb_client a2 -- --remote 127.0.0.1 "$A" udp4 --server-probe --server-probe-persist "$F"
tb_wait_connected a2 20 >/dev/null
s2=$(summary a2)
tb_log "run 2 (A back): $s2"
check "(a) run 2: A's reply within the grace time counts (rtt=... prio=10 place=1)" \
    grep -qE "server-probe: \[AF_INET\]127\.0\.0\.1:$A rtt=[0-9.]+ms prio=10 weight=50 place=1" "$TB_DIR/a2.log"
check "(a) run 2: A is not labelled as a server without probe support" \
    bash -c "! grep -qF 'took a connection without answering probes' '$TB_DIR/a2.log'"
tb_stop a2
check "(a) the file holds no no-probe mark" \
    bash -c "! grep -qE '^127\.0\.0\.1 .* 1$' '$F'"
tb_stop rb0
tb_relay rb "127.0.0.1:$B" "127.0.0.1:$SB" --delay 2
tb_client a3 -- --remote 127.0.0.1 "$B" udp4 --remote 127.0.0.1 "$A" udp4 \
    --server-probe --server-probe-persist "$F"
tb_wait_connected a3 20 >/dev/null
s3=$(summary a3)
tb_log "run 3 (both back): $s3"
check "(a) run 3: no 'no-probe-answers' for A" \
    bash -c "! grep -qF 'no-probe-answers' '$TB_DIR/a3.log'"
check "(a) run 3: first remote A ($(first_remote "$s3")), not the drained B" \
    test "$(first_remote "$s3")" = "127.0.0.1:$A"
check "(a) run 3: connected to A ($(tb_connected_server a3))" \
    test "$(tb_connected_server a3)" = "127.0.0.1:$A"
tb_stop a3

# ------------------------------------------------------------------ (b)
tb_log "(b) this host's own routing refuses the probes, then not"
A2=$(tb_port 103) B2=$(tb_port 104)
tb_relay ra2 "127.0.0.77:$A2" "127.0.0.1:$SA" --delay 10
tb_relay rb2 "127.0.0.78:$B2" "127.0.0.1:$SB" --delay 2
if [ -z "${TB_IN_NETNS:-}" ]; then
    tb_skip_or_ci_fail "(b) changes the routing rules: needs the network namespace of its own"
fi
# the local table after a prohibit rule for the two addresses
ip rule add pref 100 lookup local && ip rule del pref 0 &&
    ip rule add pref 10 to 127.0.0.77 prohibit && ip rule add pref 11 to 127.0.0.78 prohibit ||
    tb_die "(b) cannot set the routing rules"
F2="$TB_DIR/memory-b"
rm -f "$F2"
remotes_b=(--remote 127.0.0.78 "$B2" udp4 --remote 127.0.0.77 "$A2" udp4)
tb_client b1 -- "${remotes_b[@]}" --server-probe --server-probe-persist "$F2"
wait_lines b1 1 "addresses answered in"
tb_stop b1
check "(b) run 1: both 'unreachable from here' ($(grep -cF 'unreachable from here' "$TB_DIR/b1.log"))" \
    test "$(grep -cF 'unreachable from here' "$TB_DIR/b1.log")" -ge 2
check "(b) run 1: nothing remembered as OFFLINE" \
    bash -c "! grep -qE ' (unreachable|no-reply|refused) .* [1-9][0-9]* [1-9][0-9]* [01]$' '$F2'"
ip rule del pref 10 && ip rule del pref 11
tb_client b2 -- "${remotes_b[@]}" --server-probe --server-probe-persist "$F2"
tb_wait_connected b2 20 >/dev/null
sb2=$(summary b2)
tb_log "run 2 (network back): $sb2"
check "(b) run 2: both answered ($sb2)" bash -c "grep -qF '2 of 2 addresses answered' '$TB_DIR/b2.log'"
check "(b) run 2: first remote A ($(first_remote "$sb2")), by priority" \
    test "$(first_remote "$sb2")" = "127.0.0.77:$A2"
check "(b) run 2: connected to A ($(tb_connected_server b2))" \
    test "$(tb_connected_server b2)" = "127.0.0.77:$A2"
tb_stop b2

# ------------------------------------------------------------------ (c)
tb_log "(c) files that are not ours"
# term_within NAME: SIGTERM, and the client is gone within 2 s
term_within()
{
    local pid i
    pid=$(tb_pid "$1")
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 200; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.01
    done
    return 1
}
T="$TB_DIR/target"
printf 'openvpn-server-probe-memory 1\n' >"$T"
cp "$T" "$T.orig"
ln -sf "$T" "$TB_DIR/link"
mkfifo "$TB_DIR/fifo"
ln -sf "$TB_DIR/fifo" "$TB_DIR/fifo-link"
k=0
for f in "$TB_DIR/link" /proc/kmsg "$TB_DIR/fifo" "$TB_DIR/fifo-link"; do
    k=$((k + 1))
    tb_client c$k -- --remote 127.0.0.1 "$A" udp4 --server-probe --server-probe-persist "$f"
    ms=$(tb_wait_connected c$k 20) || ms=""
    why=$(grep -oE "the probe memory '[^']*' [^;]*; not used, never written" "$TB_DIR/c$k.log" | head -n1)
    check "(c) $f: '${why:-no warning}', connected in ${ms:-?} ms" \
        bash -c "[ -n '$ms' ] && [ -n \"\$1\" ]" _ "$why"
    check "(c) $f: gone within 2 s of SIGTERM" term_within c$k
    tb_stop c$k
done
check "(c) the link's target is unchanged" cmp -s "$T" "$T.orig"
check "(c) the link is still a link" test -L "$TB_DIR/link"
N="$TB_DIR/newer"
printf 'openvpn-server-probe-memory 2\nsomething newer\n' >"$N"
cp "$N" "$N.orig"
tb_client c9 -- --remote 127.0.0.1 "$A" udp4 --server-probe --server-probe-persist "$N"
tb_wait_connected c9 20 >/dev/null
tb_stop c9
check "(c) a file of a newer version: 'newer version', left alone" \
    bash -c "grep -qF 'was written by a newer version' '$TB_DIR/c9.log' && cmp -s '$N' '$N.orig'"

# ------------------------------------------------------------------ (d)
tb_log "(d) saving after --user/--group and after --chroot"
nogroup=$(id -gn nobody 2>/dev/null || echo nogroup)
# saved_after_drop NAME FILE ARGS...: connect, SIGUSR1, and the second
# phase rewrites the file (its "at" times move) without a warning
saved_after_drop()
{
    local name=$1 file=$2 before i; shift 2
    rm -f "$file"
    tb_client "$name" -- --remote 127.0.0.1 "$A" udp4 --server-probe \
        --server-probe-persist "$file" --persist-key "$@"
    tb_wait_connected "$name" 20 >/dev/null || return 1
    before=$(stat -c %Y.%i "$file" 2>/dev/null; md5sum <"$file")
    sleep 1.1 # the file's times are whole seconds
    kill -USR1 "$(tb_pid "$name")"
    wait_lines "$name" 2 "Initialization Sequence Completed" || return 1
    for ((i = 0; i < 100; i++)); do
        [ "$(stat -c %Y.%i "$file"; md5sum <"$file")" != "$before" ] && break
        sleep 0.05
    done
    [ "$(stat -c %Y.%i "$file"; md5sum <"$file")" != "$before" ] || { echo "# $file not rewritten"; return 1; }
    ! grep -qF "cannot save the probe memory" "$TB_DIR/$name.log"
}
check "(d) --user nobody --group $nogroup: saved after the drop" \
    saved_after_drop d1 "$TB_DIR/memory-user" --user nobody --group "$nogroup"
mkdir -p "$TB_DIR/jail/tmp"
check "(d) --chroot: saved after it" \
    saved_after_drop d2 "$TB_DIR/memory-chroot" --chroot "$TB_DIR/jail"
check "(d) the file stays mode 0600 and the format's" \
    bash -c "[ \"\$(stat -c %a '$TB_DIR/memory-user')\" = 600 ] && grep -qE '^127\.0\.0\.1 $A udp 127\.0\.0\.1 answered ' '$TB_DIR/memory-user'"
tb_stop d1
tb_stop d2

# ------------------------------------------------------------------ (e)
tb_log "(e) a server silent to probes that takes the connection"
SE=$(tb_port 5) ME=$(tb_port 505)
tb_server se "$SE" -- --server-probe-reply 0 50 10 --management 127.0.0.1 "$ME"
FE="$TB_DIR/memory-e"
rm -f "$FE"
# mgmt PORT COMMAND...: the answer's last line
mgmt()
{
    timeout 15 python3 - "$@" <<'PYEOF'
import socket, sys
port, cmd = int(sys.argv[1]), " ".join(sys.argv[2:])
s = socket.create_connection(("127.0.0.1", port), timeout=10)
f = s.makefile("rb")
f.readline()
s.sendall(cmd.encode() + b"\n")
while True:
    line = f.readline().decode(errors="replace").rstrip("\r\n")
    if not line or line.startswith(("SUCCESS:", "ERROR:")):
        print(line)
        break
s.sendall(b"quit\n")
s.close()
PYEOF
}
# offline_line: the file's line for E if it keeps E OFFLINE (a retry time)
offline_line() { grep -E "^127\.0\.0\.1 $SE udp 127\.0\.0\.1 (no-reply|refused) .* [1-9][0-9]* [0-9]+ 0$" "$FE"; }
tb_client e1 -- --remote 127.0.0.1 "$SE" udp4 --server-probe --server-probe-persist "$FE"
tb_wait_connected e1 20 >/dev/null
tb_stop e1
check "(e) run 1: E answered and is remembered so" \
    grep -qE "^127\.0\.0\.1 $SE udp 127\.0\.0\.1 answered " "$FE"
line=$(mgmt "$ME" server-probe-reply off)
check "(e) E silent to probes from now ('$line')" test "$line" = "SUCCESS: server-probe-reply=off"
tb_client e2 -- --remote 127.0.0.1 "$SE" udp4 --server-probe --server-probe-persist "$FE"
tb_wait_connected e2 20 >/dev/null
check "(e) run 2: E did not answer the phase" \
    grep -qE "server-probe: \[AF_INET\]127\.0\.0\.1:$SE no reply" "$TB_DIR/e2.log"
check "(e) run 2: connected to E ($(tb_connected_server e2))" test "$(tb_connected_server e2)" = "127.0.0.1:$SE"
for ((i = 0; i < 40; i++)); do
    [ -z "$(offline_line)" ] && break
    sleep 0.05
done
tb_stop e2
check "(e) run 2: the file does not keep E OFFLINE: '$(offline_line)'" test -z "$(offline_line)"
tb_client e3 -- --remote 127.0.0.1 "$SE" udp4 --server-probe --server-probe-persist "$FE"
tb_wait_connected e3 20 >/dev/null
tb_stop e3
check "(e) run 3: the phase waited for E: $(grep -m1 -oE "127\.0\.0\.1:$SE .*place=[0-9]+" "$TB_DIR/e3.log")" \
    grep -qE "server-probe: \[AF_INET\]127\.0\.0\.1:$SE no reply place=1" "$TB_DIR/e3.log"
tb_stop se

echo "1..$n"
echo "# $n checks, $fails failed"
[ "$fails" -eq 0 ]
