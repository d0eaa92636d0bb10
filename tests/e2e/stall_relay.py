#!/usr/bin/env python3
"""stall_relay.py LISTEN UPSTREAM PIDFILE STALL_MS: a UDP relay on
127.0.0.1 that stalls its client once.

Datagrams from the first client go to UPSTREAM and back.  On the first
datagram back from UPSTREAM (a probe reply) it stops the client process
(SIGSTOP, pid read from PIDFILE), forwards the datagram, waits STALL_MS
and lets the client go on (SIGCONT): the reply arrives at once, the
client reads it STALL_MS late, as a client on a busy host does.  Prints
"stalled PID MS" when it did.  Ends after 60 s, or on SIGTERM (with the
client continued).
"""
import os
import select
import signal
import socket
import sys
import time

listen, upstream, pidfile, stall_ms = (int(sys.argv[1]), int(sys.argv[2]),
                                       sys.argv[3], float(sys.argv[4]))
pid = None


def cont(*_):
    if pid:
        try:
            os.kill(pid, signal.SIGCONT)
        except OSError:
            pass
    sys.exit(0)


signal.signal(signal.SIGTERM, cont)
down = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
down.bind(("127.0.0.1", listen))
up = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
up.bind(("127.0.0.1", 0))
client = None
stalled = False
t_end = time.monotonic() + 60
print("ready", flush=True)
while time.monotonic() < t_end:
    r, _, _ = select.select([down, up], [], [], 0.5)
    if down in r:
        data, addr = down.recvfrom(4096)
        if client is None:
            client = addr
        if addr == client:
            up.sendto(data, ("127.0.0.1", upstream))
    if up in r:
        data, _ = up.recvfrom(4096)
        if client is None:
            continue
        if not stalled:
            for _ in range(200):
                try:
                    with open(pidfile) as f:
                        pid = int(f.read().strip())
                    break
                except (OSError, ValueError):
                    time.sleep(0.01)
            if pid:
                os.kill(pid, signal.SIGSTOP)
                down.sendto(data, client)
                time.sleep(stall_ms / 1000)
                os.kill(pid, signal.SIGCONT)
                stalled = True
                print("stalled %d %d" % (pid, stall_ms), flush=True)
                continue
        down.sendto(data, client)
cont()
