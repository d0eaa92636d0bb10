#!/usr/bin/env python3
"""testbed/fleet.py: a herd of real OpenVPN clients against several servers.

Used by `make bench-fleet` (testbed/bench-fleet.sh) and by the e2e test
tests/e2e/t_fleet.sh.  Everything runs in a private network namespace (the
script re-executes itself under `unshare --net`; it needs root and
/dev/net/tun), on loopback: the servers are real `--mode server` instances
with tun devices, the clients real clients with `--dev null`, one
certificate and `--duplicate-cn`, all started within about one second.

A run is one or more *variants* of the same scenario.  Each variant gets
fresh servers (so that every variant starts with full budgets) and fresh
clients:

  stock-random   unpatched client and servers, --remote-random
  stock-order    unpatched client and servers, remotes in config order
  probe          patched client (--server-probe) and servers
  probe-pre      like probe, with the binary in FLEET_PRE (the series
                 before the fleet work), client and servers
  probe-load     like probe, the servers advertise --server-probe-reply
                 0 load (weight = free client slots)

Scenarios:

  herd      N clients with the same remote list, started at once
  restart   the servers have --max-clients M; servers 1..K-1 are first
            loaded with PRELOAD clients each (unpatched clients with one
            remote each), then server K starts empty ("restarted"), then
            the herd of N clients with every remote

For each variant it reports: per client the time from its start to
"Initialization Sequence Completed" (taken from the client's own log
timestamps, to the microsecond), the server it connected to, the probe
phase's "N of M addresses answered"; per server the count of herd
clients, and (patched servers) the probe counters of the management
command `server-probe-reply stats`.  Results: JSON (--json), a markdown
table (--md) and, with matplotlib, a PNG (--png): the CDF of the time to
connect per variant, and the clients per server.
"""

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def die(msg):
    print("fleet: " + msg, file=sys.stderr)
    sys.exit(1)


def isolate():
    """Re-exec in a private network namespace with loopback up."""
    if os.environ.get("FLEET_IN_NETNS"):
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        return
    if os.geteuid() != 0:
        print("SKIP: fleet.py needs root (network namespace, tun devices)")
        sys.exit(77)
    if not os.path.exists("/dev/net/tun"):
        print("SKIP: fleet.py needs /dev/net/tun")
        sys.exit(77)
    env = dict(os.environ, FLEET_IN_NETNS="1")
    os.execvpe("unshare", ["unshare", "--net", "--", sys.executable,
                           os.path.abspath(__file__)] + sys.argv[1:], env)


def pki(d, keybin):
    """An EC CA, one server and one client certificate, a tls-crypt key."""
    if os.path.exists(os.path.join(d, ".done")):
        return
    os.makedirs(d, exist_ok=True)
    sh = """set -e
cd "$1"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout ca.key -out ca.crt -days 3 -subj /CN=fleet-ca \
    -addext basicConstraints=critical,CA:TRUE \
    -addext keyUsage=critical,keyCertSign,cRLSign
for r in server client; do
    eku=serverAuth; [ $r = client ] && eku=clientAuth
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout $r.key -out $r.csr -subj /CN=fleet-$r
    printf 'basicConstraints=CA:FALSE\\nkeyUsage=critical,digitalSignature\\nextendedKeyUsage=%s\\n' $eku >$r.ext
    openssl x509 -req -in $r.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
        -out $r.crt -days 3 -extfile $r.ext
done
"$2" --genkey tls-crypt tc.key
touch .done
"""
    r = subprocess.run(["bash", "-c", sh, "pki", d, keybin],
                       capture_output=True, text=True)
    if r.returncode:
        die("PKI generation failed:\n" + r.stdout + r.stderr)


TS_RE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?: us=(\d+))?")


def log_time(line):
    """The wall-clock time of an openvpn log line (--verb 4: microseconds)."""
    m = TS_RE.match(line)
    if not m:
        return None
    t = time.mktime(time.strptime(m.group(1), "%Y-%m-%d %H:%M:%S"))
    return t + int(m.group(2) or 0) / 1e6


class Proc:
    def __init__(self, name, argv, logdir):
        self.name = name
        self.log = os.path.join(logdir, name + ".log")
        self.t0 = time.time()
        with open(os.path.join(logdir, name + ".stderr"), "w") as err:
            self.p = subprocess.Popen(argv + ["--log", self.log],
                                      stdout=err, stderr=err,
                                      stdin=subprocess.DEVNULL)

    def text(self):
        try:
            with open(self.log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def alive(self):
        return self.p.poll() is None

    def stop(self):
        if self.alive():
            self.p.terminate()

    def reap(self):
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


class Fleet:
    def __init__(self, args, logdir):
        self.args = args
        self.logdir = logdir
        self.pki = os.path.join(args.workdir, "pki")
        self.procs = []

    def base_args(self):
        p = self.pki
        wrap = ["--tls-crypt", p + "/tc.key"] if self.args.wrap == "tls-crypt" else []
        return ["--ca", p + "/ca.crt"] + wrap + ["--verb", "4"]

    def server(self, idx, binary, extra, port):
        p = self.pki
        argv = [binary, "--mode", "server", "--tls-server",
                "--proto", "udp4", "--local", "127.0.0.1",
                "--port", str(port),
                "--dev", "fl%ds%d" % (os.getpid() % 10000, idx),
                "--dev-type", "tun", "--disable-dco",
                "--topology", "subnet",
                "--server", "10.%d.0.0" % (200 + idx), "255.255.252.0",
                "--cert", p + "/server.crt", "--key", p + "/server.key",
                "--dh", "none", "--duplicate-cn",
                "--keepalive", "10", "60",
                "--connect-freq-initial"] + self.args.budget.split() + [
                "--max-clients", str(self.args.max_clients),
                "--management", "127.0.0.1", str(port + 1000)] + \
            self.base_args() + extra
        if self.args.server_nice:
            argv = ["nice", "-n", str(self.args.server_nice)] + argv
        s = Proc("s%d" % idx, argv, self.logdir)
        s.port = port
        s.mport = port + 1000
        self.procs.append(s)
        return s

    def client(self, name, binary, remotes, extra):
        p = self.pki
        argv = [binary, "--client", "--dev", "null", "--nobind",
                "--ifconfig-noexec", "--route-noexec",
                "--remote-cert-tls", "server",
                "--cert", p + "/client.crt", "--key", p + "/client.key"] + \
            self.base_args()
        for port in remotes:
            argv += ["--remote", "127.0.0.1", str(port), "udp4"]
        c = Proc(name, argv + extra, self.logdir)
        self.procs.append(c)
        return c

    def wait_started(self, servers, limit=20):
        t_end = time.time() + limit
        for s in servers:
            while "Initialization Sequence Completed" not in s.text():
                if not s.alive() or time.time() > t_end:
                    die("server %s did not start:\n%s" % (s.name, s.text()[-2000:]))
                time.sleep(0.02)

    def stop_all(self):
        for p in self.procs:
            p.stop()
        for p in self.procs:
            p.reap()
        self.procs = []


def mgmt(port, command, timeout=5):
    """Send one management command, return the reply's text."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall((command + "\n").encode())
            data = b""
            t_end = time.time() + timeout
            while time.time() < t_end:
                try:
                    chunk = s.recv(4096)
                except socket.timeout:
                    break
                if not chunk:
                    break
                data += chunk
                if re.search(rb"^(SUCCESS|ERROR):.*\n", data, re.M):
                    break
            s.sendall(b"quit\n")
            return data.decode(errors="replace")
    except OSError as e:
        return "ERROR: %s" % e


CONNECTED = "Initialization Sequence Completed"
PEER_RE = re.compile(r"Peer Connection Initiated with \[AF_INET\][0-9.]+:(\d+)")
PHASE_RE = re.compile(r"server-probe: (\d+) of (\d+) addresses answered")
FIRST_RE = re.compile(r"addresses answered in \d+ ms; first remote now [0-9.]+:(\d+)")


def client_result(c):
    """What one client's log says: time to connect, server, phases."""
    text = c.text()
    r = {"name": c.name, "connected": False}
    for line in text.splitlines():
        if CONNECTED in line:
            t = log_time(line)
            r["connected"] = True
            r["ms"] = round((t - c.t0) * 1000, 1) if t else None
            break
    ports = PEER_RE.findall(text)
    if ports:
        r["port"] = int(ports[-1])
    phases = PHASE_RE.findall(text)
    r["phases"] = ["%s/%s" % p for p in phases]
    r["zero_answered"] = sum(1 for a, _ in phases if a == "0")
    first = FIRST_RE.findall(text)
    if first:
        r["first"] = int(first[0])
    r["offline"] = len(re.findall(r"server-probe: .*(OFFLINE|offline)", text))
    return r


def flood_worker(port, seconds):
    """Send plain SERVER_PROBEs (no tls-auth/tls-crypt: the servers run
    without) from one socket as fast as this process can, for SECONDS;
    print how many were sent."""
    import struct
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setblocking(False)
    sent = 0
    t0 = time.monotonic()
    t_end = t0 + seconds
    pkt = None
    while True:
        now = time.monotonic()
        if now >= t_end:
            break
        if pkt is None or sent % 4096 == 0:
            tlv = struct.pack(">HHQI", 0x0200, 12, int(time.time()), 0)
            pkt = bytes([12 << 3]) + os.urandom(8) + struct.pack(">H", 0x0100) + tlv
        for _ in range(256):
            try:
                sock.sendto(pkt, ("127.0.0.1", port))
                sent += 1
            except BlockingIOError:
                pass
            except OSError:
                pass
        try:
            while sock.recv(2048):
                pass
        except OSError:
            pass
    print(json.dumps({"sent": sent, "seconds": round(time.monotonic() - t0, 2)}))


def cpu_ticks(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def variant_spec(name, args):
    """(client binary, client args, server binary, server args)"""
    if name == "stock-random":
        return args.baseline, ["--remote-random"], args.baseline, []
    if name == "stock-order":
        return args.baseline, [], args.baseline, []
    if name == "probe":
        return args.bin, ["--server-probe"], args.bin, []
    if name == "probe-load":
        return args.bin, ["--server-probe"], args.bin, \
            ["--server-probe-reply", args.load_margin, "load"]
    if name == "probe-pre":
        if not args.pre:
            die("probe-pre needs --pre (or FLEET_PRE)")
        return args.pre, ["--server-probe"], args.pre, []
    die("unknown variant " + name)


def run_variant(args, vname):
    cbin, cargs, sbin, sargs = variant_spec(vname, args)
    sargs = sargs + args.server_arg
    logdir = os.path.join(args.workdir, vname)
    shutil.rmtree(logdir, ignore_errors=True)
    os.makedirs(logdir)
    fl = Fleet(args, logdir)
    ports = [args.port + i for i in range(args.servers)]
    res = {"variant": vname, "clients": args.clients, "servers": args.servers,
           "budget": args.budget, "scenario": args.scenario}
    try:
        if args.scenario == "restart":
            first = [fl.server(i + 1, sbin, sargs, ports[i])
                     for i in range(args.servers - 1)]
            fl.wait_started(first)
            pre = []
            for i, s in enumerate(first):
                for j in range(args.preload):
                    pre.append(fl.client("pre%d_%d" % (i + 1, j), args.baseline,
                                         [s.port], []))
            t_end = time.time() + args.timeout
            while time.time() < t_end:
                if all(CONNECTED in c.text() for c in pre):
                    break
                time.sleep(0.2)
            res["preloaded"] = sum(1 for c in pre if CONNECTED in c.text())
            last = fl.server(args.servers, sbin, sargs, ports[-1])
            fl.wait_started([last])
            servers = first + [last]
            time.sleep(1)
        else:
            servers = [fl.server(i + 1, sbin, sargs, ports[i])
                       for i in range(args.servers)]
            fl.wait_started(servers)
        flood = None
        if args.flood:
            cpu0 = cpu_ticks(servers[0].p.pid)
            t_flood = time.monotonic()
            flood = subprocess.Popen([sys.executable, os.path.abspath(__file__),
                                      "--flood-worker", str(servers[0].port),
                                      str(args.flood)], stdout=subprocess.PIPE,
                                     text=True)
            time.sleep(1)
        herd = []
        t_herd = time.time()
        for i in range(args.clients):
            herd.append(fl.client("c%03d" % i, cbin, ports, cargs + args.client_arg))
        res["spawn_s"] = round(time.time() - t_herd, 3)
        t_end = time.time() + args.timeout
        while time.time() < t_end:
            if all(CONNECTED in c.text() for c in herd):
                break
            time.sleep(0.1)
        if flood:
            out, _ = flood.communicate(timeout=args.flood + 30)
            fl_res = json.loads(out.strip().splitlines()[-1])
            cpu1 = cpu_ticks(servers[0].p.pid)
            elapsed = time.monotonic() - t_flood
            hz = os.sysconf("SC_CLK_TCK")
            res["flood"] = {"sent": fl_res["sent"], "seconds": fl_res["seconds"],
                            "pps": round(fl_res["sent"] / max(fl_res["seconds"], 0.01)),
                            "server_cpu_pct": round(100.0 * (cpu1 - cpu0) / hz / elapsed, 1)
                            if cpu0 is not None and cpu1 is not None else None}
        if vname.startswith("probe") and args.weights_after:
            res["weights"] = []
            for s in servers:
                m = re.search(r"SUCCESS: server-probe-reply=(\S+)",
                              mgmt(s.mport, "server-probe-reply"))
                res["weights"].append(m.group(1) if m else None)
        clients = [client_result(c) for c in herd]
        for c, h in zip(clients, herd):
            c["ms_from_herd"] = round(c["ms"] + (h.t0 - t_herd) * 1000, 1) \
                if c.get("ms") is not None else None
        res["client"] = clients
        res["connected"] = sum(1 for c in clients if c["connected"])
        times = sorted(c["ms_from_herd"] for c in clients
                       if c.get("ms_from_herd") is not None)
        res["all_s"] = round(times[-1] / 1000, 2) \
            if times and len(times) == args.clients else None
        res["median_s"] = round(times[len(times) // 2] / 1000, 2) if times else None
        res["p90_s"] = round(times[int(len(times) * 0.9) - 1] / 1000, 2) \
            if len(times) >= 10 else None
        res["per_server"] = [sum(1 for c in clients if c.get("port") == p)
                             for p in ports]
        res["first_per_server"] = [sum(1 for c in clients if c.get("first") == p)
                                   for p in ports]
        res["zero_answered"] = sum(1 for c in clients if c["zero_answered"])
        res["not_all_answered"] = sum(
            1 for c in clients if c["phases"] and
            c["phases"][0].split("/")[0] != c["phases"][0].split("/")[1])
        hz = os.sysconf("SC_CLK_TCK")
        res["server_cpu_s"] = [round((cpu_ticks(s.p.pid) or 0) / hz, 2) for s in servers]
        stats = []
        for s in servers:
            st = mgmt(s.mport, "server-probe-reply stats")
            m = re.search(r"SUCCESS: (answered=\S+)", st)
            stats.append(m.group(1) if m else None)
            ini = re.findall(r"Dropped (\d+) initial handshake packets", s.text())
            warn = s.text().count("rate limit exceeded")
            stats[-1] = {"probe": stats[-1], "initial_dropped_periods": warn,
                         "initial_dropped": sum(int(x) for x in ini)}
        res["server_stats"] = stats
    finally:
        fl.stop_all()
    return res


def md_table(results):
    out = ["| scenario | clients x servers | budget (--connect-freq-initial) "
           "| variant | connected | all connected after | median | p90 "
           "| clients per server | phases with 0 answers |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        out.append("| %s | %d x %d | %s | %s | %d/%d | %s | %s | %s | %s | %s |" % (
            r["scenario"], r["clients"], r["servers"], r["budget"].replace(" ", "/") + " s",
            r["variant"], r["connected"], r["clients"],
            "%.2f s" % r["all_s"] if r["all_s"] is not None else "not all",
            "%.2f s" % r["median_s"] if r["median_s"] is not None else "-",
            "%.2f s" % r["p90_s"] if r["p90_s"] is not None else "-",
            " / ".join(str(x) for x in r["per_server"]),
            r["zero_answered"] if r["variant"].startswith("probe") else "-"))
    return "\n".join(out) + "\n"


def plot(results, path, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("fleet: no matplotlib, no plot", file=sys.stderr)
        return False
    groups = {}
    for r in results:
        groups.setdefault((r["scenario"], r["clients"], r["servers"], r["budget"]), []).append(r)
    n = len(groups)
    fig, axes = plt.subplots(n, 2, figsize=(11, 3.6 * n), squeeze=False)
    for row, (key, rs) in enumerate(groups.items()):
        ax, bx = axes[row]
        for r in rs:
            times = sorted(c["ms_from_herd"] / 1000 for c in r["client"]
                           if c.get("ms_from_herd") is not None)
            ys = [(i + 1) / r["clients"] for i in range(len(times))]
            ax.step([0] + times, [0] + ys, where="post", label=r["variant"])
        ax.set_xlabel("seconds after the herd started")
        ax.set_ylabel("clients connected (fraction)")
        ax.set_title("%s: %d clients x %d servers, budget %s/%s s" % (
            key[0], key[1], key[2], *key[3].split()))
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        width = 0.8 / len(rs)
        for i, r in enumerate(rs):
            xs = [j + i * width for j in range(r["servers"])]
            bx.bar(xs, r["per_server"], width=width, label=r["variant"])
        bx.set_xticks([j + 0.4 - width / 2 for j in range(key[2])])
        bx.set_xticklabels(["server %d" % (j + 1) for j in range(key[2])])
        bx.set_ylabel("herd clients connected")
        bx.set_title("clients per server")
        bx.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=60)
    ap.add_argument("--servers", type=int, default=3)
    ap.add_argument("--budget", default="20 10",
                    help="--connect-freq-initial of the servers (default '20 10')")
    ap.add_argument("--max-clients", type=int, default=1024)
    ap.add_argument("--server-nice", type=int, default=0,
                    help="run the servers at this nice value (negative: ahead "
                    "of the herd's client processes, which share the cores)")
    ap.add_argument("--scenario", choices=["herd", "restart"], default="herd")
    ap.add_argument("--preload", type=int, default=0,
                    help="restart: clients on each server but the last")
    ap.add_argument("--variants", default="stock-random,stock-order,probe")
    ap.add_argument("--timeout", type=float, default=90)
    ap.add_argument("--port", type=int, default=24000)
    ap.add_argument("--client-arg", action="append", default=[],
                    help="an extra client argument (repeatable)")
    ap.add_argument("--weights-after", action="store_true")
    ap.add_argument("--server-arg", action="append", default=[],
                    help="an extra server argument (repeatable)")
    ap.add_argument("--load-margin", default="0",
                    help="probe-load: the max-latency-diff the servers advertise")
    ap.add_argument("--bin", default=os.environ.get("FLEET_BIN", TOP + "/build/bin/openvpn"))
    ap.add_argument("--baseline", default=os.environ.get(
        "FLEET_BASELINE", TOP + "/build/bin/openvpn-baseline"))
    ap.add_argument("--pre", default=os.environ.get("FLEET_PRE"))
    ap.add_argument("--workdir", default=TOP + "/build/fleet")
    ap.add_argument("--json", help="append the results to this JSON file")
    ap.add_argument("--md", help="write a markdown table here")
    ap.add_argument("--png", help="plot here (the JSON file's results)")
    ap.add_argument("--title", default="oob-server-probe: herd of real clients")
    ap.add_argument("--plot-only", action="store_true")
    ap.add_argument("--wrap", choices=["tls-crypt", "none"], default="tls-crypt")
    ap.add_argument("--flood", type=float, default=0,
                    help="seconds of a flood of plain probes from one socket "
                         "at server 1, from 1 s before the herd (needs --wrap none)")
    ap.add_argument("--flood-worker", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.flood_worker:
        flood_worker(int(args.flood_worker[0]), float(args.flood_worker[1]))
        return 0

    if args.plot_only:
        with open(args.json) as f:
            results = json.load(f)
        if args.md:
            with open(args.md, "w") as f:
                f.write(md_table(results))
        if args.png:
            plot(results, args.png, args.title)
        return 0

    isolate()
    for b in (args.bin, args.baseline):
        if not os.access(b, os.X_OK):
            die("no binary " + b)
    os.makedirs(args.workdir, exist_ok=True)
    pki(os.path.join(args.workdir, "pki"), args.baseline)
    results = []
    for v in args.variants.split(","):
        t = time.time()
        r = run_variant(args, v)
        r["wall_s"] = round(time.time() - t, 1)
        results.append(r)
        print("fleet: %-12s %s x %s budget %s: %d/%d connected, all after %s s, "
              "median %s s, per server %s, 0-answer phases %d, not-all-answered %d, "
              "server probe stats %s" % (
                  v, r["clients"], r["servers"], r["budget"], r["connected"],
                  r["clients"], r["all_s"], r["median_s"], r["per_server"],
                  r["zero_answered"], r["not_all_answered"],
                  [s["probe"] for s in r["server_stats"]]), flush=True)
        print("fleet:   server CPU: %s s" % r["server_cpu_s"])
        if "flood" in r:
            print("fleet:   flood at server 1: %s" % r["flood"])
        if r.get("first_per_server") and any(r["first_per_server"]):
            print("fleet:   first remote after the probe phase, per server: %s"
                  % r["first_per_server"])
        if "weights" in r:
            print("fleet:   weights after the herd: %s" % r["weights"])
    if args.json:
        old = []
        if os.path.exists(args.json):
            with open(args.json) as f:
                old = json.load(f)
        with open(args.json, "w") as f:
            json.dump(old + results, f, indent=1)
    if args.md:
        with open(args.md, "w") as f:
            f.write(md_table(results))
    print(md_table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
