#!/usr/bin/env python3
"""pktgen.py: send crafted, unwrapped OpenVPN control packets at a UDP
server and count its stateless answers (python3 stdlib only).

Kinds:
  reset  P_CONTROL_HARD_RESET_CLIENT_V2, 14 bytes:
         0x38 | session id (8) | ack count 0 (1) | message packet id 0 (4)
         answered (stateless HMAC cookie path) by P_CONTROL_HARD_RESET_SERVER_V2
         (opcode 8) that acks our packet and names our session id.
  probe  SERVER_PROBE in P_CONTROL_OOB_V1, plain mode (no wrapping), 27 bytes:
         0x60 | session id (8) | uint16 0x0100 (SERVER_PROBE)
         | TLV type 0x0200 len 12: uint64 unix time (s), uint32 flags 0
         answered by PROBE_REPLY (opcode 12, message 0x0101) whose TLV 0x0201
         starts with the echoed session id.

Requests go out with at most --window unanswered at a time; one that gets
no answer within --timeout counts as lost. With --pid, the server's CPU time
(utime+stime from /proc/PID/stat, clock ticks) and VmRSS are read before
and after the run.

Output: one line of key=value pairs (or JSON with --json), e.g.
  kind=reset sent=20000 replies=20000 valid=20000 lost=0 elapsed_s=1.234
  pps=16207 rtt_us_median=45 cpu_ticks=42 clk_tck=100 cpu_us_per_reply=21.0
  rss_kb_before=9000 rss_kb_after=9004

Only loopback targets are accepted.
"""

import argparse
import ipaddress
import json
import os
import select
import socket
import struct
import sys
import time

OP_SHIFT = 3
P_CONTROL_HARD_RESET_CLIENT_V2 = 7
P_CONTROL_HARD_RESET_SERVER_V2 = 8
P_CONTROL_OOB_V1 = 12
MSG_SERVER_PROBE = 0x0100
MSG_PROBE_REPLY = 0x0101
TLV_PROBE_PARAM = 0x0200
TLV_PROBE_REPLY = 0x0201


def build_reset(sid):
    return (bytes([P_CONTROL_HARD_RESET_CLIENT_V2 << OP_SHIFT]) + sid
            + b"\x00" + struct.pack(">I", 0))


def build_probe(sid, now=None):
    ts = int(time.time() if now is None else now)
    tlv = struct.pack(">HH", TLV_PROBE_PARAM, 12) + struct.pack(">QI", ts, 0)
    return (bytes([P_CONTROL_OOB_V1 << OP_SHIFT]) + sid
            + struct.pack(">H", MSG_SERVER_PROBE) + tlv)


def reset_reply_sid(pkt):
    """The client session id a HARD_RESET_SERVER_V2 acks, or None."""
    if len(pkt) < 1 + 8 + 1 or pkt[0] >> OP_SHIFT != P_CONTROL_HARD_RESET_SERVER_V2:
        return None
    nack = pkt[9]
    off = 10 + 4 * nack
    if nack == 0 or len(pkt) < off + 8:
        return None
    return pkt[off:off + 8]


def probe_reply_sid(pkt):
    """The peer session id echoed by a PROBE_REPLY, or None."""
    if len(pkt) < 1 + 8 + 2 or pkt[0] >> OP_SHIFT != P_CONTROL_OOB_V1:
        return None
    off = 9
    (mtype,) = struct.unpack_from(">H", pkt, off)
    if mtype != MSG_PROBE_REPLY:
        return None
    off += 2
    while off + 4 <= len(pkt):
        t, ln = struct.unpack_from(">HH", pkt, off)
        off += 4
        if off + ln > len(pkt):
            return None
        if (t & 0x7fff) == TLV_PROBE_REPLY:
            if ln < 20:
                return None
            return pkt[off:off + 8]
        off += ln
    return None


def proc_cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        s = f.read()
    fields = s[s.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])   # utime, stime


def proc_sched_ns(pid):
    """CPU time in ns from /proc/PID/schedstat (finer than the clock ticks
    of /proc/PID/stat), or None where the kernel does not provide it."""
    try:
        with open("/proc/%d/schedstat" % pid) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def proc_rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def parse_target(s):
    if s.startswith("["):
        host, _, port = s[1:].partition("]:")
    else:
        host, _, port = s.rpartition(":")
    ip = ipaddress.ip_address(host)
    # loopback, or the benchmarking range (RFC 2544, never routed) that
    # the soak's routed scenarios give their servers in a namespace of
    # their own
    if not (ip.is_loopback or (ip.version == 4 and ip in ipaddress.ip_network("198.18.0.0/15"))):
        raise SystemExit("pktgen: only loopback or 198.18.0.0/15 targets are allowed, not %s" % host)
    return (socket.AF_INET6 if ip.version == 6 else socket.AF_INET), host, int(port)


def run(args):
    fam, host, port = parse_target(args.target)
    sock = socket.socket(fam, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    sock.connect((host, port))
    sock.setblocking(False)

    build = build_reset if args.kind == "reset" else build_probe
    match = reset_reply_sid if args.kind == "reset" else probe_reply_sid
    want_op = (P_CONTROL_HARD_RESET_SERVER_V2 if args.kind == "reset"
               else P_CONTROL_OOB_V1)

    res = {"kind": args.kind, "target": args.target}
    if args.pid:
        res["cpu_ticks_before"] = proc_cpu_ticks(args.pid)
        sched0 = proc_sched_ns(args.pid)
        res["rss_kb_before"] = proc_rss_kb(args.pid)

    outstanding = {}          # sid -> send time
    order = []                # sids in send order, for expiry
    head = 0
    sent = replies = valid = other = lost = 0
    rtts = []
    t_start = time.monotonic()
    deadline = t_start + args.max_seconds
    now_s = int(time.time())
    while True:
        now = time.monotonic()
        if now > deadline:
            break
        # expire the oldest unanswered requests
        while head < len(order):
            sid = order[head]
            t = outstanding.get(sid)
            if t is None:
                head += 1
                continue
            if now - t > args.timeout:
                del outstanding[sid]
                lost += 1
                head += 1
                continue
            break
        if head > 4096:
            del order[:head]
            head = 0
        # fill the window
        while sent < args.count and len(outstanding) < args.window:
            sid = os.urandom(8)
            pkt = build(sid) if args.kind == "reset" else build(sid, now_s)
            try:
                sock.send(pkt)
            except BlockingIOError:
                break
            except ConnectionRefusedError:
                continue
            t = time.monotonic()
            outstanding[sid] = t
            order.append(sid)
            sent += 1
            if sent % 1024 == 0:
                now_s = int(time.time())
        if sent >= args.count and not outstanding:
            break
        r, _, _ = select.select([sock], [], [], 0.05)
        if not r:
            continue
        while True:
            try:
                data = sock.recv(2048)
            except (BlockingIOError, InterruptedError):
                break
            except ConnectionRefusedError:
                break
            t = time.monotonic()
            if not data or data[0] >> OP_SHIFT != want_op:
                other += 1
                continue
            replies += 1
            sid = match(data)
            t0 = outstanding.pop(sid, None) if sid is not None else None
            if t0 is not None:
                valid += 1
                rtts.append(t - t0)
    elapsed = time.monotonic() - t_start
    lost += len(outstanding)

    res.update(sent=sent, replies=replies, valid=valid, lost=lost,
               other=other, elapsed_s=round(elapsed, 3),
               pps=int(valid / elapsed) if elapsed > 0 else 0)
    if rtts:
        rtts.sort()
        res["rtt_us_median"] = int(rtts[len(rtts) // 2] * 1e6)
    if args.pid:
        # let the server finish what is in flight before reading its counters
        time.sleep(0.2)
        res["cpu_ticks"] = proc_cpu_ticks(args.pid) - res["cpu_ticks_before"]
        res["clk_tck"] = os.sysconf("SC_CLK_TCK")
        res["rss_kb_after"] = proc_rss_kb(args.pid)
        sched1 = proc_sched_ns(args.pid)
        if sched0 is not None and sched1 is not None:
            res["cpu_ns_sched"] = sched1 - sched0
        if valid:
            res["cpu_us_per_reply"] = round(
                res["cpu_ticks"] * 1e6 / res["clk_tck"] / valid, 2)
            if "cpu_ns_sched" in res:
                res["cpu_us_per_reply_sched"] = round(
                    res["cpu_ns_sched"] / 1e3 / valid, 2)
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", required=True, help="127.0.0.1:PORT or [::1]:PORT")
    ap.add_argument("--kind", choices=("reset", "probe"), required=True)
    ap.add_argument("--count", type=int, default=20000)
    ap.add_argument("--window", type=int, default=32,
                    help="max unanswered requests in flight (default 32)")
    ap.add_argument("--timeout", type=float, default=1.0,
                    help="s before an unanswered request counts as lost")
    ap.add_argument("--max-seconds", type=float, default=120.0,
                    help="hard bound on the whole run")
    ap.add_argument("--pid", type=int, help="server pid for CPU/RSS readings")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    res = run(args)
    if args.json:
        print(json.dumps(res))
    else:
        print(" ".join("%s=%s" % kv for kv in res.items()))
    return 0 if res["valid"] > 0 else 2


if __name__ == "__main__":
    sys.exit(main())
