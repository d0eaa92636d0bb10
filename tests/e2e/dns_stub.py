#!/usr/bin/env python3
"""A name server stub on loopback for the resolver tests.

  dns_stub.py --addr 127.0.0.53 --mode silent     reads queries, never answers
  dns_stub.py --addr 127.0.0.53 --mode nxdomain   answers every query at once
                                                  with NXDOMAIN

UDP and (silent mode) TCP on port 53; prints "listening" once bound; stops
by itself after --seconds (default 300).
"""
import argparse
import socket
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr", default="127.0.0.1")
    ap.add_argument("--mode", choices=("silent", "nxdomain"), default="silent")
    ap.add_argument("--seconds", type=float, default=300)
    a = ap.parse_args()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((a.addr, 53))
    if a.mode == "silent":
        # a TCP listener that never answers either (a resolver may retry
        # over TCP)
        t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        t.bind((a.addr, 53))
        t.listen(16)
    print("listening", flush=True)
    end = time.monotonic() + a.seconds
    s.settimeout(0.5)
    while time.monotonic() < end:
        try:
            q, peer = s.recvfrom(4096)
        except socket.timeout:
            continue
        if a.mode == "nxdomain" and len(q) >= 12:
            r = bytearray(q)
            r[2] = 0x81 | (q[2] & 0x01)     # response, RD copied
            r[3] = 0x83                      # RA, NXDOMAIN
            r[6:12] = b"\0" * 6              # no answers
            s.sendto(bytes(r), peer)


if __name__ == "__main__":
    main()
