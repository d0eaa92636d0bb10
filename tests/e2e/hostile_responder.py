#!/usr/bin/env python3
"""hostile_responder.py: a plain-mode (no tls-auth/tls-crypt) UDP peer that
answers every SERVER_PROBE with a PROBE_REPLY whose fields it is told to
use, and otherwise only records what it receives.  It plays the hostile
configured remote (or the on-path attacker of an unwrapped client) of the
oob-server-probe e2e tests.  Loopback only; python3 stdlib only.

  hostile_responder.py --listen 127.0.0.1:PORT --log FILE
        [--prio N] [--weight N] [--mld N] [--lifetime N] [--flags N]
        [--sid-mode echo|wrong] [--max-seconds S]

Every datagram it gets is logged as one line "op=<opcode> len=<bytes>";
every reply it sends as "reply prio=.. weight=.. mld=.. lifetime=..
flags=.. probe-sid=<hex> echoed-sid=<hex>" (the session id of the probe
it answers, and the one the reply echoes: different with --sid-mode
wrong).  It exits after --max-seconds (default 120).
"""

import argparse
import os
import select
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "testbed"))
from pktgen import (MSG_PROBE_REPLY, MSG_SERVER_PROBE,  # noqa: E402
                    P_CONTROL_OOB_V1, TLV_PROBE_REPLY, parse_target)


def reply_for(probe, a):
    """(the PROBE_REPLY for a plain SERVER_PROBE, the session id it echoes),
    or (None, None)"""
    if len(probe) < 11 or probe[0] != P_CONTROL_OOB_V1 << 3:
        return None, None
    if struct.unpack(">H", probe[9:11])[0] != MSG_SERVER_PROBE:
        return None, None
    sid = probe[1:9]
    if a.sid_mode == "wrong":
        sid = bytes(b ^ 0xff for b in sid)
    body = sid + struct.pack(">HHHHI", a.prio, a.weight, a.mld, a.lifetime,
                             a.flags)
    payload = struct.pack(">HHH", MSG_PROBE_REPLY, TLV_PROBE_REPLY, len(body)) + body
    cookie = os.urandom(8)
    return bytes([P_CONTROL_OOB_V1 << 3]) + cookie + payload, sid


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--prio", type=int, default=0)
    ap.add_argument("--weight", type=int, default=65535)
    ap.add_argument("--mld", type=int, default=65535)
    ap.add_argument("--lifetime", type=int, default=65535)
    ap.add_argument("--flags", type=lambda x: int(x, 0), default=0xffffffff)
    ap.add_argument("--sid-mode", choices=("echo", "wrong"), default="echo")
    ap.add_argument("--max-seconds", type=float, default=120)
    a = ap.parse_args()

    fam, host, port = parse_target(a.listen)
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.bind((host, port))
    end = time.monotonic() + a.max_seconds
    with open(a.log, "a", buffering=1) as log:
        log.write("listening\n")
        while time.monotonic() < end:
            r, _, _ = select.select([s], [], [], 0.2)
            if not r:
                continue
            pkt, src = s.recvfrom(4096)
            log.write("op=%d len=%d\n" % (pkt[0] >> 3 if pkt else -1, len(pkt)))
            rep, echoed = reply_for(pkt, a)
            if rep:
                sent = s.sendto(rep, src)
                log.write("reply prio=%d weight=%d mld=%d lifetime=%d flags=%#x "
                          "probe-sid=%s echoed-sid=%s len=%d\n"
                          % (a.prio, a.weight, a.mld, a.lifetime, a.flags,
                             pkt[1:9].hex(), echoed.hex(), sent))


if __name__ == "__main__":
    main()
