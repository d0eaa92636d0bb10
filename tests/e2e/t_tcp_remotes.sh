#!/bin/bash
# A list of TCP remotes only (issue 27, a 2.6-only defect): --server-probe
# has nothing to probe, so the client must behave as without it (SPEC 5).
# Remotes A (its server down at first) and B, both tcp-client: the client
# connects to B; A comes up; SIGUSR1: the unpatched client reconnects to
# B, the connected remote, and so must the patched one with
# --server-probe (the 2.6 series before issue 27 started over at the top
# of the list after its empty phase and reconnected to A). Runs against
# the unpatched client first, as the oracle.
# Then a UDP remote whose server is gone (its port closed: the probe is
# refused) before the TCP remote B: the client connects to B; after
# SIGUSR1 its first attempt goes to B again, as the unpatched client's
# (the series before "oob_client: keep the list's position when a phase
# learned nothing" ranked the refused UDP remote first: soak seed
# 8686968).
# Exit 0 pass, 1 fail, 77 skip.
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2034  # read by lib.sh (tb_port)
TB_PORT_BASE=${TB_PORT_BASE_TCP_REMOTES:-39000}
# shellcheck source=../../testbed/lib.sh
. "$here/../../testbed/lib.sh"

tb_setup tcp_remotes server-probe -- "$@"

PA=$(tb_port 1) PB=$(tb_port 2)
tb_server sb "$PB" --proto tcp-server
a_up=0
for who in unpatched patched; do
    c=c_$who
    if [ $who = unpatched ]; then
        tb_client "$c" --bin "$TB_BASELINE" -- --remote 127.0.0.1 "$PA" tcp-client \
            --remote 127.0.0.1 "$PB" tcp-client --connect-retry 1
    else
        tb_stop sa
        a_up=0
        tb_client "$c" -- --remote 127.0.0.1 "$PA" tcp-client \
            --remote 127.0.0.1 "$PB" tcp-client --connect-retry 1 --server-probe
    fi
    if ! tb_wait_connected "$c" 30 >/dev/null; then
        not_ok "$who: connected with A down"
        continue
    fi
    check "$who: connected to B while A is down ($(tb_connected_server "$c"))" \
        test "$(tb_connected_server "$c")" = "127.0.0.1:$PB"
    [ $a_up = 1 ] || tb_server sa "$PA" --proto tcp-server
    a_up=1
    kill -USR1 "$(tb_pid "$c")"
    if tb_wait_lines "$c" 2 "Initialization Sequence Completed"; then
        check "$who: after SIGUSR1 reconnected to the connected remote B ($(tb_connected_server "$c"))" \
            test "$(tb_connected_server "$c")" = "127.0.0.1:$PB"
    else
        not_ok "$who: reconnected after SIGUSR1"
        tb_tail "$c"
    fi
    if [ $who = patched ]; then
        nl=$(grep -c "server-probe: no UDP remote to probe" "$TB_DIR/$c.log")
        check "patched: says that there is nothing to probe ($nl line(s))" test "$nl" -ge 1
        probes=$(grep -c "server-probe: probing" "$TB_DIR/$c.log")
        check "patched: no probe phase ran ($probes)" test "$probes" = 0
    fi
    tb_stop "$c"
done

# a refused UDP remote before the TCP remote of the session
PU=$(tb_port 3)
for who in unpatched patched; do
    c=cu_$who
    if [ $who = unpatched ]; then
        tb_client "$c" --bin "$TB_BASELINE" -- --remote 127.0.0.1 "$PU" udp \
            --remote 127.0.0.1 "$PB" tcp-client --connect-retry 1 --connect-timeout 2
    else
        tb_client "$c" -- --remote 127.0.0.1 "$PU" udp \
            --remote 127.0.0.1 "$PB" tcp-client --connect-retry 1 --connect-timeout 2 --server-probe
    fi
    if ! tb_wait_connected "$c" 30 >/dev/null; then
        not_ok "$who: connected to B behind the dead UDP remote"
        tb_tail "$c"
        continue
    fi
    kill -USR1 "$(tb_pid "$c")"
    if tb_wait_lines "$c" 2 "Initialization Sequence Completed"; then
        first=$(awk '/SIGUSR1\[hard/ { s = 1 } s && /link remote:/ { sub(/.*link remote: /, ""); print; exit }' \
            "$TB_DIR/$c.log")
        check "$who: the first attempt after SIGUSR1 goes to the TCP remote of the session ($first)" \
            test "$first" = "[AF_INET]127.0.0.1:$PB"
    else
        not_ok "$who: reconnected after SIGUSR1"
        tb_tail "$c"
    fi
    tb_stop "$c"
done

echo "1..$n"
[ "$fails" -eq 0 ]
