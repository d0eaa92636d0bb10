#!/bin/bash
# Build the OOB codec fuzzer with clang's libFuzzer and run it for
# FUZZ_SECONDS (default 20) from the seed corpus in tests/fuzz/corpus.
# Exit 77 (skip) without clang/libFuzzer.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
src="$top/build/obj/patched/src"
out="$top/build/fuzz"
secs=${FUZZ_SECONDS:-20}

command -v clang >/dev/null || { echo "SKIP: clang not installed (libFuzzer)"; exit 77; }
[ -f "$src/src/openvpn/oob.c" ] || { echo "SKIP: no patched build in $src"; exit 77; }
mkdir -p "$out/corpus"
cp -n "$here"/corpus/* "$out/corpus/" 2>/dev/null || true

inc=(-I"$src" -I"$src/include" -I"$src/src/compat" -I"$src/src/openvpn" $(pkg-config --cflags libnl-genl-3.0 2>/dev/null) -I/usr/include/lzo)
if ! clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        "${inc[@]}" -DHAVE_CONFIG_H \
        "$here/fuzz_oob.c" "$src/src/openvpn/oob.c" "$src/src/openvpn/buffer.c" \
        "$src/src/openvpn/platform.c" "$src/tests/unit_tests/openvpn/mock_msg.c" \
        "$src/tests/unit_tests/openvpn/mock_get_random.c" \
        -o "$out/fuzz_oob" -lcrypto -lcmocka -lcap-ng 2>"$out/build.log"; then
    if grep -q "fuzzer" "$out/build.log"; then
        echo "SKIP: clang cannot build libFuzzer targets here"; cat "$out/build.log" | head -5; exit 77
    fi
    cat "$out/build.log"; exit 1
fi
"$out/fuzz_oob" -max_total_time="$secs" -max_len=512 -print_final_stats=1 \
    "$out/corpus" 2>&1 | tail -15
rc=${PIPESTATUS[0]}
[ $rc -eq 0 ] && echo "fuzz: no crash in ${secs}s"
exit $rc
