#!/bin/bash
# Does tests/fuzz/run.sh catch bugs?  Copy the patched build copy to
# build/fuzz-broken/src, plant deliberate bugs there, and run each target
# against the copy: run.sh must exit 1 and report the planted bug, not
# another one.  Each bug is switched on at run time by FUZZ_PLANT=<name>
# (the copy is built once; a run has only its own bug), so a target cannot
# pass by finding another target's bug:
#
#   fuzz_oob         oob    oob.c: a TLV may run 4 bytes past the payload
#   fuzz_oob_server  leak   ssl_pkt.c tls_oob_probe_reply(): leaks 32 bytes
#                           when the probe's session id starts with 0x4?
#                           (one in 16: with one in 256 (0x42), master's
#                           CI run of 2026-12-02 missed it in 40 s)
#   fuzz_oob_server  mudp   mudp.c probe_reply_possible(): with
#                           --server-probe-reply off, a probe is still
#                           answered when the server's clock is even (only
#                           found by fuzzing mudp.c itself)
#   fuzz_oob_client  client oob_client.c oob_client_receive() (master:
#                           oob_probe.c oob_probe_receive()): length check
#                           off by one before reading the header session id
#   fuzz_oob_memory  memory oob_memory.c: an OFFLINE time from the file is
#                           not clamped to the retry time from now
#
# FUZZ_SECONDS per run (default 60; each stops at its first finding).
# FUZZ_SRC selects the series as in run.sh: the default is 2.6's build
# copy (broken copy in build/fuzz-broken); with FUZZ_SRC=
# build/obj/master-patched/src the same bugs are planted in master's
# files (broken copy in build/fuzz-broken-master).
# Exit 0 when every bug was found, 77 (with run.sh's SKIP line) when this
# machine cannot build libFuzzer programs.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
from=${FUZZ_SRC:-$top/build/obj/patched/src}
[ -f "$from/config.h" ] || { echo "FAIL: no configured source tree in $from"; exit 1; }
# the series, as run.sh tells it
if [ -f "$from/src/openvpn/oob_server.c" ]; then
    base=master
    broken=$top/build/fuzz-broken-master
    client_file=oob_probe
    client_func=oob_probe_receive
else
    base=2.6
    broken=$top/build/fuzz-broken
    client_file=oob_client
    client_func=oob_client_receive
fi

rm -rf "$broken/src" "$broken/out/corpus" "$broken/out/crashes"
mkdir -p "$broken"
# (/_*: the build directories and logs kept at the top of master's copy)
rsync -a --exclude='*.o' --exclude='.deps' --exclude='.libs' --exclude='*testdriver' \
    --exclude=doc --exclude='/_*' "$from/" "$broken/src/" || exit 1

python3 - "$broken/src/src/openvpn" "$base" <<'EOF_PY' || { echo "FAIL: cannot plant the bugs (the code changed?)"; exit 1; }
import sys
d = sys.argv[1]
base = sys.argv[2]
def plant(f, old, new):
    p = d + "/" + f
    s = open(p).read()
    if s.count(old) != 1:
        sys.exit("%s: the code to break is not there" % f)
    s = s.replace(old, new)
    # the switch: FUZZ_PLANT=<name> in the environment
    fn = "fuzz_plant_" + f.replace(".", "_")
    if fn + "(const" not in s:
        # (declared, not #included: before config.h an include would
        # settle the feature macros too early)
        s = ("char *getenv(const char *);\nint strcmp(const char *, const char *);\n"
             "static int %s(const char *n)\n"
             "{\n    const char *v = getenv(\"FUZZ_PLANT\");\n"
             "    return v && strcmp(v, n) == 0;\n}\n" % fn) + s
    open(p, "w").write(s)
plant("oob.c", "if (BLEN(buf) < len)",
      "if (BLEN(buf) + (fuzz_plant_oob_c(\"oob\") ? 4 : 0) < len) /* DELIBERATE BUG */")
plant("ssl_pkt.c", "    reply.peer_session_id = state->peer_session_id;\n",
      "    reply.peer_session_id = state->peer_session_id;\n"
      "    if (fuzz_plant_ssl_pkt_c(\"leak\") && (state->peer_session_id.id[0] & 0xf0) == 0x40) /* DELIBERATE BUG */\n"
      "    {\n        struct buffer leak = alloc_buf(32);\n"
      "        buf_write_u8(&leak, 1);\n    }\n")
plant("mudp.c", "if (m->probe_reply.off)",
      "if (m->probe_reply.off && !(fuzz_plant_mudp_c(\"mudp\") && now % 2 == 0)) /* DELIBERATE BUG */")
plant("oob_memory.c", "if (left > (int64_t)retry * 1000000)",
      "if (left > (int64_t)retry * 1000000 && !fuzz_plant_oob_memory_c(\"memory\")) /* DELIBERATE BUG */")
if base == "master":
    plant("oob_probe.c", "if (BLEN(pkt) < 1 + (int)SID_SIZE",
          "if (BLEN(pkt) < (fuzz_plant_oob_probe_c(\"client\") ? 0 : 1) + (int)SID_SIZE /* DELIBERATE BUG */")
else:
    plant("oob_client.c", "if (BLEN(pkt) < 1 + SID_SIZE",
          "if (BLEN(pkt) < (fuzz_plant_oob_client_c(\"client\") ? 0 : 1) + SID_SIZE /* DELIBERATE BUG */")
EOF_PY

# target, plant, what the report must show (in the target's log): the
# kind of finding, and where (a frame of the planted function)
cases=(
    "fuzz_oob        oob    ERROR:.AddressSanitizer  in.oob_[a-z_]+.*/oob\\.c:"
    "fuzz_oob_server leak   ERROR:.LeakSanitizer     in.tls_oob_probe_reply.*/ssl_pkt\\.c:"
    "fuzz_oob_server mudp   fuzz_oob_server:.check.failed:.*OOB_DROP_OFF  in.LLVMFuzzerTestOneInput"
    "fuzz_oob_client client ERROR:.AddressSanitizer  in.$client_func.*/$client_file\\.c:"
    "fuzz_oob_memory memory fuzz_oob_memory:.check.failed:.OFFLINE  in.LLVMFuzzerTestOneInput"
)
fail=0
for c in "${cases[@]}"; do
    read -r t p kind where <<<"$c"
    rm -rf "$broken/out/corpus" "$broken/out/crashes"
    t0=$(date +%s)
    FUZZ_PLANT=$p FUZZ_SRC="$broken/src" FUZZ_OUT="$broken/out" FUZZ_SECONDS=${FUZZ_SECONDS:-60} \
        "$here/run.sh" "$t" >"$broken/$t-$p.out" 2>&1
    rc=$?
    cp "$broken/out/$t.log" "$broken/$t-$p.log" 2>/dev/null
    took=$(( $(date +%s) - t0 ))
    if [ $rc -eq 77 ]; then
        # run.sh cannot build libFuzzer programs here: its SKIP line
        grep -m1 '^SKIP' "$broken/$t-$p.out" || echo "SKIP: run.sh exited 77"
        exit 77
    fi
    if [ $rc -eq 1 ] && grep -q "FINDINGS" "$broken/$t-$p.out" &&
       grep -qE "$kind" "$broken/$t-$p.log" && grep -qE "$where" "$broken/$t-$p.log"; then
        echo "ok: $t found the planted bug '$p' in ${took}s (run.sh exit 1): $(grep -m1 -oE 'ERROR: [A-Za-z]+Sanitizer: [a-z-]+|check failed: .*' "$broken/$t-$p.log")"
    else
        echo "FAIL: $t did not find the planted bug '$p' in ${took}s (run.sh exit $rc, see ${broken#"$top"/}/$t-$p.out and $t-$p.log)"
        tail -n 5 "$broken/$t-$p.out" | sed 's/^/    /'
        fail=1
    fi
done
exit $fail
