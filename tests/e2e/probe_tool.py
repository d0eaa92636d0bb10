#!/usr/bin/env python3
"""probe_tool.py: craft unwrapped (plain mode) OOB SERVER_PROBE packets for
the end-to-end tests of the oob-server-probe series (python3 stdlib only).

Wire format (big endian), plain mode, key id 0:
  probe:  0x60 | own session id (8) | uint16 0x0100 SERVER_PROBE
          | TLV uint16 0x0200, uint16 len (12 + padding),
            uint64 unix time (s), uint32 flags 0, padding zeros
  reply:  0x60 | server cookie (8) | uint16 0x0101 PROBE_REPLY
          | TLV 0x0201 len >= 20: uint64 echoed probe session id,
            uint16 priority, uint16 weight, uint16 max_latency_diff,
            uint16 connect_lifetime, uint32 flags

Sub-commands (each prints one line of key=value pairs):

  one --target T [--variant V] [--ts-offset S] [--pad N] [--timeout S]
      send one crafted packet and wait up to --timeout for an answer.
      Variants: valid, trunc (TLV length runs past the end), short (TLV
      shorter than its 12-byte minimum), wrongtype (message 0x0101),
      keyid (first byte 0x61), unknown-crit (an unknown TLV without the
      optional bit before the probe TLV), unknown-opt (the same with the
      optional bit set: must still be answered), notlv (no probe TLV).
      Output: reply=0|1 lport= (the local port it was sent from, to find
      the server's log line about it) len= sid_ok= prio= weight= mld=
      lifetime= flags=
      Exit 0 when a reply came, 1 when none came, 2 on bad input.

  reset --target T [--timeout S]
      send one plain P_CONTROL_HARD_RESET_CLIENT_V2 (opcode 7: the start of
      a new handshake, which passes the same --connect-freq-initial limiter
      as a probe) and wait for the server's HMAC-cookie reset (opcode 8).
      Output: reply=0|1 lport= op= len=

  burst --target T --count N [--pad N] [--wait S]
      send N valid probes as fast as possible (every probe its own session
      id), then keep reading for --wait s. Output: sent= replies= valid=
      send_s= (time the sends took) first_reply_s= last_reply_s=

  flood --target T --count N --pid PID [--batch B] [--warmup W] [--pad N]
      for the memory check: W probes (warm-up), read VmRSS of PID, then N
      probes in batches of B (drain replies between batches), wait 0.5 s,
      read VmRSS again. Output: warmup= sent= replies= rss_kb_before=
      rss_kb_after= rss_growth_kb= elapsed_s=

  spoof --target T --src-port X [--count N] [--timeout S]   (root)
      send N valid probes from 127.0.0.1:X, a port some other process
      (a connected openvpn client) holds, through a raw socket, and sniff
      what the target sends back to port X. Output: sent= replies= valid=
      other= (other = opcode-12 datagrams to X that are no PROBE_REPLY)

Only loopback targets are accepted.
"""

import argparse
import os
import select
import socket
import struct
import sys
import time

# the packet constants, the target parser and /proc readers are shared
# with the benchmark's packet generator
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "testbed"))
from pktgen import (MSG_PROBE_REPLY, MSG_SERVER_PROBE,  # noqa: E402
                    P_CONTROL_OOB_V1, TLV_PROBE_PARAM, TLV_PROBE_REPLY,
                    parse_target, proc_rss_kb as rss_kb)

TLV_OPTIONAL = 0x8000


def build(sid, variant="valid", ts=None, pad=8):
    if ts is None:
        ts = int(time.time())
    first = P_CONTROL_OOB_V1 << 3
    mtype = MSG_SERVER_PROBE
    body = struct.pack(">QI", ts, 0) + b"\x00" * pad
    tlv = struct.pack(">HH", TLV_PROBE_PARAM, len(body)) + body
    pre = b""
    if variant == "valid":
        pass
    elif variant == "trunc":
        # the TLV claims 12 + pad bytes but only 8 follow
        tlv = struct.pack(">HH", TLV_PROBE_PARAM, 12 + pad) + struct.pack(">Q", ts)
    elif variant == "short":
        # complete TLV, but shorter than the 12-byte minimum
        tlv = struct.pack(">HH", TLV_PROBE_PARAM, 8) + struct.pack(">Q", ts)
    elif variant == "wrongtype":
        mtype = MSG_PROBE_REPLY
    elif variant == "keyid":
        first |= 1
    elif variant == "unknown-crit":
        pre = struct.pack(">HH", 0x0777, 4) + b"\x00" * 4
    elif variant == "unknown-opt":
        pre = struct.pack(">HH", TLV_OPTIONAL | 0x0777, 4) + b"\x00" * 4
    elif variant == "notlv":
        tlv = b""
    else:
        raise SystemExit("probe_tool: unknown variant %s" % variant)
    return bytes([first]) + sid + struct.pack(">H", mtype) + pre + tlv


def parse_reply(pkt):
    """dict with the reply's fields, or None when it is no PROBE_REPLY"""
    if len(pkt) < 11 or pkt[0] != (P_CONTROL_OOB_V1 << 3):
        return None
    (mtype,) = struct.unpack_from(">H", pkt, 9)
    if mtype != MSG_PROBE_REPLY:
        return None
    off = 11
    while off + 4 <= len(pkt):
        t, ln = struct.unpack_from(">HH", pkt, off)
        off += 4
        if off + ln > len(pkt):
            return None
        if (t & 0x7fff) == TLV_PROBE_REPLY and ln >= 20:
            sid = pkt[off:off + 8]
            prio, weight, mld, life, flags = struct.unpack_from(">HHHHI", pkt, off + 8)
            return {"cookie": pkt[1:9], "sid": sid, "prio": prio, "weight": weight,
                    "mld": mld, "lifetime": life, "flags": flags}
        off += ln
    return None


def mksock(target, rcvbuf=1 << 22):
    fam, host, port = parse_target(target)
    s = socket.socket(fam, socket.SOCK_DGRAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
    except OSError:
        pass
    s.connect((host, port))
    return s


def drain(sock, sids, counts, timeout):
    """read replies until timeout s of silence-bounded waiting has passed"""
    end = time.monotonic() + timeout
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return
        r, _, _ = select.select([sock], [], [], left)
        if not r:
            return
        while True:
            try:
                data = sock.recv(4096, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                break
            except ConnectionRefusedError:
                break
            t = time.monotonic()
            counts["replies"] += 1
            if counts.get("first") is None:
                counts["first"] = t
            counts["last"] = t
            rep = parse_reply(data)
            if rep is not None and rep["sid"] in sids:
                counts["valid"] += 1
                sids.discard(rep["sid"])


def cmd_one(a):
    s = mksock(a.target)
    sid = os.urandom(8)
    pkt = build(sid, a.variant, int(time.time()) + a.ts_offset, a.pad)
    t0 = time.monotonic()
    try:
        s.send(pkt)
    except ConnectionRefusedError:
        pass
    got = None
    end = t0 + a.timeout
    while got is None:
        left = end - time.monotonic()
        if left <= 0:
            break
        r, _, _ = select.select([s], [], [], left)
        if not r:
            break
        try:
            got = s.recv(4096)
        except ConnectionRefusedError:
            continue
    res = {"variant": a.variant, "sent_len": len(pkt), "reply": 0,
           "lport": s.getsockname()[1]}
    if got is not None:
        res["reply"] = 1
        res["len"] = len(got)
        res["op"] = got[0] >> 3
        res["rtt_ms"] = round((time.monotonic() - t0) * 1000, 2)
        rep = parse_reply(got)
        if rep is None:
            res["parsed"] = 0
        else:
            res["parsed"] = 1
            res["sid_ok"] = int(rep["sid"] == sid)
            for k in ("prio", "weight", "mld", "lifetime", "flags"):
                res[k] = rep[k]
    print(" ".join("%s=%s" % kv for kv in res.items()))
    return 0 if got is not None else 1


P_CONTROL_HARD_RESET_CLIENT_V2 = 7


def cmd_reset(a):
    s = mksock(a.target)
    # plain mode: op|kid, session id, ACK array length 0, message packet id
    pkt = (bytes([P_CONTROL_HARD_RESET_CLIENT_V2 << 3]) + os.urandom(8)
           + b"\x00" + struct.pack(">I", 0))
    try:
        s.send(pkt)
    except ConnectionRefusedError:
        pass
    got = None
    end = time.monotonic() + a.timeout
    while got is None:
        left = end - time.monotonic()
        if left <= 0:
            break
        r, _, _ = select.select([s], [], [], left)
        if not r:
            break
        try:
            got = s.recv(4096)
        except ConnectionRefusedError:
            continue
    res = {"reply": int(got is not None), "lport": s.getsockname()[1]}
    if got is not None:
        res["op"] = got[0] >> 3
        res["len"] = len(got)
    print(" ".join("%s=%s" % kv for kv in res.items()))
    return 0 if got is not None else 1


def cmd_burst(a):
    s = mksock(a.target)
    s.setblocking(False)
    sids = set()
    counts = {"replies": 0, "valid": 0, "first": None, "last": None}
    ts = int(time.time())
    t0 = time.monotonic()
    sent = 0
    while sent < a.count:
        sid = os.urandom(8)
        try:
            s.send(build(sid, a.variant, ts + a.ts_offset, a.pad))
        except BlockingIOError:
            drain(s, sids, counts, 0.001)
            continue
        except ConnectionRefusedError:
            continue
        sids.add(sid)
        sent += 1
        if sent % 64 == 0:
            drain(s, sids, counts, 0)
    t_sent = time.monotonic() - t0
    drain(s, sids, counts, a.wait)
    res = {"sent": sent, "replies": counts["replies"], "valid": counts["valid"],
           "send_s": round(t_sent, 3)}
    for k in ("first", "last"):
        res[k + "_reply_s"] = ("-" if counts[k] is None
                               else round(counts[k] - t0, 3))
    print(" ".join("%s=%s" % kv for kv in res.items()))
    return 0


def cmd_flood(a):
    s = mksock(a.target)
    s.setblocking(False)
    counts = {"replies": 0, "valid": 0, "first": None, "last": None}

    def send_n(n):
        sids = set()
        ts = int(time.time())
        done = 0
        while done < n:
            b = min(a.batch, n - done)
            for _ in range(b):
                sid = os.urandom(8)
                try:
                    s.send(build(sid, "valid", ts, a.pad))
                except (BlockingIOError, ConnectionRefusedError):
                    continue
                sids.add(sid)
            done += b
            # let the server catch up, and empty our receive queue
            drain(s, sids, counts, a.pause)
            if len(sids) > 65536:
                sids.clear()
            ts = int(time.time())
        drain(s, sids, counts, 0.3)
        return done

    t0 = time.monotonic()
    warm = send_n(a.warmup)
    time.sleep(0.3)
    before = rss_kb(a.pid)
    counts["replies"] = counts["valid"] = 0
    sent = send_n(a.count)
    time.sleep(0.5)
    after = rss_kb(a.pid)
    res = {"warmup": warm, "sent": sent, "replies": counts["replies"],
           "valid": counts["valid"], "rss_kb_before": before,
           "rss_kb_after": after, "rss_growth_kb": after - before,
           "elapsed_s": round(time.monotonic() - t0, 2)}
    print(" ".join("%s=%s" % kv for kv in res.items()))
    return 0


def udp_raw(src, dst, sport, dport, payload):
    """an IPv4 header + UDP header (checksum 0) + payload"""
    ulen = 8 + len(payload)
    udp = struct.pack(">HHHH", sport, dport, ulen, 0)
    tot = 20 + ulen
    hdr = struct.pack(">BBHHHBBH4s4s", 0x45, 0, tot, 0, 0, 64, socket.IPPROTO_UDP, 0,
                      socket.inet_aton(src), socket.inet_aton(dst))
    s = sum(struct.unpack(">10H", hdr))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    hdr = hdr[:10] + struct.pack(">H", ~s & 0xffff) + hdr[12:]
    return hdr + udp + payload


def cmd_spoof(a):
    """send --count valid probes to --target from 127.0.0.1:--src-port
    (a port another process holds) through a raw socket, and sniff the
    UDP datagrams the target sends back to that port (a raw IPPROTO_UDP
    socket sees a copy of every datagram delivered to this host)"""
    fam, host, port = parse_target(a.target)
    if fam != socket.AF_INET:
        raise SystemExit("probe_tool spoof: IPv4 only")
    snd = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    snd.setsockopt(socket.IPPROTO_IP, socket.IP_HDRINCL, 1)
    snf = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_UDP)
    snf.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    sids = set()
    for _ in range(a.count):
        sid = os.urandom(8)
        sids.add(sid)
        snd.sendto(udp_raw("127.0.0.1", host, a.src_port, port,
                           build(sid, "valid", int(time.time()), a.pad)), (host, 0))
    replies = valid = other = 0
    end = time.monotonic() + a.timeout
    while True:
        left = end - time.monotonic()
        if left <= 0:
            break
        r, _, _ = select.select([snf], [], [], left)
        if not r:
            break
        pkt = snf.recv(65535)
        ihl = (pkt[0] & 15) * 4
        sport, dport = struct.unpack_from(">HH", pkt, ihl)
        if sport != port or dport != a.src_port:
            continue
        data = pkt[ihl + 8:]
        if not data or data[0] >> 3 != P_CONTROL_OOB_V1:
            continue        # the tunnel's own traffic
        rep = parse_reply(data)
        if rep is None:
            other += 1
            continue
        replies += 1
        if rep["sid"] in sids:
            valid += 1
    print("sent=%d replies=%d valid=%d other=%d" % (a.count, replies, valid, other))
    return 0 if replies else 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("one")
    p.add_argument("--target", required=True)
    p.add_argument("--variant", default="valid")
    p.add_argument("--ts-offset", type=int, default=0)
    p.add_argument("--pad", type=int, default=8)
    p.add_argument("--timeout", type=float, default=0.5)
    p = sub.add_parser("reset")
    p.add_argument("--target", required=True)
    p.add_argument("--timeout", type=float, default=1.0)
    p = sub.add_parser("burst")
    p.add_argument("--target", required=True)
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--variant", default="valid")
    p.add_argument("--ts-offset", type=int, default=0)
    p.add_argument("--pad", type=int, default=8)
    p.add_argument("--wait", type=float, default=1.0)
    p = sub.add_parser("flood")
    p.add_argument("--target", required=True)
    p.add_argument("--count", type=int, default=100000)
    p.add_argument("--warmup", type=int, default=1000)
    p.add_argument("--batch", type=int, default=200)
    p.add_argument("--pause", type=float, default=0.002)
    p.add_argument("--pad", type=int, default=8)
    p.add_argument("--pid", type=int, required=True)
    p = sub.add_parser("spoof")
    p.add_argument("--target", required=True)
    p.add_argument("--src-port", type=int, required=True)
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--pad", type=int, default=8)
    p.add_argument("--timeout", type=float, default=0.5)
    a = ap.parse_args(argv)
    return {"one": cmd_one, "reset": cmd_reset, "burst": cmd_burst,
            "flood": cmd_flood, "spoof": cmd_spoof}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
