#!/usr/bin/env python3
"""Forge ICMP port-unreachable errors for server probes (t_reconnect (e)).

Watches loopback (AF_PACKET) for UDP datagrams to 127.0.0.1:PORT whose
first byte is a probe opcode (12 or 13 << 3) and answers each with two
forged ICMP errors that a client must not believe, because the datagram
they quote is not one of its probes:
  - the probe's IP and UDP headers, then its payload with the session id
    changed (as an off-path attacker who guessed the port would send);
  - the probe's IP and UDP headers only (a quote too short to tell).
Each forged error is logged as "forged <kind> <src>:<sport>".
Needs root (raw sockets); run it in the test's network namespace.
"""
import argparse
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def icmp_unreach(quote):
    hdr = struct.pack("!BBHI", 3, 3, 0, 0)
    c = csum(hdr + quote)
    return struct.pack("!BBHI", 3, 3, c, 0) + quote


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--seconds", type=float, default=120)
    a = ap.parse_args()
    log = open(a.log, "a", buffering=1)
    rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    rx.bind(("lo", 0))
    rx.settimeout(0.5)
    tx = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    print("listening", file=log)
    end = time.monotonic() + a.seconds
    while time.monotonic() < end:
        try:
            frame, addr = rx.recvfrom(65535)
        except socket.timeout:
            continue
        if addr[2] == PACKET_OUTGOING:
            continue
        ip = frame[14:]         # loopback frames carry a zero Ethernet header
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 17:
            continue
        ihl = (ip[0] & 0x0F) * 4
        udp = ip[ihl:ihl + 8]
        payload = ip[ihl + 8:]
        if len(udp) < 8 or len(payload) < 9:
            continue
        sport, dport = struct.unpack("!HH", udp[:4])
        dst = socket.inet_ntoa(ip[16:20])
        src = socket.inet_ntoa(ip[12:16])
        if dst != "127.0.0.1" or dport != a.port or payload[0] not in (12 << 3, 13 << 3):
            continue
        bad = bytearray(payload)
        for i in range(1, 9):
            bad[i] ^= 0x5A
        for kind, quote in (("wrong-sid", bytes(ip[:ihl + 8]) + bytes(bad)),
                            ("short", bytes(ip[:ihl + 8]))):
            tx.sendto(icmp_unreach(quote), (src, 0))
            print("forged %s %s:%d" % (kind, src, sport), file=log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
