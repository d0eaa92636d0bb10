#!/bin/bash
# The Windows probe path end to end, under Wine, with no tun device:
# `wine openvpn.exe --config client.ovpn --server-probe-only` against Linux
# servers (the Linux build of the series) on loopback.
#
#   tests/windows/t_wine_probe.sh        (scripts/windows.sh check runs it)
#
# WIN_EXE    the openvpn.exe under test (default: build/win/bin/master-patched
#            if its --help has --server-probe-only, else build/win/bin/2.6-patched)
# LINUX_BIN  the servers (default build/bin/openvpn-master if it exists, else
#            build/bin/openvpn; the 2.6 series speaks the same wire)
#
# Runs in a private network and mount namespace (loopback only): /etc/hosts
# and /etc/resolv.conf are replaced there (bind mounts, the machine's files
# are not touched) so that a name resolves (probe-ok.test), one does not
# (no-such-host.invalid: NXDOMAIN from a stub name server on 127.0.0.1:53)
# and names under slow.test get no answer at all.  Wine's own
# drive_c/windows/system32/drivers/etc/hosts is not read by Wine 8's
# getaddrinfo (it asks the host's resolver), hence the bind mounts.
# Wine gets its own WINEPREFIX (build/win/wineprefix-probe): a wineserver
# creates the sockets of its clients, so it must run in this namespace.
#
# Prints ok/not ok lines and "N passed, N failed"; exit 0, 1, or 77 (skip).
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
W="$top/build/win"

pick_exe()
{
    local c help
    for c in "${WIN_EXE:-}" "$W/bin/master-patched/openvpn.exe" "$W/bin/2.6-patched/openvpn.exe"; do
        [ -n "$c" ] && [ -f "$c" ] || continue
        # --help exits 1, and grep -q may close the pipe early: with
        # pipefail, a pipe into grep would never be true
        help=$(WINEPREFIX="$W/wineprefix" WINEDEBUG=-all wine "$c" --help 2>/dev/null </dev/null) || true
        if grep -q -- '--server-probe-only' <<<"$help"; then
            echo "$c"
            return 0
        fi
    done
    return 1
}

if [ -z "${TWP_INNER:-}" ]; then
    [ "$(id -u)" = 0 ] || { echo "SKIP: needs root (tun devices for the Linux servers, namespaces)"; exit 77; }
    [ -c /dev/net/tun ] || { echo "SKIP: /dev/net/tun is missing"; exit 77; }
    command -v wine >/dev/null || { echo "SKIP: no wine (make windows installs it)"; exit 77; }
    exe=$(pick_exe) || {
        echo "# SKIP: no openvpn.exe with --server-probe-only was built (build/win/bin/master-patched,"
        echo "# or build/win/bin/2.6-patched with WIN_26=1; see build/win/bin/*/FAILED)"
        echo "0 passed, 0 failed"
        exit 77
    }
    if [ -z "${LINUX_BIN:-}" ]; then
        LINUX_BIN="$top/build/bin/openvpn-master"
        [ -x "$LINUX_BIN" ] || LINUX_BIN="$top/build/bin/openvpn"
    fi
    [ -x "$LINUX_BIN" ] || { echo "SKIP: no Linux build of the series ($LINUX_BIN): make build"; exit 77; }
    [ -x "$top/testbed/relay/udprelay" ] || make -s -C "$top/testbed/relay" >/dev/null 2>&1 ||
        { echo "SKIP: testbed/relay/udprelay cannot be built"; exit 77; }
    export TWP_INNER=1 WIN_EXE=$exe LINUX_BIN
    exec unshare --mount --net --propagation private -- bash "$0" "$@"
fi

# ---------------------------------------------------------------- inside
export TB_ROOT="$W/testbed" TB_IN_NETNS=1 TB_BIN=$LINUX_BIN TB_BASELINE=$LINUX_BIN TB_PORT_BASE=${TB_PORT_BASE:-27000}
# shellcheck source=../../testbed/lib.sh
. "$top/testbed/lib.sh"
tb_init wine-probe
tb_pki
D=$TB_DIR

export WINEPREFIX="$W/wineprefix-probe" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
wineserver -k 2>/dev/null || true
if [ ! -f "$WINEPREFIX/system.reg" ]; then
    wineboot --init >"$D/wineboot.log" 2>&1 || tb_die "wineboot failed"
fi
wine_cleanup() { wineserver -k 2>/dev/null || true; }
trap 'wine_cleanup; tb__cleanup' EXIT

tb_log "openvpn.exe: ${WIN_EXE#"$top"/}; servers: ${LINUX_BIN#"$top"/} (Linux)"
tb_log "$(WINEPREFIX=$WINEPREFIX wine "$WIN_EXE" --version 2>/dev/null | head -n 1 | tr -d '\r')"

# names: hosts file and a stub name server, in this mount namespace only
printf '127.0.0.1 localhost\n127.0.0.1 probe-ok.test\n' >"$D/hosts"
printf 'nameserver 127.0.0.1\noptions timeout:3 attempts:1\n' >"$D/resolv.conf"
mount --bind "$D/hosts" /etc/hosts || tb_die "cannot bind-mount /etc/hosts"
mount --bind "$D/resolv.conf" /etc/resolv.conf || tb_die "cannot bind-mount /etc/resolv.conf"
cat >"$D/dns.py" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
log = open(sys.argv[1], "a", buffering=1)
while True:
    q, a = s.recvfrom(2048)
    if len(q) < 12:
        continue
    i, labels = 12, []
    while i < len(q) and q[i]:
        labels.append(q[i + 1:i + 1 + q[i]].decode(errors="replace"))
        i += 1 + q[i]
    name = ".".join(labels).lower()
    log.write(name + "\n")
    if name.endswith("slow.test"):
        continue                      # a silent name server for these
    # NXDOMAIN, the question echoed
    r = q[:2] + bytes([0x81, 0x83]) + q[4:6] + b"\0\0\0\0\0\0" + q[12:i + 5]
    s.sendto(r, a)
EOF
: >"$D/dns.log"
tb__spawn dns python3 "$D/dns.py" "$D/dns.log"
sleep 0.3

P1=$(tb_port 1) P2=$(tb_port 2) P3=$(tb_port 3) P4=$(tb_port 4) P5=$(tb_port 5)
tb_server s1 "$P1" -- --server-probe-reply 0 50 10
tb_server s2 "$P2" -- --server-probe-reply 0 60 5
tb_server s3 "$P3" --wrap tls-crypt -- --server-probe-reply 0 70 1
tb_relay bh "127.0.0.1:$P5" "127.0.0.1:$P1" --blackhole
# P4: nothing listens (closed port)

# Windows form with forward slashes: a backslash is an escape character in
# OpenVPN's config parser
PKIW=$(winepath -w "$TB_PKI" 2>/dev/null | tr -d '\r' | tr '\\' /)
# conf NAME WRAP REMOTE...: NAME.ovpn (Windows paths, for openvpn.exe) and
# NAME.linux.conf (the same for the Linux client, to compare with)
conf()
{
    local name=$1 wrap=$2
    shift 2
    conf_one "$PKIW" / "$wrap" "$@" >"$D/$name.ovpn"
    conf_one "$TB_PKI" / "$wrap" "$@" >"$D/$name.linux.conf"
}
conf_one()
{
    local pki=$1 sep=$2 wrap=$3 r
    shift 3
    printf 'client\ndev null\nnobind\nverb 3\nremote-cert-tls server\n'
    printf 'ca "%s%sca.crt"\ncert "%s%sclient.crt"\nkey "%s%sclient.key"\n' \
        "$pki" "$sep" "$pki" "$sep" "$pki" "$sep"
    [ "$wrap" = tls-crypt ] && printf 'tls-crypt "%s%stc.key"\n' "$pki" "$sep"
    for r in "$@"; do echo "remote $r"; done
}

# run NAME [extra args]: wine openvpn.exe --config NAME.ovpn --server-probe-only
# sets RC, MS (wall clock ms of the wine run), FIRST (first stdout line)
run()
{
    local name=$1 t0 t1
    shift
    t0=$(date +%s%N)
    timeout --kill-after=5 60 wine "$WIN_EXE" --config "$(winepath -w "$D/$name.ovpn" 2>/dev/null | tr -d '\r')" \
        "$@" --server-probe-only >"$D/$name.out" 2>"$D/$name.err" </dev/null
    RC=$?
    t1=$(date +%s%N)
    MS=$(( (t1 - t0) / 1000000 ))
    tr -d '\r' <"$D/$name.out" >"$D/$name.txt"
    FIRST=$(head -n 1 "$D/$name.txt")
    PHASE=$(sed -n 's/.* in \([0-9]*\) ms.*/\1/p' <<<"$FIRST")
    tb_log "$name: exit $RC, ${MS} ms wall (wine start included), phase ${PHASE:-?} ms"
    sed 's/^/#   | /' "$D/$name.txt"
}
run_linux()
{
    local name=$1
    shift
    timeout --kill-after=5 60 "$LINUX_BIN" --config "$D/$name.linux.conf" "$@" --server-probe-only \
        >"$D/$name.linux.txt" 2>"$D/$name.linux.err" </dev/null
    LRC=$?
}
# row NAME REMOTE: the table line of that remote (REMOTE column)
row() { awk -v r="$2" '$1 == r' "$D/$1.txt" | head -n 1; }
lrow() { awk -v r="$2" '$1 == r' "$D/$1.linux.txt" | head -n 1; }
status() { row "$1" "$2" | awk '{ print $3 }'; }
place() { row "$1" "$2" | awk '{ print $NF }'; }
has() { grep -qE -- "$2" "$D/$1.txt"; }
le() { [ -n "$1" ] && [ "$1" -le "$2" ]; }

# ---- (a) all answered, plain: a literal address and a name from the hosts file
conf a none "127.0.0.1 $P1 udp" "probe-ok.test $P2 udp"
run a
check "(a) every address answered: exit 0 (got $RC)" test "$RC" -eq 0
check "(a) first line 'SERVER-PROBE OK: ...'" has a '^SERVER-PROBE OK: '
check "(a) 127.0.0.1:$P1 answered" test "$(status a "127.0.0.1:$P1")" = answered
check "(a) probe-ok.test:$P2 (hosts file) answered" test "$(status a "probe-ok.test:$P2")" = answered
check "(a) priority 5 before priority 10: probe-ok.test place 1" test "$(place a "probe-ok.test:$P2")" = 1
check "(a) 127.0.0.1:$P1 place 2" test "$(place a "127.0.0.1:$P1")" = 2
check "(a) phase ended when all had answered (${PHASE:-?} ms < 900)" le "${PHASE:-}" 899
check "(a) perfdata after '|'" has a "^SERVER-PROBE OK: .*\\| 'rtt "

# ---- (b) tls-crypt: the tls-crypt server answers, the plain one does not
conf b tls-crypt "127.0.0.1 $P1 udp" "127.0.0.1 $P3 udp"
run b
check "(b) tls-crypt: some did not answer: exit 1 (got $RC)" test "$RC" -eq 1
check "(b) first line 'SERVER-PROBE WARNING: ...'" has b '^SERVER-PROBE WARNING: '
check "(b) tls-crypt server answered, place 1" \
    test "$(status b "127.0.0.1:$P3") $(place b "127.0.0.1:$P3")" = "answered 1"
check "(b) plain server ignores a tls-crypt probe: no-reply, place 2" \
    test "$(status b "127.0.0.1:$P1") $(place b "127.0.0.1:$P1")" = "no-reply 2"
check "(b) phase bounded: 1 s for replies (${PHASE:-?} ms, 900..1600)" \
    eval '[ -n "$PHASE" ] && [ "$PHASE" -ge 900 ] && [ "$PHASE" -le 1600 ]'

conf b2 tls-crypt "127.0.0.1 $P3 udp"
run b2
check "(b2) tls-crypt only: exit 0 (got $RC)" test "$RC" -eq 0

# ---- (c) the mix: live (two priorities), closed port, blackhole, a name
#          that resolves, one that does not; the same config on Linux
conf c none "127.0.0.1 $P4 udp" "127.0.0.1 $P5 udp" "127.0.0.1 $P1 udp" \
    "no-such-host.invalid $P1 udp" "probe-ok.test $P2 udp"
run c
CRC=$RC CPHASE=$PHASE
check "(c) some answered: exit 1 (got $RC)" test "$RC" -eq 1
check "(c) first line 'SERVER-PROBE WARNING: 2 of ...'" has c '^SERVER-PROBE WARNING: 2 of '
check "(c) probe-ok.test:$P2 (prio 5) place 1" \
    test "$(status c "probe-ok.test:$P2") $(place c "probe-ok.test:$P2")" = "answered 1"
check "(c) 127.0.0.1:$P1 (prio 10) place 2" \
    test "$(status c "127.0.0.1:$P1") $(place c "127.0.0.1:$P1")" = "answered 2"
st=$(status c "127.0.0.1:$P4")
check "(c) closed port: no-reply (Windows reports no ICMP error to the probe; got '$st')" \
    test "$st" = no-reply
check "(c) blackhole: no-reply" test "$(status c "127.0.0.1:$P5")" = no-reply
check "(c) no-such-host.invalid: not-resolved" test "$(status c "no-such-host.invalid:$P1")" = not-resolved
check "(c) non-responders keep their configured order: closed 3, blackhole 4, unresolved 5" \
    test "$(place c "127.0.0.1:$P4") $(place c "127.0.0.1:$P5") $(place c "no-such-host.invalid:$P1")" = "3 4 5"
check "(c) the resolver's error is logged" grep -qiE 'no-such-host.invalid.*(resolv|not known|unknown|error)' "$D/c.err"
check "(c) phase about 1 s: the closed port costs the second (${CPHASE:-?} ms, 900..1600)" \
    eval '[ -n "$CPHASE" ] && [ "$CPHASE" -ge 900 ] && [ "$CPHASE" -le 1600 ]'
run_linux c
tb_log "the same on Linux (exit $LRC):"
sed 's/^/#   | /' "$D/c.linux.txt"
same=1
for r in "probe-ok.test:$P2" "127.0.0.1:$P1"; do
    w=$(row c "$r" | awk '{ print $3, $NF }')
    l=$(lrow c "$r" | awk '{ print $3, $NF }')
    [ "$w" = "$l" ] || { same=0; tb_log "differs: $r Windows '$w' Linux '$l'"; }
done
# the closed port: refused on Linux (ICMP port unreachable), which ranks
# it behind the silent and unresolved remotes; no-reply on Windows (no
# ICMP error reaches the probe), so it keeps its configured place there
norder() # the non-answering remotes of a table, by place: "remote status"
{
    for r in "127.0.0.1:$P4" "127.0.0.1:$P5" "no-such-host.invalid:$P1"; do
        echo "$($1 c "$r" | awk '{ print $NF }') $r $($1 c "$r" | awk '{ print $3 }')"
    done | sort -n | awk '{ print $2, $3 }' | tr '\n' ' '
}
w=$(norder row)
l=$(norder lrow)
wl="${w/127.0.0.1:$P4 no-reply /}127.0.0.1:$P4 refused "
[ "$wl" = "$l" ] || { same=0; tb_log "differs: non-answering by place: Windows '$w', Linux '$l' (expected '$wl')"; }
check "(c) ranking and status as on Linux (closed port: refused and last there, no-reply here)" test $same = 1
check "(c) exit code as on Linux ($CRC, Linux $LRC)" test "$CRC" = "$LRC"

# ---- (d) none answered
conf d none "127.0.0.1 $P4 udp" "127.0.0.1 $P5 udp"
run d
check "(d) none answered: exit 2 (got $RC)" test "$RC" -eq 2
check "(d) first line 'SERVER-PROBE CRITICAL: ...'" has d '^SERVER-PROBE CRITICAL: '
check "(d) phase bounded (${PHASE:-?} ms, 900..1600)" \
    eval '[ -n "$PHASE" ] && [ "$PHASE" -ge 900 ] && [ "$PHASE" -le 1600 ]'

# ---- (e) UNKNOWN: a configuration error, no UDP remote
#   upstream's option checks take a --key/--cert argument whose first ':'
#   comes before any '/' for a URI (3512e8d3: "pkcs11:...") and leave it to
#   the TLS library.  A Windows drive letter ("Z:/.../missing.key", as the
#   other cases use) looks like one, so such a path is never checked on
#   Windows, unpatched master included, and --server-probe-only, which
#   does not load the private key, probes as usual (e3, recorded, not a
#   check).  A key file named relative to the working directory (what the
#   Windows GUI uses: it starts openvpn.exe in the config directory) and
#   the --tls-crypt key, which the probe needs, are checked.
conf e none "127.0.0.1 $P1 udp"
sed -i 's|^key .*|key "missing.key"|' "$D/e.ovpn"
run e
check "(e) missing key file (relative name): exit 3 (got $RC)" test "$RC" -eq 3
check "(e) the options error, on standard error, names --key" grep -q -- '--key fails with' "$D/e.err"
conf e1 tls-crypt "127.0.0.1 $P3 udp"
sed -i 's|tc\.key|missing-tc.key|' "$D/e1.ovpn"
run e1
check "(e1) missing --tls-crypt key file: exit 3 (got $RC)" test "$RC" -eq 3
conf e3 none "127.0.0.1 $P1 udp"
sed -i 's|client\.key|missing.key|' "$D/e3.ovpn"
run e3
tb_log "(e3) not a check: --key \"Z:/.../missing.key\" (a drive letter, taken for a URI scheme and not checked): exit $RC"
conf e2 none "127.0.0.1 $P1 tcp-client"
run e2
check "(e2) no UDP remote: exit 3 (got $RC)" test "$RC" -eq 3
check "(e2) first line 'SERVER-PROBE UNKNOWN: ...'" has e2 '^SERVER-PROBE UNKNOWN: '

# ---- (f) a silent name server: names are resolved one after the other, and
#          no new lookup starts once 1 s is spent.  The resolver gives up
#          after 3 s (resolv.conf timeout:3 attempts:1), so the first slow
#          name takes 3 s and the second is never looked up.
: >"$D/dns.log"
conf f none "a.slow.test $P1 udp" "b.slow.test $P1 udp" "127.0.0.1 $P1 udp"
run f
check "(f) the live server answered: exit 1 (got $RC)" test "$RC" -eq 1
check "(f) 127.0.0.1:$P1 answered, place 1" \
    test "$(status f "127.0.0.1:$P1") $(place f "127.0.0.1:$P1")" = "answered 1"
check "(f) a.slow.test was looked up" grep -q '^a.slow.test$' "$D/dns.log"
check "(f) b.slow.test was not looked up (1 s spent)" eval '! grep -q "^b.slow.test" "$D/dns.log"'
check "(f) both slow names not probed: not-resolved" \
    test "$(status f "a.slow.test:$P1") $(status f "b.slow.test:$P1")" = "not-resolved not-resolved"
check "(f) phase bounded by the resolver's timeout + 1 s (${PHASE:-?} ms <= 5000; wall $MS ms)" \
    le "${PHASE:-}" 5000
tb_log "name server queries in (f): $(sort "$D/dns.log" | uniq -c | tr '\n' ' ')"

echo "$((n - fails)) passed, $fails failed"
[ "$fails" -eq 0 ]
