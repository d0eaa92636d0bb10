# shellcheck shell=bash
# testbed/field.sh: the field test bed (issue 24), sourced after lib.sh.
# Loopback hides routing; here the client, a router and the servers are
# network namespaces of their own, made by the test, joined by veth pairs:
#
#   client ns                router ns                       servers ns
#   fc0 198.51.100.2/24 ---- fr0 198.51.100.1/24
#   2001:db8:1::2/64         2001:db8:1::1/64
#                            fr1 203.0.113.1/24  ---------- fs0 203.0.113.10-12/24
#                            2001:db8:2::1/64               2001:db8:2::10-12/64
#
# The client's default routes go through the router, which masquerades
# (iptables and ip6tables MASQUERADE) towards the servers: a NAT as in a
# home router; fd_rebind flushes its conntrack table, so that the next
# packet of a flow leaves with a new source port. Servers and clients run
# with real tun devices and real routes: the servers push redirect-gateway.
# Addresses are the documentation ranges; nothing leaves the namespaces.
#
#   fd_up                      make the namespaces (cleanup at exit)
#   fd_server NAME IDX PROTO [-- ARGS]   a server in the servers ns on
#                              203.0.113.(10+IDX) or 2001:db8:2::(10+IDX)
#                              (PROTO udp4 or udp6), port 1194, pushing
#                              redirect-gateway def1 (ipv6 too for udp6)
#                              and keepalive 1 4; PROTO tcp-server with
#                              FD_ADDR/FD_PORT: a TCP server on one of
#                              those addresses, another port
#   fd_client NAME [--bin B] -- ARGS     a client in the client ns (tun)
#   fd_routes                  the client ns' routing tables, one line each
#   fd_rebind                  flush the router's conntrack table
#   fd_probe_nat on|off        the router lets out-of-band packets (server
#                              probes and their replies) pass untracked, so
#                              without NAT: the handshake that follows a
#                              probe then reaches the server from another
#                              address and port than the probe (a NAT that
#                              rebinds between probe and connect)

FD_NS_C="tbfc$$" FD_NS_R="tbfr$$" FD_NS_S="tbfs$$"
FD_UP=0

fd_in() { local ns=$1; shift; ip netns exec "$ns" "$@"; }

fd_down()
{
    [ "$FD_UP" = 1 ] || return 0
    FD_UP=0
    tb_stop_all
    local ns
    for ns in "$FD_NS_C" "$FD_NS_R" "$FD_NS_S"; do
        ip netns del "$ns" 2>/dev/null || true
    done
}

fd_up()
{
    command -v iptables >/dev/null || tb_skip_or_ci_fail "iptables is missing (make deps)"
    ip netns add "$FD_NS_C" && ip netns add "$FD_NS_R" && ip netns add "$FD_NS_S" ||
        tb_skip_or_ci_fail "cannot create network namespaces (ip netns add)"
    FD_UP=1
    trap 'fd_down; tb__cleanup' EXIT
    local ns
    for ns in "$FD_NS_C" "$FD_NS_R" "$FD_NS_S"; do
        fd_in "$ns" ip link set lo up
        fd_in "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 || true
    done
    ip link add fc0 netns "$FD_NS_C" type veth peer name fr0 netns "$FD_NS_R" &&
        ip link add fr1 netns "$FD_NS_R" type veth peer name fs0 netns "$FD_NS_S" ||
        tb_die "field: cannot create veth pairs"
    fd_in "$FD_NS_C" sh -ec '
        ip addr add 198.51.100.2/24 dev fc0
        ip -6 addr add 2001:db8:1::2/64 dev fc0 nodad
        ip link set fc0 up
        ip route add default via 198.51.100.1
        ip -6 route add default via 2001:db8:1::1'
    fd_in "$FD_NS_R" sh -ec '
        ip addr add 198.51.100.1/24 dev fr0
        ip -6 addr add 2001:db8:1::1/64 dev fr0 nodad
        ip addr add 203.0.113.1/24 dev fr1
        ip -6 addr add 2001:db8:2::1/64 dev fr1 nodad
        ip link set fr0 up; ip link set fr1 up
        sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
        iptables -t nat -A POSTROUTING -o fr1 -j MASQUERADE
        ip6tables -t nat -A POSTROUTING -o fr1 -j MASQUERADE' ||
        tb_die "field: cannot set up the router (iptables MASQUERADE)"
    fd_in "$FD_NS_S" sh -ec '
        for i in 10 11 12; do
            ip addr add 203.0.113.$i/24 dev fs0
            ip -6 addr add 2001:db8:2::$i/64 dev fs0 nodad
        done
        ip link set fs0 up
        ip route add default via 203.0.113.1
        ip -6 route add default via 2001:db8:2::1'
    # the client reaches the servers through the router
    fd_in "$FD_NS_C" ping -c1 -W2 203.0.113.10 >/dev/null 2>&1 ||
        tb_die "field: no IPv4 path from the client to the servers"
    local i
    for ((i = 0; i < 30; i++)); do
        fd_in "$FD_NS_C" ping -6 -c1 -W1 2001:db8:2::10 >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    tb_die "field: no IPv6 path from the client to the servers"
}

fd_server()
{
    local name=$1 idx=$2 proto=$3; shift 3
    [ "${1:-}" = "--" ] && shift
    local local4=${FD_ADDR:-203.0.113.$((10 + idx))} local6="2001:db8:2::$((10 + idx))" addr push6=()
    local port=${FD_PORT:-1194}
    local pool=(--server "192.0.2.$((idx * 64))" 255.255.255.192) dev="tbf4s$idx"
    addr=$local4
    if [ "$proto" = udp6 ]; then
        addr=$local6 dev="tbf6s$idx"
        pool=(--server "198.18.$idx.0" 255.255.255.0)
        push6=(--server-ipv6 "2001:db8:100:$idx::/64" --push "redirect-gateway ipv6")
    fi
    tb__spawn "$name" ip netns exec "$FD_NS_S" "$TB_BIN" \
        --mode server --tls-server --proto "$proto" --local "$addr" --port "$port" \
        "${pool[@]}" --topology subnet \
        "${push6[@]}" --push "redirect-gateway def1" --keepalive 1 4 \
        --dev "$dev" --dev-type tun --disable-dco \
        --ca "$TB_PKI/ca.crt" --cert "$TB_PKI/server.crt" --key "$TB_PKI/server.key" \
        --dh none --duplicate-cn --verb "$TB_VERB" --log "$TB_DIR/$name.log" "$@"
    echo "$addr $port $proto none $TB_BIN" >"$TB_DIR/$name.info"
    tb__wait_log "$name" "Initialization Sequence Completed" "$TB_START_TIMEOUT" ||
        { tb_tail "$name"; tb_die "field: server $name did not start"; }
}

fd_client()
{
    local name=$1 bin=$TB_BIN nobind=--nobind a; shift
    while [ $# -gt 0 ]; do
        case $1 in
            --bin) bin=$2; shift 2 ;;
            --) shift; break ;;
            *) tb_die "fd_client: unknown argument '$1'" ;;
        esac
    done
    for a in "$@"; do [ "$a" = --bind ] && nobind=""; done
    rm -f "$TB_DIR/$name.log" "$TB_DIR/$name.ms"
    echo "none $bin $*" >"$TB_DIR/$name.info"
    date +%s%N >"$TB_DIR/$name.t0"
    # shellcheck disable=SC2086  # $nobind: one word or none
    tb__spawn "$name" ip netns exec "$FD_NS_C" "$bin" --client --dev tbfc0 --dev-type tun \
        --disable-dco $nobind --remote-cert-tls server \
        --ca "$TB_PKI/ca.crt" --cert "$TB_PKI/client.crt" --key "$TB_PKI/client.key" \
        --verb "$TB_VERB" --log "$TB_DIR/$name.log" "$@"
}

# the client ns' routes, sorted (expires/metrics of kernel routes left out)
fd_routes()
{
    { fd_in "$FD_NS_C" ip -4 route show table all; fd_in "$FD_NS_C" ip -6 route show table all; } 2>/dev/null |
        grep -vE '^(local|broadcast|multicast|anycast|fe80|ff00)|table local' |
        sed -E 's/ (proto kernel|metric [0-9]+|pref medium|expires [0-9]+sec|linkdown)//g' | sort
}

fd_rebind() { fd_in "$FD_NS_R" conntrack -F >/dev/null 2>&1 || fd_in "$FD_NS_R" sh -c 'echo f > /proc/net/nf_conntrack' ; }

# opcodes 12 and 13 (P_CONTROL_OOB_V1, P_CONTROL_OOB_WKC_V1) in the
# first byte of the UDP payload: (byte & 0xf0) == 0x60
fd_probe_nat()
{
    local op=-A dir u32='0>>22&0x3C@8>>24&0xF0=0x60'
    [ "$1" = off ] && op=-D
    for dir in --dport --sport; do
        fd_in "$FD_NS_R" iptables -t raw "$op" PREROUTING -p udp "$dir" 1194 \
            -m u32 --u32 "$u32" -j CT --notrack ||
            tb_die "field: cannot change the probe rules (iptables u32, CT)"
    done
    fd_in "$FD_NS_R" conntrack -F >/dev/null 2>&1 || true
}

# fd_wait_lines NAME N STRING LIMIT_S: wait until NAME's log has N lines
# holding STRING; prints the ms it took from the call
fd_wait_lines()
{
    local name=$1 n=$2 str=$3 limit=$4 t0 now c
    t0=$(date +%s%N)
    while :; do
        c=$(grep -cF -- "$str" "$TB_DIR/$name.log" 2>/dev/null || true)
        [ "${c:-0}" -ge "$n" ] && { now=$(date +%s%N); echo $(( (now - t0) / 1000000 )); return 0; }
        now=$(date +%s%N)
        (( (now - t0) / 1000000000 >= limit )) && return 1
        tb__alive "$name" || return 1
        sleep 0.02
    done
}
