#!/bin/bash
# testbed/bench-fleet.sh (make bench-fleet): herds of real clients against
# three servers on this machine (testbed/fleet.py), the series against
# unpatched OpenVPN built the same way, in the same run (issue 25):
#
#  (1) herd 60 x 3, --connect-freq-initial 20 10: unpatched with
#      --remote-random and in config order, the series before issue 25
#      (FLEET_PRE, if set: probes shared the handshake budget), the series
#      with default server settings, and with the servers advertising
#      max-latency-diff 50 (co-located servers: RTT differences under
#      load are noise);
#  (2) herd 300 x 3, default budgets: the same unpatched rows and the
#      series; "live server silent" counts the clients whose phase missed
#      a live server's reply (what the probe memory would keep as OFFLINE);
#  (3) one of three servers restarted empty, the others at 80 of
#      --max-clients 100; the next 60 clients: static weights vs
#      --server-probe-reply 1000 load (co-located servers: under load the
#      round trip times here differ by up to 250 ms of server queueing);
#  (4) a flood of valid probes (servers without tls-crypt, so that a
#      script can forge them) from one source at server 1 while 30 clients
#      connect: server 1's CPU, its replies, and the herd.
#
# The servers run at nice -10 (FLEET_SERVER_NICE): here the herd's
# client processes (about 40 ms of CPU each, 12 s for 300) share two
# cores with the servers (0.5 s each per herd), so at an equal nice value
# a server's reply waits behind hundreds of clients in the run queue,
# which no deployment has; every variant gets the same servers.  With
# FLEET_SERVER_NICE=0 the rows show that shared-CPU case.
#
# Results in build/bench-fleet/: results.md (table), results.json, and
# fleet.png (time-to-connect CDF per variant and clients per server).
# Env: FLEET_BIN, FLEET_BASELINE (default build/bin/openvpn[-baseline]),
# FLEET_PRE (the series before issue 25, optional), BENCH_FLEET_ROWS
# (default "1 2 3 4"). Needs root (a network namespace, tun devices).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
out=$top/build/bench-fleet
rm -rf "$out"
mkdir -p "$out"
: "${FLEET_BIN:=$top/build/bin/openvpn}"
: "${FLEET_BASELINE:=$top/build/bin/openvpn-baseline}"
export FLEET_BIN FLEET_BASELINE
rows=${BENCH_FLEET_ROWS:-1 2 3 4}
: "${FLEET_SERVER_NICE:=-10}"
fleet() { python3 "$here/fleet.py" --workdir "$out/work" --json "$out/results.json" --server-nice "$FLEET_SERVER_NICE" "$@" | grep -v '^|'; }
pre=""
[ -n "${FLEET_PRE:-}" ] && [ -x "$FLEET_PRE" ] && pre=probe-pre,

# the plot: Debian's python3-matplotlib (a python3 of its own, e.g. from
# pyenv, does not see it: then /usr/bin/python3 plots)
plotpy=python3
python3 -c "import matplotlib" 2>/dev/null || {
    /usr/bin/python3 -c "import matplotlib" 2>/dev/null ||
        apt-get install -y -q python3-matplotlib >/dev/null 2>&1 || true
    plotpy=/usr/bin/python3
}
t0=$(date +%s)
for r in $rows; do
    case $r in
        1) fleet --clients 60 --budget "20 10" --variants "stock-random,stock-order,${pre}probe" ${FLEET_PRE:+--pre "$FLEET_PRE"}
           fleet --clients 60 --budget "20 10" --variants probe --server-arg=--server-probe-reply --server-arg=50 --title x |
               sed 's/fleet: probe /fleet: probe (margin 50) /'
           ;;
        2) fleet --clients 300 --budget "100 10" --variants stock-random,stock-order,probe --timeout 120 ;;
        3) fleet --scenario restart --max-clients 100 --preload 80 --clients 60 --budget "100 10" \
               --variants probe,probe-load --load-margin 1000 --weights-after --timeout 90 ;;
        4) fleet --clients 30 --budget "100 10" --wrap none --flood 12 --variants stock-random,probe --timeout 30 ;;
    esac
done
python3 - "$out/results.json" "$out/results.md" <<'EOF'
import json, sys
rs = json.load(open(sys.argv[1]))
# the second row-1 probe run is the one with the servers' margin 50
seen = {}
for r in rs:
    key = (r["scenario"], r["clients"], r["budget"], r["variant"], "flood" in r)
    if key in seen and r["variant"] == "probe":
        r["variant"] = "probe, servers advertise max-latency-diff 50"
    seen[key] = True
    if r["scenario"] == "restart":
        r["variant"] += " (static weight 50)" if r["variant"] == "probe" else " (load, margin 1000)"
    if "flood" in r:
        r["scenario"] = "herd + probe flood at server 1"
json.dump(rs, open(sys.argv[1], "w"), indent=1)
lines = ["| case | variant | connected | all connected after | median | p90 | clients per server | live server silent in the phase | server notes |",
         "|---|---|---|---|---|---|---|---|---|"]
for r in rs:
    notes = []
    if "flood" in r:
        f = r["flood"]
        notes.append("flood %d pkt/s, server 1 CPU %s %%" % (f["pps"], f["server_cpu_pct"]))
        st = r["server_stats"][0]["probe"]
        if st:
            notes.append("server 1 " + ",".join(x for x in st.split(",") if x.split("=")[0] in ("answered", "rate-limit")))
    if r.get("weights"):
        notes.append("weights after: " + " / ".join(w.split("weight=")[1].split(",")[0] for w in r["weights"] if w))
    if r["scenario"] == "restart":
        notes.append("%d%% to the restarted server" % round(100 * r["per_server"][2] / max(1, r["connected"])))
    case = "%s %d x %d, budget %s/%s s" % (r["scenario"], r["clients"], r["servers"], *r["budget"].split())
    lines.append("| %s | %s | %d/%d | %s | %s | %s | %s | %s | %s |" % (
        case, r["variant"], r["connected"], r["clients"],
        "%.2f s" % r["all_s"] if r["all_s"] is not None else "not all",
        "%.2f s" % r["median_s"] if r["median_s"] is not None else "-",
        "%.2f s" % r["p90_s"] if r.get("p90_s") is not None else "-",
        " / ".join(map(str, r["per_server"])),
        r["not_all_answered"] if r["variant"].startswith("probe") else "-",
        "; ".join(notes)))
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
EOF
"$plotpy" "$here/fleet.py" --plot-only --json "$out/results.json" --png "$out/fleet.png" \
    --title "herds of real clients (--dev null) against 3 servers, this machine, one run" || true
echo "bench-fleet: $(( $(date +%s) - t0 )) s; results in ${out#"$top"/}/results.md, plot fleet.png"
