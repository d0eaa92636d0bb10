#!/bin/bash
# Does tests/fuzz/run.sh catch bugs?  Copy the patched build copy to
# build/fuzz-broken/src, plant one deliberate bug per target there, and
# run each target against the copy: run.sh must exit 1 for every one.
#
#   fuzz_oob         oob.c: a TLV may run 4 bytes past the payload
#   fuzz_oob_server  ssl_pkt.c tls_oob_probe_reply(): leaks 32 bytes when
#                    the probe's session id starts with 0x42
#   fuzz_oob_client  oob_client.c oob_client_receive(): length check off
#                    by one before reading the header session id
#
# FUZZ_SECONDS per target (default 60).  Exit 0 when every bug was found.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
from=${FUZZ_SRC:-$top/build/obj/patched/src}
broken=$top/build/fuzz-broken
[ -f "$from/config.h" ] || { echo "FAIL: no configured source tree in $from"; exit 1; }

rm -rf "$broken/src" "$broken/out/corpus" "$broken/out/crashes"
mkdir -p "$broken"
rsync -a --exclude='*.o' --exclude='.deps' --exclude='.libs' --exclude='*testdriver' \
    --exclude=doc "$from/" "$broken/src/" || exit 1

python3 - "$broken/src/src/openvpn" <<'EOF' || { echo "FAIL: cannot plant the bugs (the code changed?)"; exit 1; }
import sys
d = sys.argv[1]
def plant(f, old, new):
    p = d + "/" + f
    s = open(p).read()
    if s.count(old) != 1:
        sys.exit("%s: the code to break is not there" % f)
    open(p, "w").write(s.replace(old, new))
plant("oob.c", "if (BLEN(buf) < len)",
      "if (BLEN(buf) + 4 < len) /* DELIBERATE BUG */")
plant("ssl_pkt.c", "    reply.peer_session_id = state->peer_session_id;\n",
      "    reply.peer_session_id = state->peer_session_id;\n"
      "    if (state->peer_session_id.id[0] == 0x42) /* DELIBERATE BUG */\n"
      "    {\n        struct buffer leak = alloc_buf(32);\n"
      "        buf_write_u8(&leak, 1);\n    }\n")
plant("oob_client.c", "if (BLEN(pkt) < 1 + SID_SIZE",
      "if (BLEN(pkt) < SID_SIZE /* DELIBERATE BUG */")
EOF

fail=0
for t in fuzz_oob fuzz_oob_server fuzz_oob_client; do
    FUZZ_SRC="$broken/src" FUZZ_OUT="$broken/out" FUZZ_SECONDS=${FUZZ_SECONDS:-60} \
        "$here/run.sh" "$t" >"$broken/$t.out" 2>&1
    rc=$?
    if [ $rc -eq 1 ] && grep -q "FINDINGS" "$broken/$t.out"; then
        echo "ok: $t found its planted bug (run.sh exit 1): $(grep -m1 -E 'ERROR: [A-Za-z]+Sanitizer: [a-z-]+' -o "$broken/out/$t.log")"
    else
        echo "FAIL: $t did not find its planted bug (run.sh exit $rc, see $broken/$t.out)"
        fail=1
    fi
done
exit $fail
