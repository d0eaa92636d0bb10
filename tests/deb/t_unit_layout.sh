#!/bin/bash
# The packaged openvpn in the distribution's openvpn-server@ /
# openvpn-client@ layout, without systemd: the package's own unit files
# (lib/systemd/system/openvpn-{server,client}@.service) are read, and their
# ExecStart is run in their WorkingDirectory (/etc/openvpn/server,
# /etc/openvpn/client) with the systemd specifiers filled in (%i instance,
# %t runtime dir) and Type=notify honoured (a NOTIFY_SOCKET listener must
# see READY=1). Paths of the package (/usr/sbin/openvpn, /etc/openvpn/...)
# are taken from the extracted package in PKG_ROOT; %t is a private dir
# whose subdirectories come from the package's tmpfiles.d entries.
#
#   (a) openvpn-server@plain: a config with none of the new options (the
#       stock configuration of a server) answers a crafted SERVER_PROBE
#       (tests/e2e/probe_tool.py) with the default priority 100, weight 50;
#   (b) openvpn-server@probe: tls-crypt and `server-probe-reply 0 75 10`;
#   (c) openvpn-client@probe: two remotes, a dead one first (a blackholing
#       relay) and (b), with `server-probe`: the client ranks (b) first and
#       connects within 30 s (1-2 s unloaded) instead of after the dead
#       one's timeout (about 60 s);
#   (d) the status file of (b) (--status %t/openvpn-server/status-%i.log
#       --status-version 2) is there, in version 2 format.
#
# PKG_ROOT=dir (dpkg-deb -x of the openvpn .deb) is required.
# Exit 0 pass, 1 fail, 77 skip.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by lib.sh (tb_port)
TB_PORT_BASE=${TB_PORT_BASE_UNIT_LAYOUT:-26000}
# shellcheck source=../../testbed/lib.sh
. "$here/../../testbed/lib.sh"

[ -n "${PKG_ROOT:-}" ] && [ -d "$PKG_ROOT" ] || tb_skip "PKG_ROOT (extracted openvpn .deb) is not set"
PKG_ROOT=$(cd "$PKG_ROOT" && pwd)
TB_BIN="$PKG_ROOT/usr/sbin/openvpn"
command -v python3 >/dev/null 2>&1 || tb_skip_or_ci_fail "python3 is missing"
tb_need_root
tb_need_bin "$TB_BIN"
tb_need_relay
# the package is built with the series: a missing option is a broken
# package, never a reason to skip
tb_has_opt "$TB_BIN" server-probe-reply || tb_die "the packaged openvpn has no --server-probe-reply"
unitdir=""
for d in lib/systemd/system usr/lib/systemd/system; do
    [ -f "$PKG_ROOT/$d/openvpn-server@.service" ] && unitdir="$PKG_ROOT/$d"
done
[ -n "$unitdir" ] || tb_die "the package has no openvpn-server@.service"
tb_isolate "$@"
tb_init unit-layout
tb_pki

RUN="$TB_DIR/run"
mkdir -p "$RUN"
# the package's tmpfiles.d entries for /run (e.g. /run/openvpn-server)
for f in "$PKG_ROOT"/usr/lib/tmpfiles.d/*.conf; do
    [ -f "$f" ] || continue
    awk '$1 == "d" && $2 ~ /^\/run\// { print $2, $3 }' "$f" |
        while read -r p mode; do
            mkdir -p "$RUN/${p#/run/}" && chmod "$mode" "$RUN/${p#/run/}"
        done
done

# unit_key UNIT KEY: the value of KEY= in the package's UNIT file
unit_key() { sed -n "s/^$2=//p" "$unitdir/$1" | tail -n 1; }

# pkgpath PATH: a path of the package inside PKG_ROOT
pkgpath()
{
    case $1 in
        /usr/*|/etc/*|/lib/*) echo "$PKG_ROOT$1" ;;
        *) echo "$1" ;;
    esac
}

# unit_start NAME UNIT INSTANCE: run UNIT's ExecStart for INSTANCE in its
# WorkingDirectory, with NOTIFY_SOCKET; its output is NAME.log
unit_start()
{
    local name=$1 unit=$2 inst=$3 exec wd w cmd=() sock
    exec=$(unit_key "$unit" ExecStart)
    wd=$(unit_key "$unit" WorkingDirectory)
    [ -n "$exec" ] && [ -n "$wd" ] || tb_die "$unit: no ExecStart/WorkingDirectory"
    echo "# $unit: WorkingDirectory=$wd"
    echo "# $unit: ExecStart=$exec"
    exec=${exec#[-@+!:]}
    for w in $exec; do
        w=${w//%t/$RUN}
        w=${w//%i/$inst}
        w=${w//%I/$inst}
        cmd+=("$(pkgpath "$w")")
    done
    sock="$TB_DIR/$name.notify"
    rm -f "$sock"
    tb__spawn "$name-notify" python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a") as f:
    while True:
        f.write(s.recv(4096).decode(errors="replace").replace("\n", " ") + "\n")
        f.flush()' "$sock" "$TB_DIR/$name.notify.log"
    for ((w = 0; w < 500; w++)); do [ -S "$sock" ] && break; sleep 0.01; done
    ln -sf "$name.stderr" "$TB_DIR/$name.log"
    echo "# $name: (cd $(pkgpath "$wd") && ${cmd[*]})"
    pushd "$(pkgpath "$wd")" >/dev/null || tb_die "no $(pkgpath "$wd") in the package"
    date +%s%N >"$TB_DIR/$name.t0"
    tb__spawn "$name" env NOTIFY_SOCKET="$sock" "${cmd[@]}"
    popd >/dev/null || true
}

# wait_notify NAME WHAT TIMEOUT_S
wait_notify()
{
    local end=$(($(date +%s) + $3))
    while :; do
        grep -q "$2" "$TB_DIR/$1.notify.log" 2>/dev/null && return 0
        [ "$(date +%s)" -lt $end ] || return 1
        sleep 0.05
    done
}

kv() { sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"; }

SD="$PKG_ROOT/etc/openvpn/server"
CD="$PKG_ROOT/etc/openvpn/client"
[ -d "$SD" ] && [ -d "$CD" ] || tb_die "the package has no /etc/openvpn/server and /etc/openvpn/client"
rm -f "$SD"/* "$CD"/*
trap 'rm -f "$SD"/* "$CD"/*; tb__cleanup' EXIT
cp "$TB_PKI/ca.crt" "$TB_PKI/server.crt" "$TB_PKI/server.key" "$TB_PKI/tc.key" "$SD/"
cp "$TB_PKI/ca.crt" "$TB_PKI/client.crt" "$TB_PKI/client.key" "$TB_PKI/tc.key" "$CD/"
P_PLAIN=$(tb_port 1) P_PROBE=$(tb_port 2) P_DEAD=$(tb_port 3)

# server_conf FILE PORT SUBNET DEV [extra lines]: relative paths, as an
# admin writes them for openvpn-server@
server_conf()
{
    local f=$1 port=$2 net=$3 dev=$4; shift 4
    {
        printf '%s\n' "port $port" "proto udp4" "local 127.0.0.1" "dev $dev" "dev-type tun" \
            "topology subnet" "server $net 255.255.255.0" "ca ca.crt" "cert server.crt" \
            "key server.key" "dh none" "keepalive 10 60" "disable-dco" "verb 4"
        printf '%s\n' "$@"
    } >"$f"
    TB_TUNS+=("$dev")
}

# ------------------------------------------------------------------ (a)
server_conf "$SD/plain.conf" "$P_PLAIN" "$TB_SUBNET_PREFIX.201.0" "tbu$(( $$ % 10000 ))a"
unit_start srv-plain openvpn-server@.service plain
if tb__wait_log srv-plain "Initialization Sequence Completed" 20; then
    ok "openvpn-server@plain (no new options) started from /etc/openvpn/server"
else
    tb_tail srv-plain; not_ok "openvpn-server@plain did not start"
fi
check "openvpn-server@plain: Type=notify, READY=1 on the NOTIFY_SOCKET" wait_notify srv-plain READY=1 10
line=$(timeout 60 python3 "$here/../e2e/probe_tool.py" one --target "127.0.0.1:$P_PLAIN" --timeout 2)
check "openvpn-server@plain answers a SERVER_PROBE with the defaults: prio 100, weight 50 ($line)" \
    test "$(kv reply "$line")" = 1 -a "$(kv sid_ok "$line")" = 1 \
         -a "$(kv prio "$line")" = 100 -a "$(kv weight "$line")" = 50

# ------------------------------------------------------------------ (b)
server_conf "$SD/probe.conf" "$P_PROBE" "$TB_SUBNET_PREFIX.202.0" "tbu$(( $$ % 10000 ))b" \
    "tls-crypt tc.key" "server-probe-reply 0 75 10"
unit_start srv-probe openvpn-server@.service probe
if tb__wait_log srv-probe "Initialization Sequence Completed" 20; then
    ok "openvpn-server@probe (tls-crypt, server-probe-reply 0 75 10) started"
else
    tb_tail srv-probe; not_ok "openvpn-server@probe did not start"
fi
check "openvpn-server@probe: READY=1 on the NOTIFY_SOCKET" wait_notify srv-probe READY=1 10

# ------------------------------------------------------------------ (c)
tb_relay rdead "127.0.0.1:$P_DEAD" "127.0.0.1:$P_PROBE" --blackhole
{
    printf '%s\n' client "dev null" ifconfig-noexec route-noexec \
        "remote 127.0.0.1 $P_DEAD udp4" "remote 127.0.0.1 $P_PROBE udp4" server-probe \
        "remote-cert-tls server" "ca ca.crt" "cert client.crt" "key client.key" \
        "tls-crypt tc.key" "verb 4"
} >"$CD/probe.conf"
unit_start cli openvpn-client@.service probe
if ms=$(tb_wait_connected cli 60); then
    ok "openvpn-client@probe connected in $ms ms"
    check "openvpn-client@probe: connected within 30 s, not after the dead first remote's timeout (about 60 s) ($ms ms)" \
        test "$ms" -lt 30000
else
    not_ok "openvpn-client@probe did not connect"
    ms=""
fi
check "openvpn-client@probe: READY=1 on the NOTIFY_SOCKET" wait_notify cli READY=1 10
grep -F "server-probe:" "$TB_DIR/cli.log" | sed 's/^/#   | /'
check "the client's probe saw prio 10 weight 75 from openvpn-server@probe and ranked it first" \
    grep -qE "server-probe: .*127\.0\.0\.1:$P_PROBE rtt=.* prio=10 weight=75 place=1" "$TB_DIR/cli.log"
check "the dead first remote is reported without a reply" \
    grep -qE "server-probe: .*127\.0\.0\.1:$P_DEAD no reply" "$TB_DIR/cli.log"
check "the client connected to openvpn-server@probe" test "$(tb_connected_server cli)" = "127.0.0.1:$P_PROBE"

# ------------------------------------------------------------------ (d)
st="$RUN/openvpn-server/status-probe.log"
# written at start and then every 60 s: check the version 2 format only
end=$(($(date +%s) + 10))
while ! grep -q "^HEADER,CLIENT_LIST," "$st" 2>/dev/null && [ "$(date +%s)" -lt $end ]; do
    sleep 0.05
done
check "status file %t/openvpn-server/status-probe.log is written in version 2 format" \
    grep -q "^HEADER,CLIENT_LIST," "$st"

echo "1..$n"
[ "$fails" -eq 0 ] || exit 1
exit 0
