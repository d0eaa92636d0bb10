#!/usr/bin/env python3
"""mgmt_answer.py: a management-interface client for the e2e tests that
answers an openvpn client's --management-query-remote and
--management-query-proxy questions.  Loopback only; stdlib only.

  mgmt_answer.py --connect 127.0.0.1:PORT --log FILE
        [--remote "ANSWER;ANSWER;..."] [--proxy "ANSWER;..."]
        [--max-seconds S]

The n-th >REMOTE: question gets the n-th --remote answer (the last one is
repeated), e.g. "MOD 127.0.0.1 24012;ACCEPT" sends "remote MOD 127.0.0.1
24012" first and "remote ACCEPT" after that; likewise for >PROXY: with
--proxy ("SOCKS 127.0.0.1 1080", "NONE").  Every line from openvpn and
every command sent is logged.
"""

import argparse
import socket
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--connect", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--remote", default="ACCEPT")
    ap.add_argument("--proxy", default="NONE")
    ap.add_argument("--max-seconds", type=float, default=120)
    a = ap.parse_args()
    host, _, port = a.connect.rpartition(":")
    assert host.startswith("127.") or host == "::1", "loopback only"
    answers = {">REMOTE:": ("remote", a.remote.split(";"), [0]),
               ">PROXY:": ("proxy", a.proxy.split(";"), [0])}

    end = time.monotonic() + a.max_seconds
    s = None
    while s is None and time.monotonic() < end:
        try:
            s = socket.create_connection((host, int(port)), timeout=1)
        except OSError:
            time.sleep(0.05)
    if s is None:
        return 1
    s.settimeout(0.2)
    buf = b""
    with open(a.log, "a", buffering=1) as log:
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
                log.write("< %s\n" % line)
                for prefix, (cmd, lst, idx) in answers.items():
                    if line.startswith(prefix):
                        ans = lst[min(idx[0], len(lst) - 1)]
                        idx[0] += 1
                        s.sendall(("%s %s\n" % (cmd, ans)).encode())
                        log.write("> %s %s\n" % (cmd, ans))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
