#!/bin/bash
# Build the libFuzzer targets (ASan + UBSan) against the patched build copy
# and run each for FUZZ_SECONDS (default 20) from its seed corpus:
#
#   fuzz_oob         the OOB payload codec (oob.c; on master also the
#                    server's probe checks of oob_server.c)
#   fuzz_oob_server  a server's stateless path for one datagram: mudp.c's
#                    own do_pre_decrypt_check() (mudp.c is compiled in),
#                    in all four wrap modes
#   fuzz_oob_client  a probing client's reading of a reply, all wrap modes:
#                    oob_client_receive() (oob_client.c) on 2.6,
#                    oob_probe_receive() (oob_probe.c) on master
#   fuzz_oob_memory  the probe memory file (--server-probe-persist): load,
#                    bounds, save and load again, and the same bytes as the
#                    file another client saved, merged before a save
#                    (oob_memory.c)
#
#   tests/fuzz/run.sh [TARGET...]     build and run (default: all targets)
#   tests/fuzz/run.sh --build         only build
#   tests/fuzz/run.sh --seeds         regenerate tests/fuzz/corpus/oob_{server,client}
#
# Both series: the base of FUZZ_SRC is told from its files.  A tree with
# src/openvpn/oob_server.c is the master series (build/obj/master-patched/src),
# built with -DFUZZ_BASE_MASTER: the targets then follow master's API (the
# SipHash cookie key, send_standalone_reply() sending through
# process_outgoing_link(), which the server target captures, oob_probe.c,
# msglvl_t) and link what master's unit tests link.  Otherwise it is the
# 2.6 series.  The targets check the same properties on both, and the
# corpora in tests/fuzz/corpus/ are shared: the wire format is the same.
# They are generated from 2.6 (the cookies in the client seeds are 2.6's,
# which the client does not check); --seeds on master writes to
# $FUZZ_OUT/seeds/ instead, to compare.
#
#   FUZZ_SRC=$PWD/build/obj/master-patched/src FUZZ_OUT=$PWD/build/fuzz-master \
#       tests/fuzz/run.sh
#
# Environment: FUZZ_SECONDS (per target), FUZZ_RUNS (run that many inputs
# per target instead of a time), FUZZ_SRC (the configured source tree to
# build against, default build/obj/patched/src), FUZZ_OUT (default
# build/fuzz; use another one per base, or each switch rebuilds),
# FUZZ_JOBS (parallel compiles, default 2).
#
# Exit: 0 no finding; 1 a finding (crash, sanitizer report, leak, failed
# check, timeout) or a build failure; 77 only when this machine cannot
# build libFuzzer programs.  Crashing inputs are left in $FUZZ_OUT/crashes/.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
src=${FUZZ_SRC:-$top/build/obj/patched/src}
out=${FUZZ_OUT:-$top/build/fuzz}
secs=${FUZZ_SECONDS:-20}
jobs=${FUZZ_JOBS:-2}
all_targets=(fuzz_oob fuzz_oob_server fuzz_oob_client fuzz_oob_memory)

mode=run
targets=()
for a in "$@"; do
    case "$a" in
        --build) mode=build ;;
        --seeds) mode=seeds ;;
        fuzz_*) targets+=("$a") ;;
        *) echo "usage: $0 [--build|--seeds] [${all_targets[*]}]" >&2; exit 2 ;;
    esac
done
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")

cc=${CC_FUZZ:-clang}
san=(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined)
mkdir -p "$out"

# libFuzzer available?  Compile and link a trivial target.
if ! command -v "$cc" >/dev/null; then
    echo "SKIP: $cc not installed (libFuzzer)"; exit 77
fi
printf '%s\n' '#include <stdint.h>' '#include <stddef.h>' \
    'int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }' \
    >"$out/probe_libfuzzer.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$out/probe_libfuzzer.c" \
        -o "$out/probe_libfuzzer" >"$out/probe_libfuzzer.log" 2>&1; then
    echo "SKIP: $cc cannot build libFuzzer programs here:"
    head -5 "$out/probe_libfuzzer.log"
    exit 77
fi

if [ ! -f "$src/config.h" ] || [ ! -f "$src/src/openvpn/oob.c" ]; then
    echo "FAIL: no configured patched source tree in $src (make build first)"
    exit 1
fi

o="$src/src/openvpn"
u="$src/tests/unit_tests/openvpn"

# which series: master splits the server side of oob.c off into oob_server.c
if [ -f "$o/oob_server.c" ]; then
    base=master
    defs=(-DFUZZ_BASE_MASTER)
else
    base=2.6
    defs=()
fi
echo "fuzz: $base series in $src"

inc=(-DHAVE_CONFIG_H "${defs[@]}" -I"$src" -I"$src/include" -I"$src/src/compat" -I"$o" -I"$u"
     -I/usr/include/lzo $(pkg-config --cflags libnl-genl-3.0 2>/dev/null))
cflags=(-g -O1 -Wall -ffunction-sections -fdata-sections)
libs=(-lssl -lcrypto -lcap-ng)

# what test_pkt links (tests/unit_tests/openvpn/Makefile.am, pkt_testdriver),
# and per series what else a target needs
if [ "$base" = master ]; then
    ovpn=(argv base64 buffer crypto crypto_epoch crypto_openssl crypto_mbedtls
          crypto_mbedtls_legacy env_set oob oob_server otime packet_id platform
          reliable run_command session_id siphash_reference ssl_pkt win32-util tls_crypt)
    fuzz_oob_objs=(fuzz_oob fuzz_mock oob oob_server buffer platform win32-util
                   mock_get_random)
    fuzz_oob_memory_objs=(fuzz_oob_memory fuzz_mock oob_memory oob oob_rank buffer
                          platform win32-util mock_get_random)
    fuzz_oob_client_objs=(fuzz_oob_client fuzz_client_stubs fuzz_mock "${ovpn[@]}" oob_rank)
else
    ovpn=(argv base64 buffer crypto crypto_openssl crypto_mbedtls env_set oob otime
          packet_id platform reliable run_command session_id ssl_pkt win32-util tls_crypt)
    fuzz_oob_objs=(fuzz_oob fuzz_mock oob buffer platform mock_get_random)
    fuzz_oob_memory_objs=(fuzz_oob_memory fuzz_mock oob_memory buffer platform mock_get_random)
    fuzz_oob_client_objs=(fuzz_oob_client fuzz_client_stubs fuzz_mock "${ovpn[@]}")
fi
fuzz_oob_server_objs=(fuzz_oob_server fuzz_server_stubs fuzz_mock "${ovpn[@]}" reflect_filter)
gen_seeds_objs=(gen_seeds fuzz_mock "${ovpn[@]}")

# rebuild everything when a source, header or flag changed
obj="$out/obj"
sum=$( { echo "$cc ${san[*]} ${cflags[*]} ${inc[*]}"; cat "$src/config.h" "$o"/*.h "$o"/*.c \
         "$u/tls_crypt_v2_keys.h" "$u/mock_get_random.c" "$here"/*.c "$here"/*.h; } | sha256sum | cut -d' ' -f1)
if [ "$(cat "$obj/sum" 2>/dev/null)" != "$sum" ]; then
    rm -rf "$obj"
fi
mkdir -p "$obj"

compile() {  # name [source] -> $obj/name.o
    local n=$1 f=${2:-}
    if [ -z "$f" ]; then
        for f in "$here/$n.c" "$o/$n.c" "$u/$n.c"; do [ -f "$f" ] && break; done
    fi
    nice -n 10 "$cc" "${san[@]}" "${cflags[@]}" "${inc[@]}" -c "$f" -o "$obj/$n.o.tmp" \
        >"$obj/$n.log" 2>&1 && mv "$obj/$n.o.tmp" "$obj/$n.o"
}

build() {  # target -> $out/target
    local t=$1 n
    local -n objs="${t}_objs"
    local need=()
    for n in "${objs[@]}"; do [ -f "$obj/$n.o" ] || need+=("$n"); done
    if [ ${#need[@]} -gt 0 ]; then
        local running=0
        for n in "${need[@]}"; do
            compile "$n" &
            running=$((running + 1))
            if [ $running -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
        done
        wait
        for n in "${need[@]}"; do
            if [ ! -f "$obj/$n.o" ]; then
                echo "FAIL: compiling $n for $t:"; grep -E -A3 "error" "$obj/$n.log" | head -30
                return 1
            fi
        done
    fi
    local files=()
    for n in "${objs[@]}"; do files+=("$obj/$n.o"); done
    if ! link "$t" "${files[@]}"; then
        # fuzz_oob_client compiles all of oob_client.c (master:
        # oob_probe.c), fuzz_oob_server all of mudp.c: functions that only
        # their other parts use get a stub
        # that aborts when called (see fuzz_client_stubs.c and
        # fuzz_server_stubs.c)
        local undef
        undef=$(sed -n "s/.*undefined reference to \`\([A-Za-z0-9_]*\)'.*/\1/p" \
                "$obj/$t.link.log" | sort -u)
        if [ "$t" = fuzz_oob_client ] || [ "$t" = fuzz_oob_server ] && [ -n "$undef" ]; then
            echo "fuzz: $t: stubbing what the compiled-in file needs besides the fuzzed path:" $undef
            { echo '#include <stdio.h>'; echo '#include <stdlib.h>'
              for n in $undef; do
                  echo "void $n(void); void $n(void) { fprintf(stderr, \"stub $n called\\n\"); abort(); }"
              done; } >"$obj/auto_stubs.c"
            compile auto_stubs "$obj/auto_stubs.c" || { cat "$obj/auto_stubs.log"; return 1; }
            link "$t" "${files[@]}" "$obj/auto_stubs.o" && return 0
        fi
        echo "FAIL: linking $t:"; grep -v "^ *|" "$obj/$t.link.log" | head -30
        return 1
    fi
}

link() {  # target objects...
    local t=$1 link_san=(-fsanitize=fuzzer,address,undefined)
    shift
    [ "$t" = gen_seeds ] && link_san=(-fsanitize=fuzzer-no-link,address,undefined)
    nice -n 10 "$cc" "${link_san[@]}" -Wl,--gc-sections "$@" -o "$out/$t" \
        "${libs[@]}" >"$obj/$t.link.log" 2>&1
}

if [ "$mode" = seeds ]; then
    build gen_seeds || exit 1
    # the shared corpus comes from 2.6; master's seeds differ only in the
    # cookies of the client seeds (SipHash, not HMAC)
    seeds=$here/corpus
    [ "$base" = master ] && seeds=$out/seeds
    for d in oob_server oob_client; do rm -rf "$seeds/$d"; mkdir -p "$seeds/$d"; done
    "$out/gen_seeds" "$seeds/oob_server" "$seeds/oob_client" || exit 1
    echo "seeds: $(ls "$seeds/oob_server" | wc -l) server, $(ls "$seeds/oob_client" | wc -l) client in $seeds"
    exit 0
fi

for t in "${targets[@]}"; do
    build "$t" || exit 1
done
echo "$sum" >"$obj/sum"
[ "$mode" = build ] && { echo "fuzz: built ${targets[*]} in $out"; exit 0; }

declare -A corpus=([fuzz_oob]=oob [fuzz_oob_server]=oob_server [fuzz_oob_client]=oob_client
                   [fuzz_oob_memory]=oob_memory)
declare -A maxlen=([fuzz_oob]=512 [fuzz_oob_server]=2048 [fuzz_oob_client]=2100
                   [fuzz_oob_memory]=4096)
mkdir -p "$out/crashes"
failed=()
for t in "${targets[@]}"; do
    c="$out/corpus/${corpus[$t]}"
    mkdir -p "$c"
    cp -n "$here/corpus/${corpus[$t]}"/* "$c/" 2>/dev/null || true
    if [ -n "${FUZZ_RUNS:-}" ]; then limit=(-runs="$FUZZ_RUNS"); else limit=(-max_total_time="$secs"); fi
    log="$out/$t.log"
    echo "fuzz: $t (${limit[*]}, corpus $c)"
    # a finding must never look like a skip: libFuzzer's own default for
    # some findings is 77, so set the codes, and map every failure to 1
    ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:allocator_may_return_null=0${FUZZ_ASAN_OPTIONS:+:$FUZZ_ASAN_OPTIONS}" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
        nice -n 10 "$out/$t" "${limit[@]}" -max_len="${maxlen[$t]}" -timeout=10 \
        -rss_limit_mb=2048 -detect_leaks=1 -error_exitcode=1 -timeout_exitcode=1 \
        -print_final_stats=1 -artifact_prefix="$out/crashes/$t-" "$c" >"$log" 2>&1
    rc=$?
    grep -E "^#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::average_exec_per_sec" "$log" | tail -3 | sed 's/^/  /'
    if [ $rc -ne 0 ]; then
        echo "FAIL: $t exited $rc; the end of $log:"
        grep -E -A25 "ERROR|==[0-9]+==|runtime error|check failed|ASSERT|Test unit written" "$log" | head -60
        failed+=("$t")
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: FINDINGS in ${failed[*]} (inputs in $out/crashes/)"
    exit 1
fi
echo "fuzz: no finding in ${targets[*]}"
exit 0
