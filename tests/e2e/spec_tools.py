#!/usr/bin/env python3
"""spec_tools.py: helpers for the t_spec_*.sh end-to-end tests (the SPEC.md
promises that no other test covers).  Loopback only.  Needs python3; the
wrapped probes (wone, wflood) with tls-crypt and tls-crypt-v2 also need
python3-cryptography.

Sub-commands (each prints one line of key=value pairs unless noted):

  sniff --out FILE --dports P,P,... [--max-seconds S]
      capture (AF_PACKET on lo, outgoing copies only, so every datagram
      once) the UDP datagrams sent TO one of the ports; one line each:
      "<time> <src> <dst> <hex payload>".  Prints "listening" when ready.

  pids --capture FILE --wrap tls-auth|tls-crypt|tls-crypt-v2
       [--hmac-len N (0: guess)] [--src ADDR:PORT,...]
      the replay packet ids (4-byte id, 4-byte time) of every wrapped
      control packet in a capture, in capture (= send) order; checks that
      no (time, id) repeats and none goes backwards (SPEC 1).  Prints
      n= repeats= backwards= first_bad= and one "# " line per packet.
      Exit 0 when the sequence is strictly increasing.

  wone --target T --wrap tls-auth|tls-crypt|tls-crypt-v2 --key FILE [--timeout S]
      one wrapped SERVER_PROBE; reply=0|1 sid_ok= lifetime= ...

  wflood --target T --wrap W --key FILE --pid PID --count N [--warmup W]
      like probe_tool.py flood, with tls-auth / tls-crypt / tls-crypt-v2
      wrapped probes (each its own session id and packet id).

  fwd --listen A:P --upstream A:P --reply-from A:P|same --log FILE
      a UDP forwarder that sends the server's answers back from another
      socket (--reply-from), i.e. from a source the client did not probe
      ("same": from the listen socket, the positive control).

  mgmt-accept --connect A:P --delay S --log FILE [--hold-release]
      management client: (sends "hold release" first,) answers every
      >REMOTE: with "remote ACCEPT", S seconds after the question arrived.

  mgmt-cmd --connect A:P --cmd CMD
      one management command; prints the answer lines up to END.

  tcp-one --target T --kind probe|reset [--timeout S]
      one plain probe / hard reset over TCP (2-byte length framing);
      reply=0|1 op= (closed=1 when the peer closed the connection).

  third --target T [--wait S | --before S]
      a plain probe, then, S s after its reply (or S s before the
      advertised connect_lifetime runs out), the third packet of the
      handshake (P_ACK_V1 acking the server's reset 0, remote session id
      = the reply's cookie) from the same socket; lport= lifetime= age_ms=

  udp-seq --target T --kinds probe,reset,... [--timeout S]
      plain probe / reset from ONE socket, one after the other; one
      key=value group per packet: kind=.. reply=.. op=..
"""

import argparse
import base64
import os
import select
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from probe_tool import build, parse_reply, mksock  # noqa: E402
from probe_tool import parse_target, rss_kb  # noqa: E402

P_CONTROL_HARD_RESET_CLIENT_V2 = 7
P_CONTROL_OOB_V1 = 12
P_CONTROL_OOB_WKC_V1 = 13
DATA_OPS = (6, 9)
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def kvline(d):
    return " ".join("%s=%s" % kv for kv in d.items())


# ------------------------------------------------------------------ sniff

def addr_str(ip, port):
    return ("[%s]:%d" % (ip, port)) if ":" in ip else ("%s:%d" % (ip, port))


def parse_ip_udp(pkt):
    """(src, dst, payload) of a UDP/IP packet, or None"""
    if not pkt:
        return None
    v = pkt[0] >> 4
    if v == 4:
        ihl = (pkt[0] & 15) * 4
        if len(pkt) < ihl + 8 or pkt[9] != 17:
            return None
        src = socket.inet_ntop(socket.AF_INET, pkt[12:16])
        dst = socket.inet_ntop(socket.AF_INET, pkt[16:20])
        off = ihl
    elif v == 6:
        if len(pkt) < 48 or pkt[6] != 17:
            return None
        src = socket.inet_ntop(socket.AF_INET6, pkt[8:24])
        dst = socket.inet_ntop(socket.AF_INET6, pkt[24:40])
        off = 40
    else:
        return None
    sport, dport, ulen = struct.unpack_from(">HHH", pkt, off)
    return (src, sport), (dst, dport), pkt[off + 8:off + ulen]


def cmd_sniff(a):
    ports = set(int(p) for p in a.dports.split(",") if p)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(ETH_P_ALL))
    s.bind(("lo", 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24)
    end = time.monotonic() + a.max_seconds
    with open(a.out, "w", buffering=1) as out:
        print("listening", flush=True)
        while time.monotonic() < end:
            r, _, _ = select.select([s], [], [], 0.2)
            if not r:
                continue
            pkt, addr = s.recvfrom(70000)
            if addr[2] != PACKET_OUTGOING:
                continue
            p = parse_ip_udp(pkt)
            if p is None or p[1][1] not in ports:
                continue
            out.write("%.6f %s %s %s\n" % (time.time(), addr_str(*p[0]),
                                          addr_str(*p[1]), p[2].hex()))
    return 0


def pid_offset(wrap, hmac_len):
    if wrap == "tls-auth":
        return 9 + hmac_len
    if wrap in ("tls-crypt", "tls-crypt-v2"):
        return 9
    raise SystemExit("spec_tools pids: wrap %s has no packet id" % wrap)


def guess_hmac_len(capture):
    """tls-auth: the HMAC length (20 SHA1 ... 64 SHA512) for which every
    control packet's packet-id time is within an hour of now"""
    datas = []
    with open(capture) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 4:
                d = bytes.fromhex(parts[3])
                if d and (d[0] >> 3) not in DATA_OPS:
                    datas.append(d)
    now = time.time()
    for h in (20, 32, 28, 48, 64):
        if datas and all(len(d) >= 9 + h + 8 and
                         abs(struct.unpack_from(">I", d, 9 + h + 4)[0] - now) < 3600
                         for d in datas):
            return h
    return 20


def cmd_pids(a):
    if a.wrap == "tls-auth" and a.hmac_len == 0:
        a.hmac_len = guess_hmac_len(a.capture)
    off = pid_offset(a.wrap, a.hmac_len)
    srcs = set(x for x in (a.src or "").split(",") if x)
    seq = []
    with open(a.capture) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 4:
                continue
            t, src, dst, hx = parts
            if srcs and src not in srcs:
                continue
            data = bytes.fromhex(hx)
            if not data or (data[0] >> 3) in DATA_OPS or len(data) < off + 8:
                continue
            pid, ptime = struct.unpack_from(">II", data, off)
            seq.append((float(t), src, dst, data[0] >> 3, len(data), pid, ptime))
    repeats = backwards = 0
    first_bad = "-"
    seen = set()
    prev = None
    now = time.time()
    insane = 0
    for i, (t, src, dst, op, ln, pid, ptime) in enumerate(seq):
        key = (ptime, pid)
        mark = ""
        if abs(ptime - now) > 3600:
            insane += 1
            mark = " INSANE-TIME"
        if key in seen:
            repeats += 1
            mark += " REPEAT"
        elif prev is not None and key < prev:
            backwards += 1
            mark += " BACKWARDS"
        if mark.strip() in ("REPEAT", "BACKWARDS") and first_bad == "-":
            first_bad = "%d:op%d:%s->%s:id=%d,time=%d" % (i + 1, op, src, dst, pid, ptime)
        seen.add(key)
        if prev is None or key > prev:
            prev = key
        print("# %3d %.3f %s -> %s op=%d len=%d id=%d time=%d%s"
              % (i + 1, t, src, dst, op, ln, pid, ptime, mark))
    print(kvline({"n": len(seq), "hmac_len": a.hmac_len if a.wrap == "tls-auth" else "-",
                  "repeats": repeats, "backwards": backwards,
                  "insane_time": insane, "first_bad": first_bad,
                  "sources": len(set(x[1] for x in seq)),
                  "destinations": len(set(x[2] for x in seq))}))
    return 0 if (seq and repeats == 0 and backwards == 0 and insane == 0) else 1


# ------------------------------------------------------------------ tls-crypt

def read_static_key(path):
    """the 256 bytes of an 'OpenVPN Static key V1' file"""
    hx = ""
    inside = False
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("-----BEGIN"):
                inside = True
                continue
            if line.startswith("-----END"):
                break
            if inside:
                hx += line
    return bytes.fromhex(hx)


def read_v2_client_key(path):
    """(Kc: 256 bytes, WKc) of a tls-crypt-v2 client key"""
    b64 = ""
    inside = False
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("-----BEGIN"):
                inside = True
                continue
            if line.startswith("-----END"):
                break
            if inside:
                b64 += line
    raw = base64.b64decode(b64)
    return raw[:256], raw[256:]


class TlsCrypt:
    """client side of tls-crypt: encrypt with key 1 (inverse direction),
    decrypt the server's packets with key 0"""

    def __init__(self, key256):
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
        self.Cipher, self.algorithms, self.modes = Cipher, algorithms, modes
        self.enc_cipher = key256[128:160]
        self.enc_hmac = key256[192:224]
        self.dec_cipher = key256[0:32]
        self.dec_hmac = key256[64:96]
        self.pid = 0
        self.ptime = int(time.time())

    def _ctr(self, key, iv):
        return self.Cipher(self.algorithms.AES(key), self.modes.CTR(iv)).encryptor()

    def wrap(self, header, plain):
        import hashlib
        import hmac
        self.pid += 1
        ad = header + struct.pack(">II", self.pid, self.ptime)
        tag = hmac.new(self.enc_hmac, ad + plain, hashlib.sha256).digest()
        c = self._ctr(self.enc_cipher, tag[:16])
        return ad + tag + c.update(plain) + c.finalize()

    def unwrap(self, pkt):
        import hashlib
        import hmac
        if len(pkt) < 9 + 8 + 32:
            return None
        ad, tag, ct = pkt[:17], pkt[17:49], pkt[49:]
        c = self._ctr(self.dec_cipher, tag[:16])
        plain = c.update(ct) + c.finalize()
        want = hmac.new(self.dec_hmac, ad + plain, hashlib.sha256).digest()
        if not hmac.compare_digest(want, tag):
            return None
        return pkt[:9] + plain


class TlsAuth:
    """client side of tls-auth (key direction 1, --auth SHA1, 2.6's
    default): op|sid|HMAC|packet id|time|payload, the HMAC-SHA1 over packet
    id|time|op|sid|payload (ssl_pkt.c tls_wrap_control(), swap_hmac());
    send with key 1's HMAC key, check the server's with key 0's"""

    HMAC_LEN = 20

    def __init__(self, key256):
        self.enc_hmac = key256[192:192 + self.HMAC_LEN]
        self.dec_hmac = key256[64:64 + self.HMAC_LEN]
        self.pid = 0
        self.ptime = int(time.time())

    def wrap(self, header, plain):
        import hashlib
        import hmac
        self.pid += 1
        pid = struct.pack(">II", self.pid, self.ptime)
        tag = hmac.new(self.enc_hmac, pid + header + plain, hashlib.sha1).digest()
        return header + tag + pid + plain

    def unwrap(self, pkt):
        import hashlib
        import hmac
        n = self.HMAC_LEN
        if len(pkt) < 9 + n + 8:
            return None
        header, tag, pid, plain = pkt[:9], pkt[9:9 + n], pkt[9 + n:17 + n], pkt[17 + n:]
        want = hmac.new(self.dec_hmac, pid + header + plain, hashlib.sha1).digest()
        if not hmac.compare_digest(want, tag):
            return None
        return header + plain


def wrapper_for(wrap, key):
    if wrap == "tls-auth":
        return TlsAuth(read_static_key(key)), b""
    if wrap == "tls-crypt":
        return TlsCrypt(read_static_key(key)), b""
    if wrap == "tls-crypt-v2":
        kc, wkc = read_v2_client_key(key)
        return TlsCrypt(kc), wkc
    raise SystemExit("spec_tools: unknown wrap %s" % wrap)


def build_wrapped(tc, wkc, sid, ts=None, pad=8):
    """a wrapped SERVER_PROBE: the plain probe's payload, wrapped"""
    plain = build(sid, "valid", ts, pad)
    op = P_CONTROL_OOB_WKC_V1 if wkc else P_CONTROL_OOB_V1
    header = bytes([op << 3]) + sid
    return tc.wrap(header, plain[9:]) + wkc


def parse_wrapped_reply(tc, pkt):
    if not pkt or pkt[0] != (P_CONTROL_OOB_V1 << 3):
        return None
    plain = tc.unwrap(pkt)
    return parse_reply(plain) if plain else None


def cmd_wone(a):
    tc, wkc = wrapper_for(a.wrap, a.key)
    s = mksock(a.target)
    sid = os.urandom(8)
    pkt = build_wrapped(tc, wkc, sid)
    s.send(pkt)
    res = {"wrap": a.wrap, "sent_len": len(pkt), "reply": 0}
    r, _, _ = select.select([s], [], [], a.timeout)
    if r:
        try:
            got = s.recv(4096)
        except ConnectionRefusedError:
            got = None
        if got:
            res["reply"] = 1
            res["len"] = len(got)
            rep = parse_wrapped_reply(tc, got)
            res["parsed"] = int(rep is not None)
            if rep:
                res["sid_ok"] = int(rep["sid"] == sid)
                for k in ("prio", "weight", "mld", "lifetime", "flags"):
                    res[k] = rep[k]
    print(kvline(res))
    return 0 if res["reply"] else 1


def cmd_wflood(a):
    tc, wkc = wrapper_for(a.wrap, a.key)
    s = mksock(a.target)
    s.setblocking(False)
    counts = {"replies": 0, "valid": 0}

    def drain(sids, timeout):
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            r, _, _ = select.select([s], [], [], max(left, 0))
            if not r:
                if left <= 0:
                    return
                continue
            while True:
                try:
                    data = s.recv(4096, socket.MSG_DONTWAIT)
                except (BlockingIOError, InterruptedError, ConnectionRefusedError):
                    break
                counts["replies"] += 1
                rep = parse_wrapped_reply(tc, data)
                if rep and rep["sid"] in sids:
                    counts["valid"] += 1
                    sids.discard(rep["sid"])
            if left <= 0:
                return

    def send_n(n):
        done = 0
        sids = set()
        while done < n:
            b = min(a.batch, n - done)
            ts = int(time.time())
            for _ in range(b):
                sid = os.urandom(8)
                try:
                    s.send(build_wrapped(tc, wkc, sid, ts))
                except (BlockingIOError, ConnectionRefusedError):
                    continue
                sids.add(sid)
            done += b
            drain(sids, a.pause)
            if len(sids) > 65536:
                sids.clear()
        drain(sids, 0.3)
        return done

    t0 = time.monotonic()
    warm = send_n(a.warmup)
    time.sleep(0.3)
    before = rss_kb(a.pid)
    counts["replies"] = counts["valid"] = 0
    sent = send_n(a.count)
    time.sleep(0.5)
    after = rss_kb(a.pid)
    print(kvline({"wrap": a.wrap, "warmup": warm, "sent": sent,
                  "replies": counts["replies"], "valid": counts["valid"],
                  "rss_kb_before": before, "rss_kb_after": after,
                  "rss_growth_kb": after - before,
                  "elapsed_s": round(time.monotonic() - t0, 2)}))
    return 0


# ------------------------------------------------------------------ fwd

def bound(spec):
    fam, host, port = parse_target(spec)
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port))
    return s


def cmd_fwd(a):
    lis = bound(a.listen)
    rep = lis if a.reply_from == "same" else bound(a.reply_from)
    ufam, uhost, uport = parse_target(a.upstream)
    ups = {}       # client addr -> upstream socket
    back = {}      # upstream socket -> client addr
    end = time.monotonic() + a.max_seconds
    with open(a.log, "w", buffering=1) as log:
        log.write("listening %s upstream %s reply-from %s\n"
                  % (a.listen, a.upstream, a.reply_from))
        while time.monotonic() < end:
            socks = [lis] + list(back.keys())
            r, _, _ = select.select(socks, [], [], 0.2)
            for s in r:
                try:
                    data, frm = s.recvfrom(65535)
                except OSError:
                    continue
                if s is lis:
                    u = ups.get(frm)
                    if u is None:
                        u = socket.socket(ufam, socket.SOCK_DGRAM)
                        u.connect((uhost, uport))
                        ups[frm] = u
                        back[u] = frm
                    log.write("up %s op=%d len=%d\n" % (frm[1], data[0] >> 3 if data else -1, len(data)))
                    try:
                        u.send(data)
                    except OSError:
                        pass
                else:
                    c = back[s]
                    log.write("down %s op=%d len=%d from %s\n"
                              % (c[1], data[0] >> 3 if data else -1, len(data), a.reply_from))
                    rep.sendto(data, c)
    return 0


# ------------------------------------------------------------------ mgmt

def cmd_mgmt_accept(a):
    """answer >REMOTE: and >PROXY: questions after --delay s: the n-th
    question gets the n-th of the ';'-separated --remote / --proxy answers
    (the last one repeats)"""
    answers = {">REMOTE:": ("remote", a.remote.split(";"), [0]),
               ">PROXY:": ("proxy", a.proxy.split(";"), [0])}
    host, _, port = a.connect.rpartition(":")
    assert host.startswith("127.") or host == "::1", "loopback only"
    end = time.monotonic() + a.max_seconds
    s = None
    while s is None and time.monotonic() < end:
        try:
            s = socket.create_connection((host, int(port)), timeout=1)
        except OSError:
            time.sleep(0.02)
    if s is None:
        return 1
    s.settimeout(0.1)
    buf = b""
    with open(a.log, "a", buffering=1) as log:
        log.write("%.6f connected\n" % time.time())
        if a.hold_release:
            s.sendall(b"hold release\n")
            log.write("%.6f > hold release\n" % time.time())
        while time.monotonic() < end:
            try:
                data = s.recv(4096)
            except socket.timeout:
                continue
            except OSError:
                break
            if not data:
                break
            buf += data
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                line = line.decode(errors="replace").rstrip("\r")
                log.write("%.6f < %s\n" % (time.time(), line))
                for prefix, (cmd, lst, idx) in answers.items():
                    if line.startswith(prefix):
                        time.sleep(a.delay)
                        ans = "%s %s" % (cmd, lst[min(idx[0], len(lst) - 1)])
                        idx[0] += 1
                        s.sendall(ans.encode() + b"\n")
                        log.write("%.6f > %s\n" % (time.time(), ans))
    return 0


def cmd_mgmt_cmd(a):
    """one management command; prints its answer up to END, one line each"""
    host, _, port = a.connect.rpartition(":")
    assert host.startswith("127.") or host == "::1", "loopback only"
    s = socket.create_connection((host, int(port)), timeout=2)
    s.settimeout(0.2)
    s.sendall(a.command.encode() + b"\n")
    buf = b""
    end = time.monotonic() + a.timeout
    lines = []
    while time.monotonic() < end:
        try:
            d = s.recv(4096)
        except socket.timeout:
            continue
        if not d:
            break
        buf += d
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            line = line.decode(errors="replace").rstrip("\r")
            if line.startswith(">"):
                continue        # real-time notifications
            lines.append(line)
            if line == "END" or line.startswith("ERROR"):
                print("\n".join(lines))
                return 0
    print("\n".join(lines))
    return 1


# ------------------------------------------------------------------ tcp / udp

def plain_reset():
    return (bytes([P_CONTROL_HARD_RESET_CLIENT_V2 << 3]) + os.urandom(8)
            + b"\x00" + struct.pack(">I", 0))


def cmd_tcp_one(a):
    fam, host, port = parse_target(a.target)
    s = socket.create_connection((host, port), timeout=2)
    sid = os.urandom(8)
    pkt = build(sid, "valid") if a.kind == "probe" else plain_reset()
    s.sendall(struct.pack(">H", len(pkt)) + pkt)
    res = {"kind": a.kind, "reply": 0, "closed": 0}
    buf = b""
    end = time.monotonic() + a.timeout
    while time.monotonic() < end:
        r, _, _ = select.select([s], [], [], max(end - time.monotonic(), 0))
        if not r:
            break
        try:
            d = s.recv(4096)
        except OSError:
            res["closed"] = 1
            break
        if not d:
            res["closed"] = 1
            break
        buf += d
        if len(buf) >= 3:
            ln = struct.unpack(">H", buf[:2])[0]
            res["reply"] = 1
            res["op"] = buf[2] >> 3
            res["len"] = ln
            if a.kind == "probe" and len(buf) >= 2 + ln:
                res["parsed"] = int(parse_reply(buf[2:2 + ln]) is not None)
            break
    print(kvline(res))
    return 0 if res["reply"] else 1


def cmd_third(a):
    """a plain probe, then (--wait s after its reply, or --before s before
    the advertised lifetime runs out) the third packet of the three-way
    handshake from the same socket: a P_ACK_V1 that acknowledges the
    server's (phantom) reset 0 and names the reply's cookie"""
    s = mksock(a.target)
    sid = os.urandom(8)
    s.send(build(sid, "valid"))
    r, _, _ = select.select([s], [], [], 2)
    rep = parse_reply(s.recv(4096)) if r else None
    t_reply = time.monotonic()
    res = {"lport": s.getsockname()[1], "reply": int(rep is not None)}
    if rep is None or rep["sid"] != sid:
        print(kvline(res))
        return 1
    res["lifetime"] = rep["lifetime"]
    wait = a.wait if a.wait is not None else rep["lifetime"] - a.before
    time.sleep(max(0.0, t_reply + wait - time.monotonic()))
    ack = (bytes([5 << 3]) + sid + b"\x01" + struct.pack(">I", 0) + rep["cookie"])
    s.send(ack)
    res["age_ms"] = int((time.monotonic() - t_reply) * 1000)
    print(kvline(res))
    return 0


def cmd_udp_seq(a):
    s = mksock(a.target)
    out = []
    rc = 0
    for kind in a.kinds.split(","):
        sid = os.urandom(8)
        pkt = build(sid, "valid") if kind == "probe" else plain_reset()
        try:
            s.send(pkt)
        except ConnectionRefusedError:
            pass
        res = {"kind": kind, "reply": 0}
        end = time.monotonic() + a.timeout
        while time.monotonic() < end:
            r, _, _ = select.select([s], [], [], max(end - time.monotonic(), 0))
            if not r:
                break
            try:
                d = s.recv(4096)
            except ConnectionRefusedError:
                continue
            res["reply"] = 1
            res["op"] = d[0] >> 3
            res["len"] = len(d)
            if kind == "probe":
                res["parsed"] = int(parse_reply(d) is not None)
            break
        out.append(kvline(res))
    print(" ; ".join(out))
    return rc


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("sniff")
    p.add_argument("--out", required=True)
    p.add_argument("--dports", required=True)
    p.add_argument("--max-seconds", type=float, default=120)
    p = sub.add_parser("pids")
    p.add_argument("--capture", required=True)
    p.add_argument("--wrap", required=True)
    p.add_argument("--hmac-len", type=int, default=0)
    p.add_argument("--src", default="")
    p = sub.add_parser("wone")
    p.add_argument("--target", required=True)
    p.add_argument("--wrap", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--timeout", type=float, default=1.0)
    p = sub.add_parser("wflood")
    p.add_argument("--target", required=True)
    p.add_argument("--wrap", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--count", type=int, default=30000)
    p.add_argument("--warmup", type=int, default=1000)
    p.add_argument("--batch", type=int, default=200)
    p.add_argument("--pause", type=float, default=0.002)
    p = sub.add_parser("fwd")
    p.add_argument("--listen", required=True)
    p.add_argument("--upstream", required=True)
    p.add_argument("--reply-from", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--max-seconds", type=float, default=120)
    p = sub.add_parser("mgmt-accept")
    p.add_argument("--connect", required=True)
    p.add_argument("--delay", type=float, default=0)
    p.add_argument("--log", required=True)
    p.add_argument("--hold-release", action="store_true")
    p.add_argument("--remote", default="ACCEPT")
    p.add_argument("--proxy", default="NONE")
    p.add_argument("--max-seconds", type=float, default=60)
    p = sub.add_parser("mgmt-cmd")
    p.add_argument("--connect", required=True)
    p.add_argument("--cmd", dest="command", required=True)
    p.add_argument("--timeout", type=float, default=3)
    p = sub.add_parser("tcp-one")
    p.add_argument("--target", required=True)
    p.add_argument("--kind", choices=("probe", "reset"), default="probe")
    p.add_argument("--timeout", type=float, default=1.0)
    p = sub.add_parser("third")
    p.add_argument("--target", required=True)
    p.add_argument("--wait", type=float, default=None)
    p.add_argument("--before", type=float, default=0.2)
    p = sub.add_parser("udp-seq")
    p.add_argument("--target", required=True)
    p.add_argument("--kinds", required=True)
    p.add_argument("--timeout", type=float, default=1.0)
    a = ap.parse_args(argv)
    return {"sniff": cmd_sniff, "pids": cmd_pids, "wone": cmd_wone,
            "wflood": cmd_wflood, "fwd": cmd_fwd, "mgmt-accept": cmd_mgmt_accept, "mgmt-cmd": cmd_mgmt_cmd,
            "tcp-one": cmd_tcp_one, "udp-seq": cmd_udp_seq, "third": cmd_third}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
