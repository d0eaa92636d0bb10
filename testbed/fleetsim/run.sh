#!/bin/bash
# testbed/fleetsim/run.sh (make fleetsim): build the simulator from the
# master work tree and run its scenarios, 100 000 clients x 50 servers
# (FLEETSIM_ARGS to change, e.g. "--clients 20000"), herds arriving within
# 1 s and within 10 s, the servers advertising no margin (the clients'
# 10 ms) or max-latency-diff 100; JSON lines in build/fleetsim/results.jsonl,
# a table in build/fleetsim/results.md. One core, about 12 minutes.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
"$here/build.sh"
out=$top/build/fleetsim
mkdir -p "$out"
: >"$out/results.jsonl"
for sc in ${FLEETSIM_SCENARIOS:-outage herd drain restart silent}; do
    for sp in 1 10; do
        for m in 0 100; do
            # shellcheck disable=SC2086
            "$top/build/bin/fleetsim" --scenario "$sc" --spread "$sp" --margin "$m" \
                --until 900 ${FLEETSIM_ARGS:-} | tee -a "$out/results.jsonl"
        done
    done
done
python3 - "$out/results.jsonl" "$out/results.md" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
out = ["| scenario | herd within | servers' margin | variant | connected in 900 s | median | p90 | p99 | max | clients per live server (share / weighted share) | to region 0 | peak replies per server per s |",
       "|---|---|---|---|---|---|---|---|---|---|---|---|"]
for r in rows:
    share = "-" if r["share_vs_weight_min"] < 0 else "%.2f..%.2f" % (r["share_vs_weight_min"], r["share_vs_weight_max"])
    out.append("| %s | %d s | %s | %s | %d | %.2f s | %.2f s | %.2f s | %.2f s | %d..%d (%s) | %d | %d |" % (
        r["scenario"], r["spread_s"], "%d ms" % r["margin_ms"] if r["margin_ms"] else "none (10 ms)",
        r["variant"], r["connected"], r["median_s"], r["p90_s"], r["p99_s"], r["max_s"],
        r["clients_per_live_server_min"], r["max"], share, r["to_region0"], r["peak_replies_per_server_s"]))
open(sys.argv[2], "w").write("\n".join(out) + "\n")
PY
echo "fleetsim: table in ${out#"$top"/}/results.md"
