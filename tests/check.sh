#!/bin/bash
# Run every test of the project against the builds in build/:
#   upstream's unit tests (all of them, with the series' own) and
#   t_lpback.sh / t_cltsrv.sh / t_net.sh, the series check, the style
#   check, the relay's tests, the fuzz targets and their self-test (a
#   planted bug per target must be found) and the end-to-end tests in
#   tests/e2e/.
# Prints PASS/FAIL/SKIP per test and a closing "N passed, N failed" line.
# With patches/master/ the same for the master series: its CMake and
# --disable-management --enable-small builds and its e2e suite run in a
# background lane beside the 2.6 e2e suite and the soak (see lane_start),
# and are reported at the end.
#
#   tests/check.sh [-k PATTERN]   only steps whose name matches PATTERN
#
# What the builds are made of must be what patches/ holds: the "worktree"
# step fails when build/openvpn has uncommitted edits (scripts/build.sh
# builds those too) or commits that are not exported to patches/.
#   CHECK_ALLOW_DIRTY=1   developer escape hatch: a difference is printed as
#                         a WARNING line instead of failing (ignored when
#                         CI=true)
#   CHECK_LOGS=DIR        where the logs go (default build/check)
# Exit 77 means SKIP only together with a "SKIP: reason" line in the step's
# output; any other exit status, or 77 without a reason, is a FAIL. With
# CI=true a skip for lack of root or /dev/net/tun is a failure (the e2e
# tests and t_net check CI themselves, see testbed/lib.sh tb_need_root),
# and so is a fuzz step's skip for lack of clang/libFuzzer (ci_no_skip).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# CHECK_OBJ: another patched build tree (to test this script itself)
obj="${CHECK_OBJ:-$top/build/obj/patched/src}"
logs="${CHECK_LOGS:-$top/build/check}"
filter=""
[ "${1:-}" = "-k" ] && filter=${2:-}
rm -rf "$logs"
mkdir -p "$logs"

pass=0 fail=0 skip=0
failed=()
warned=()

# CI=true (GitHub, GitLab, .ci/run): no escape hatches
in_ci=0
case ${CI:-} in [Tt][Rr][Uu][Ee]|1|[Yy][Ee][Ss]) in_ci=1 ;; esac
allow_dirty=0
if [ "${CHECK_ALLOW_DIRTY:-0}" = 1 ]; then
    if [ $in_ci = 1 ]; then
        echo "check: CI=true: CHECK_ALLOW_DIRTY=1 is ignored"
    else
        allow_dirty=1
    fi
fi

result()
{
    local name=$1 rc=$2 log=$3 t=$4 reason=${5:-}
    if [ "$rc" = 77 ] && [ -z "$reason" ]; then
        # a skip must say why; an exit 77 from anything else (libFuzzer
        # exits 77 on some findings) is a failure
        reason=$(grep -m1 -E '^SKIP[: ]' "$log" | sed 's/^SKIP[: ]*//' | cut -c1-160)
        if [ -z "$reason" ]; then
            echo "check: exit 77 without a 'SKIP: reason' line: counted as a failure" >>"$log"
            rc="77 without a SKIP reason"
        fi
    fi
    case $rc in
        0)  pass=$((pass + 1)); printf 'PASS %-40s %5ss\n' "$name" "$t" ;;
        77) skip=$((skip + 1))
            printf 'SKIP %-40s %s\n' "$name" "$reason" ;;
        *)  fail=$((fail + 1)); failed+=("$name")
            printf 'FAIL %-40s %5ss (rc %s, log %s)\n' "$name" "$t" "$rc" "${log#"$top"/}"
            # what failed first (a tail alone can miss the "not ok" lines
            # of a long test), then the end of the log
            grep -nE '^(not ok|FAIL|ERROR|Bail out)|ERROR: (Address|Leak)Sanitizer|runtime error:' "$log" |
                head -n 10 | sed 's/^/    ! /'
            tail -n 25 "$log" | sed 's/^/    | /' ;;
    esac
}

# step_run NAME TIMEOUT CMD...: run one test, bounded in time; its exit
# status and seconds go to the step's .rc file (step_report prints them)
step_run()
{
    local name=$1 limit=$2; shift 2
    local log="$logs/${name//\//_}.log" t0 rc
    t0=$(date +%s)
    # bash -c so that exported shell functions can be steps too
    STEP_WARN="$logs/${name//\//_}.warn"
    export STEP_WARN
    timeout --kill-after=10 "$limit" bash -c '"$@"' step "$@" >"$log" 2>&1 </dev/null
    rc=$?
    [ $rc -eq 124 ] && echo "TIMEOUT after ${limit}s" >>"$log"
    echo "$rc $(( $(date +%s) - t0 ))" >"$log.rc"
}

# step_report NAME: count and print the result step_run recorded
step_report()
{
    local name=$1
    local log="$logs/${name//\//_}.log" rc t
    local warn="$logs/${name//\//_}.warn"
    read -r rc t <"$log.rc" || { rc="no result"; t="-"; }
    # TAP "ok N - ... # SKIP" lines pass the step but test nothing: counted
    # and printed; in CI a failure
    local tapskip
    tapskip=$(grep -cE '^ok [0-9]+ .*# *SKIP' "$log")
    if [ "$rc" = 0 ] && [ "$tapskip" -gt 0 ] && [ $in_ci = 1 ]; then
        echo "check: CI=true: $tapskip check(s) reported 'ok ... # SKIP': a failure in CI" >>"$log"
        rc=1
    fi
    result "$name" "$rc" "$log" "$t"
    if [ "$rc" = 0 ] && [ "$tapskip" -gt 0 ]; then
        echo "     ($tapskip check(s) inside skipped: $(grep -m1 -E '^ok [0-9]+ .*# *SKIP' "$log" | sed 's/.*# *SKIP *//' | cut -c1-100))"
    fi
    # a step that passed only thanks to an escape hatch says so
    if [ -s "$warn" ]; then
        warned+=("$name")
        sed 's/^/WARNING /' "$warn"
    fi
}

# selected NAME: the step is not filtered out by -k
selected()
{
    [ -z "$filter" ] || [[ "$1" =~ $filter ]]
}

# step NAME TIMEOUT CMD...: run one test and report it
step()
{
    selected "$1" || return 0
    step_run "$@"
    step_report "$1"
}

# A lane runs steps in the background, one after the other, while the
# main sequence goes on (the e2e tests of the series mostly wait on timers,
# each in network namespaces of its own); lane_collect waits for the lane
# and reports its steps in their order. Two lanes run: "builds" (every
# build besides the ones make check starts from, at the lowest CPU
# priority, so the tests in the other lanes go first) and "master" (the
# e2e tests of the master and 2.7 series).
#   lane_start NAME; lane_step NAME TIMEOUT CMD...; lane_wait STEP; ...; lane_end
#   ... other steps ...
#   lane_collect NAME
# A step that needs another lane's step (a build) waits for it with
# wait_for STEP (not counted in its time), and runs through
# "after STEP CMD...", which fails it when STEP failed.
declare -A lane_pids=() lane_steps=()
lane_cmds=()
lane_cur=""
lane_start() { lane_cur=$1; lane_cmds=(); lane_steps[$1]=""; }
lane_step()
{
    selected "$1" || return 0
    lane_steps[$lane_cur]+="$1 "
    lane_cmds+=("step_run $(printf '%q ' "$@")")
}
lane_wait() { lane_cmds+=("wait_for $(printf '%q' "$1")"); }
lane_end()
{
    [ ${#lane_cmds[@]} -gt 0 ] || return 0
    local c
    ( for c in "${lane_cmds[@]}"; do eval "$c"; done ) &
    lane_pids[$lane_cur]=$!
}
lane_collect()
{
    local n
    [ -n "${lane_pids[$1]:-}" ] && wait "${lane_pids[$1]}"
    unset "lane_pids[$1]"
    for n in ${lane_steps[$1]:-}; do step_report "$n"; done
    lane_steps[$1]=""
}
# wait_for STEP: until STEP (in a lane) has its result; at once when
# check.sh -k filters STEP out (what build/ holds then is used)
wait_for()
{
    local f="$logs/${1//\//_}.log.rc" n=0
    while [ ! -e "$f" ] && [ $n -lt 2700 ]; do
        if [ -n "${filter:-}" ] && ! [[ "$1" =~ $filter ]]; then return 0; fi
        sleep 2
        n=$((n + 1))
    done
}
# after STEP CMD...: CMD once STEP passed (a step that needs a build)
after()
{
    local dep=$1 f rc
    shift
    f="$logs/${dep//\//_}.log.rc"
    wait_for "$dep"
    if [ -e "$f" ]; then
        read -r rc _ <"$f"
        [ "$rc" = 0 ] || { echo "FAIL: this step needs $dep, which failed (rc $rc)"; return 1; }
    elif [ -z "${filter:-}" ] || [[ "$dep" =~ $filter ]]; then
        echo "FAIL: this step needs $dep, which has no result"
        return 1
    fi
    "$@"
}

# worktree [BASE]: the base's work tree (build/openvpn for 2.6, what
# scripts/build.sh builds, uncommitted edits and untracked files included)
# must be exactly patches/BASE/: no uncommitted edits, no untracked files,
# and its commits upstream..HEAD the patches of patches/BASE/series in
# order (same git patch-id)
worktree()
{
    local base=${1:-2.6} why=() st p i a b
    local wt="$top/build/openvpn" pd="$top/patches/${1:-2.6}"
    [ "$base" = 2.6 ] || wt="$top/build/openvpn-$base"
    local rel=${wt#"$top"/}
    if [ ! -d "$wt/.git" ]; then
        echo "worktree: $wt is missing (make tree)"
        return 1
    fi
    st=$(git -C "$wt" status --porcelain --untracked-files=normal 2>&1) ||
        { echo "worktree: git status failed: $st"; return 1; }
    if [ -n "$st" ]; then
        why+=("$rel has uncommitted edits or untracked files (they are built and tested, but are not in patches/$base/): $(awk '{ print $2 }' <<<"$st" | head -n 8 | tr '\n' ' ')")
        echo "$st" | head -n 40
    fi
    mapfile -t a < <(git -C "$wt" rev-list --reverse upstream..HEAD |
        while read -r c; do git -C "$wt" show "$c" | git patch-id --stable | cut -d' ' -f1; done)
    mapfile -t b < <(grep . "$pd/series" | while read -r p; do
        git patch-id --stable <"$pd/$p" | cut -d' ' -f1; done)
    if [ "${#a[@]}" -ne "${#b[@]}" ]; then
        why+=("$rel has ${#a[@]} commit(s) since upstream, patches/$base/series lists ${#b[@]} (make export)")
    else
        for ((i = 0; i < ${#a[@]}; i++)); do
            if [ -z "${a[$i]}" ] || [ "${a[$i]}" != "${b[$i]}" ]; then
                why+=("commit $((i + 1)) of $rel is not patch $(sed -n "$((i + 1))p" "$pd/series") (make export)")
                break
            fi
        done
    fi
    if [ ${#why[@]} -eq 0 ]; then
        echo "worktree: $rel is patches/$base/ (${#a[@]} commits, no uncommitted edits)"
        return 0
    fi
    printf 'worktree: %s\n' "${why[@]}"
    if [ "$allow_dirty" = 1 ]; then
        printf "worktree differs from patches/$base/ (CHECK_ALLOW_DIRTY=1): %s\n" "${why[@]}" >>"$STEP_WARN"
        return 0
    fi
    echo "worktree: the results would not be those of patches/: commit and 'make export'" \
         "(or CHECK_ALLOW_DIRTY=1 outside CI for a developer run)"
    return 1
}

# series-check: patches/ applies with git am and gives build/openvpn's HEAD
# tree; with CHECK_ALLOW_DIRTY=1 (never in CI) a HEAD that differs is a
# warning, a series that does not apply still fails
series_check()
{
    local out rc
    out=$(BASE=${1:-2.6} "$top/scripts/series-check.sh" 2>&1)
    rc=$?
    echo "$out"
    if [ $rc -ne 0 ] && [ "$allow_dirty" = 1 ] &&
       grep -q "HEAD differs from patches/" <<<"$out"; then
        echo "series-check: the work tree's HEAD differs from patches/${1:-2.6}/ (CHECK_ALLOW_DIRTY=1)" >>"$STEP_WARN"
        return 0
    fi
    return $rc
}

unit_tests()
{
    # upstream's harness, every driver it knows (the series' test_oob too);
    # bounded: a hanging driver must not hang make check
    timeout --kill-after=10 "${UNIT_TIMEOUT:-600}" make -C "$obj/tests/unit_tests" check 2>&1
    local rc=$?
    [ $rc -eq 124 ] && echo "TIMEOUT: the unit tests took more than ${UNIT_TIMEOUT:-600}s"
    return $rc
}

# expected_drivers: the unit test drivers this build must run and pass:
# $(TESTS) of the generated tests/unit_tests/openvpn/Makefile (the
# test_binaries of Makefile.am whose conditions hold here), every driver
# Makefile.am lists outside a conditional, and the series' own two
expected_drivers()
{
    local d="$obj/tests/unit_tests/openvpn" am="$top/build/openvpn/tests/unit_tests/openvpn/Makefile.am"
    {
        printf 'check-print-tests:\n\t@echo $(TESTS)\n' |
            make -s --no-print-directory -C "$d" -f Makefile -f - check-print-tests 2>/dev/null | tr ' ' '\n'
        # test_binaries assignments at if-depth 0 (with continuation lines)
        awk '/^if /{ depth++ } /^endif/{ depth-- }
             /^test_binaries *\+?=/ && depth == 0 { grab = 1 }
             grab { for (i = 1; i <= NF; i++) if ($i ~ /_testdriver$/) print $i
                    grab = ($0 ~ /\\$/) }' "$am" 2>/dev/null
        echo oob_testdriver
        echo pkt_testdriver
    } | grep -E '^[A-Za-z0-9_]+_testdriver$' | sort -u
}

upstream_script()
{
    local out rc
    out=$(mktemp)
    (cd "$obj/tests" && top_srcdir=.. srcdir=. top_builddir=.. "./$1") 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
    # upstream's scripts skip (77) without a "SKIP:" line: name their reason
    if [ "$rc" = 77 ]; then
        echo "SKIP: upstream $1 exited 77: $( (grep -iE 'skip' "$out" || tail -n 1 "$out") | tail -n 1 | cut -c1-120)"
    fi
    rm -f "$out"
    return "$rc"
}

t_net()
{
    if [ "$(id -u)" -ne 0 ]; then
        if [ "${in_ci:-0}" = 1 ]; then
            echo "FAIL: t_net.sh needs root (it creates a dummy link); CI=true runs as root"
            return 1
        fi
        echo "SKIP: t_net.sh needs root (it creates a dummy link)"
        return 77
    fi
    if ! ip link add ovpn-chk-dummy type dummy 2>/dev/null; then
        echo "SKIP: t_net.sh needs the 'dummy' link type, which this kernel lacks"
        return 77
    fi
    ip link del ovpn-chk-dummy
    upstream_script t_net.sh
}

# ci_no_skip CMD...: CMD, but with CI=true its skip (exit 77, e.g. the
# fuzzers without clang/libFuzzer) is a failure: the CI run must have it
ci_no_skip()
{
    "$@"
    local rc=$?
    if [ $rc -eq 77 ] && [ "$in_ci" = 1 ]; then
        echo "FAIL: CI=true: $(basename "${@: -1}") skipped (exit 77, see the SKIP line above); the CI run must have what it needs"
        return 1
    fi
    return $rc
}

export top obj allow_dirty in_ci logs filter
export -f upstream_script t_net worktree series_check ci_no_skip wait_for after

if [ ! -x "$obj/src/openvpn/openvpn" ]; then
    echo "check: no build in $obj; run 'make check' (it builds first)" >&2
    exit 2
fi

# the master series (patches/master/, build/openvpn-master): the same
# checks of the work tree, the series and the style (clang-format 21.1.8),
# its unit tests under autotools (every driver PASS) and under CMake
# (ctest), the fuzz targets built against it, the build without
# management and with --enable-small (-Werror), and the whole e2e suite
# against it, with unpatched master built the same way as the baseline
# (t_cross, which runs master and 2.6 against each other, runs once)
master_unit()
{
    timeout --kill-after=10 600 make -C "$top/build/obj/master-patched/src/tests/unit_tests" check 2>&1 |
        tee "$logs/master-unit.out"
    local rc=${PIPESTATUS[0]}
    grep -E '^(PASS|FAIL|ERROR|XPASS|SKIP): ' "$logs/master-unit.out"
    [ "$rc" -eq 0 ] && ! grep -qE '^(FAIL|ERROR|XPASS): ' "$logs/master-unit.out" &&
        grep -qE '^PASS: .*oob' "$logs/master-unit.out"
}
master_cmake()
{
    local b="$top/build/obj/master-cmake"
    # a clean copy of the commit: CMake refuses a source tree that an
    # in-tree autotools build configured; no pkcs11-helper here
    rm -rf "$b" "$b.src" && mkdir -p "$b.src" &&
        git -C "$top/build/openvpn-master" archive HEAD | tar -x -C "$b.src" || return 1
    cmake -S "$b.src" -B "$b" -DUNSUPPORTED_BUILDS=ON -DENABLE_PKCS11=OFF \
        -DCMAKE_BUILD_TYPE=Release >"$logs/master-cmake.configure" 2>&1 ||
        { tail -30 "$logs/master-cmake.configure"; return 1; }
    cmake --build "$b" -j"$(nproc)" >"$logs/master-cmake.build" 2>&1 ||
        { grep -m40 -E 'error|Error' "$logs/master-cmake.build"; return 1; }
    timeout --kill-after=10 600 ctest --test-dir "$b" --output-on-failure 2>&1 | tee "$logs/master-ctest.out"
    local rc=${PIPESTATUS[0]}
    grep -qiE 'test_oob|oob' "$logs/master-ctest.out" || { echo "ctest ran no test of the series"; return 1; }
    return "$rc"
}
master_e2e()
{
    TB_BIN="$top/build/bin/openvpn-master" TB_BASELINE="$top/build/bin/openvpn-master-baseline" \
        TB_ROOT="$top/build/testbed-master" "$top/tests/e2e/$1.sh"
}
master_small()
{
    # -Wdate-time (Debian's flags) fails on upstream's own __DATE__ with -Werror
    DEB_CFLAGS_APPEND="-Wno-error=date-time" BASE=master CONFIGURE_FLAGS="--enable-dco --enable-x509-alt-username --enable-unit-tests --enable-werror" \
        "$top/scripts/build.sh" small
}
# asan_e2e BASE TEST: an e2e test against the ASan+UBSan build of a
# series (build/bin/openvpn[-BASE]-asan, clients and servers) with its
# unpatched baseline; any sanitizer report (per-process files, leaks at
# exit included) fails it (issue 26)
asan_e2e()
{
    local base=$1 t=$2 sfx="" f reports rc
    [ "$base" = 2.6 ] || sfx="-$base"
    local dir="$top/build/check-asan$sfx/$t"
    rm -rf "$dir"
    mkdir -p "$dir/san"
    chmod 1777 "$dir/san"
    [ -x "$top/build/bin/openvpn$sfx-asan" ] || { echo "no build/bin/openvpn$sfx-asan"; return 1; }
    TB_BIN="$top/build/bin/openvpn$sfx-asan" TB_BASELINE="$top/build/bin/openvpn$sfx-baseline" \
        TB_ROOT="$top/build/testbed-asan$sfx" \
        ASAN_OPTIONS="log_path=$dir/san/asan:detect_leaks=1:halt_on_error=1:abort_on_error=0" \
        LSAN_OPTIONS="log_path=$dir/san/lsan" \
        UBSAN_OPTIONS="log_path=$dir/san/ubsan:halt_on_error=1:print_stacktrace=1" \
        "$top/tests/e2e/$t.sh"
    rc=$?
    reports=$(find "$dir/san" -type f | sort)
    for f in $reports; do
        echo "=== sanitizer report $f"
        head -60 "$f"
    done
    [ -z "$reports" ] || return 1
    return $rc
}
# the e2e tests that run on the sanitizer builds: reconnects, the probe
# memory, failover, hostile replies, the field test bed
ASAN_E2E=${ASAN_E2E:-t_memory_evidence t_memory t_failover t_reconnect t_hostile t_field t_client_probe}
export ASAN_E2E
# asan_covers TEST: TEST runs on the ASan builds (not twice: once there is
# enough; E2E_PLAIN_ALL=1 runs the whole suite on the plain builds too)
asan_covers()
{
    [ "${E2E_PLAIN_ALL:-0}" != 1 ] && [[ " $ASAN_E2E " == *" $1 "* ]]
}
# the 2.7 series (patches/2.7/, build/openvpn-2.7): the backport of the
# master series to v2.7.6, the same code (scripts/series-diff.sh)
s27_unit()
{
    local rc
    timeout --kill-after=10 600 make -C "$top/build/obj/2.7-patched/src/tests/unit_tests" check 2>&1 |
        tee "$logs/2.7-unit.out"
    rc=${PIPESTATUS[0]}
    grep -E '^(PASS|FAIL|ERROR|XPASS|SKIP): ' "$logs/2.7-unit.out"
    [ "$rc" -eq 0 ] && ! grep -qE '^(FAIL|ERROR|XPASS): ' "$logs/2.7-unit.out" &&
        grep -qE '^PASS: .*oob' "$logs/2.7-unit.out"
}
s27_e2e()
{
    TB_BIN="$top/build/bin/openvpn-2.7" TB_BASELINE="$top/build/bin/openvpn-2.7-baseline" \
        TB_ROOT="$top/build/testbed-2.7" "$top/tests/e2e/$1.sh"
}
export -f master_unit master_cmake master_e2e master_small asan_e2e s27_unit s27_e2e

# the builds upstream's CI makes besides this one: mbed TLS (built, its
# unit tests, and the e2e interop test of the mbed TLS openvpn with the
# unpatched OpenSSL one in all wrap modes) and --disable-management
# --enable-small (built)
# (the build is the step variant/mbedtls-build of the builds lane)
variant_mbedtls()
{
    timeout --kill-after=10 300 make -C "$top/build/obj/mbedtls/src/tests/unit_tests" check 2>&1 |
        tee /dev/stderr | grep -E '^(PASS|FAIL|ERROR|XPASS): .*_testdriver$' >"$logs/variant-mbedtls.results"
    local rc=${PIPESTATUS[0]}
    cat "$logs/variant-mbedtls.results"
    [ $rc -eq 0 ] && ! grep -qvE '^PASS:' "$logs/variant-mbedtls.results" &&
        grep -q '^PASS: ssl_shortcut_testdriver' "$logs/variant-mbedtls.results" &&
        grep -q '^PASS: oob_testdriver' "$logs/variant-mbedtls.results" || return 1
    TB_BIN="$top/build/bin/openvpn-mbedtls" TB_ROOT="$top/build/testbed-mbedtls" \
        "$top/tests/e2e/t_interop.sh"
}
export -f variant_mbedtls

have_master=0
[ -s "$top/patches/master/series" ] && have_master=1
# the lane of the builds: the sanitizer builds first (the ASan e2e tests
# and the soak wait for them), then the builds that upstream's CI makes
# besides the default one; all at nice 19 beside the tests
lane_start builds
lane_step asan/build 1500 nice -n 19 "$top/scripts/build.sh" asan
[ $have_master = 1 ] &&
    lane_step master/asan/build 1500 nice -n 19 env BASE=master "$top/scripts/build.sh" asan
lane_step soak/prereconnect-build 900 nice -n 19 "$top/scripts/build.sh" prereconnect
lane_step soak/premerge-build 900 nice -n 19 "$top/scripts/build.sh" premerge
lane_step soak/noresend-build 900 nice -n 19 "$top/scripts/build.sh" noresend
lane_step variant/mbedtls-build 900 nice -n 19 "$top/scripts/build.sh" mbedtls
lane_step variant/small 900 nice -n 19 "$top/scripts/build.sh" small
if [ $have_master = 1 ]; then
    lane_step master/cmake        1200 nice -n 19 bash -c master_cmake
    lane_step master/variant/small 900 nice -n 19 bash -c master_small
fi
lane_end

step worktree            60 worktree
step series-check       300 series_check
step style              120 python3 "$top/scripts/style.py"
if [ -z "$filter" ] || [[ unit =~ $filter ]]; then
    # one result per unit test driver, as upstream's harness reports them
    t0=$(date +%s)
    unit_tests >"$logs/unit-tests.log" 2>&1
    urc=$?
    t=$(( $(date +%s) - t0 ))
    n=0 ufail=0
    declare -A seen=() want=()
    mapfile -t expected < <(expected_drivers)
    for drv in "${expected[@]}"; do want[$drv]=1; done
    echo "check: expected drivers: ${expected[*]}" >>"$logs/unit-tests.log"
    # upstream uses automake's serial harness: one "RESULT: driver" line each
    while read -r res drv; do
        n=$((n + 1))
        seen[$drv]=$res
        case $res in
            PASS:) result "unit/$drv" 0 "$logs/unit-tests.log" "-" ;;
            SKIP:) if [ -n "${want[$drv]:-}" ]; then
                       # a driver this build must run may not skip
                       ufail=$((ufail + 1))
                       result "unit/$drv (skipped, but it applies to this build)" 1 "$logs/unit-tests.log" "-"
                   else
                       result "unit/$drv" 77 "$logs/unit-tests.log" "-" "skipped by upstream's harness"
                   fi ;;
            *)     ufail=$((ufail + 1)); result "unit/$drv" 1 "$logs/unit-tests.log" "-" ;;
        esac
    done < <(grep -E '^(PASS|FAIL|XPASS|XFAIL|ERROR|SKIP): [A-Za-z0-9_.-]+_testdriver$' "$logs/unit-tests.log")
    # every driver that applies to this build must have reported
    missing=()
    for drv in "${expected[@]}"; do
        [ -n "${seen[$drv]:-}" ] || missing+=("$drv")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "check: these drivers did not report a result: ${missing[*]}" >>"$logs/unit-tests.log"
        result "unit-tests (no result from: ${missing[*]})" 1 "$logs/unit-tests.log" "$t"
    elif [ $n -eq 0 ] || { [ $urc -ne 0 ] && [ $ufail -eq 0 ]; }; then
        result "unit-tests (build/harness, rc $urc)" 1 "$logs/unit-tests.log" "$t"
    fi
    c_pass=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$logs/unit-tests.log" | awk '{s+=$1} END {print s+0}')
    echo "     (cmocka: ${c_pass:-0} test cases passed in $n drivers, ${t}s)"
fi
if [ $have_master = 1 ]; then
    step master/worktree       60 worktree master
    step master/series-check  300 series_check master
    step master/style         300 env BASE=master python3 "$top/scripts/style.py"
    step master/style-commits 300 env BASE=master "$top/scripts/style-commits.sh"
    step master/unit-tests    700 master_unit
    # a lane beside the rest of the 2.6 steps: the e2e suite against the
    # master build (MASTER_E2E="t_a t_b": only those; the tests of
    # ASAN_E2E run on the ASan build only), those of ASAN_E2E against the
    # ASan+UBSan build, the soak's fixed seeds on it, then the 2.7 series'
    # e2e tests; master's CMake and small builds are in the builds lane
    lane_start master
    for t in ${MASTER_E2E:-$(cd "$top/tests/e2e" && ls t_*.sh | sed 's/\.sh$//')}; do
        [ "$t" = t_cross ] && continue
        asan_covers "$t" && continue
        lane_step "master/e2e/${t#t_}" 600 master_e2e "$t"
    done
    lane_wait master/asan/build
    for t in $ASAN_E2E; do
        lane_step "master/asan/e2e/${t#t_}" 600 after master/asan/build asan_e2e master "$t"
    done
    # the soak's fixed seeds on the master ASan build, against unpatched
    # master (seeds 2254358, 2825446 and 7105061 were found there)
    lane_step master/asan/soak 900 after master/asan/build env SOAK_BIN="$top/build/bin/openvpn-master-asan" \
        SOAK_BASELINE="$top/build/bin/openvpn-master-baseline" \
        SOAK_SERVER_BIN="$top/build/bin/openvpn-master" SOAK_OUT="$top/build/soak-master" \
        "$top/tests/soak/soak.py" --check
    # the 2.7 series in the same lane (S27_E2E: its e2e tests; the whole
    # suite with S27_E2E=all)
    if [ -s "$top/patches/2.7/series" ]; then
        e27=${S27_E2E:-t_interop t_shortcut t_server_probe t_client_probe t_field t_failover t_reconnect}
        [ "$e27" = all ] && e27=$(cd "$top/tests/e2e" && ls t_*.sh | sed 's/\.sh$//' | grep -v '^t_cross$')
        for t in $e27; do
            lane_step "2.7/e2e/${t#t_}" 600 s27_e2e "$t"
        done
    fi
    lane_end
fi

# the 2.7 series: its work tree, series, style and unit tests, and the
# check that its own files are master's (patches/2.7/ALLOWED-DIFFS)
if [ -s "$top/patches/2.7/series" ]; then
    step 2.7/worktree       60 worktree 2.7
    step 2.7/series-check  300 series_check 2.7
    step 2.7/style         300 env BASE=2.7 python3 "$top/scripts/style.py"
    step 2.7/unit-tests    700 s27_unit
    step 2.7/series-diff    60 "$top/scripts/series-diff.sh" "$top/build/openvpn-master" "$top/build/openvpn-2.7"
fi

step upstream/t_lpback  600 upstream_script t_lpback.sh
step upstream/t_cltsrv  600 upstream_script t_cltsrv.sh
step upstream/t_net     300 t_net
step relay              180 make -s -C "$top/testbed/relay" check
step fuzz/oob-codec      420 ci_no_skip env FUZZ_SECONDS="${FUZZ_SECONDS:-30}" "$top/tests/fuzz/run.sh"
# does the fuzzing find bugs: one planted bug per target (about 1 min)
step fuzz/selftest       360 ci_no_skip env FUZZ_SECONDS=40 "$top/tests/fuzz/selftest.sh"
# the e2e suite; the tests of ASAN_E2E run on the ASan build (below) only
for t in "$top"/tests/e2e/t_*.sh; do
    [ -e "$t" ] || continue
    n=$(basename "$t" .sh)
    asan_covers "$n" && continue
    step "e2e/${n#t_}" 600 "$t"
done

# the ASan+UBSan build of the 2.6 series (the builds lane): the e2e tests
# that touch reconnects, memory, failover, hostile replies and the field
# test bed, and the soak below (soak.py takes build/bin/openvpn-asan; in
# CI it refuses to run without)
wait_for asan/build
for t in $ASAN_E2E; do
    step "asan/e2e/${t#t_}" 600 after asan/build asan_e2e 2.6 "$t"
done

# the seeded soak (tests/soak/README.md): the fixed seeds of soak.py's
# CHECK_SEEDS (the scenarios pinned in tests/soak/scenarios/, the comment
# there says what each one found), about 6 minutes
step soak 900 after asan/build "$top/tests/soak/soak.py" --check
# the mbed TLS build (the builds lane): its unit tests and the e2e interop
# test of the mbed TLS openvpn with the unpatched OpenSSL one, all wrap
# modes
wait_for variant/mbedtls-build
step variant/mbedtls    600 after variant/mbedtls-build variant_mbedtls
# the soak's self-test: faults planted in wrappers of the same client (it
# ignores --server-probe, exits by itself after 3 s, starts 6 s late) and
# the series before its reconnect fixes (scripts/build.sh prereconnect)
# and the series before the memory merge (scripts/build.sh premerge)
# and the series with a phase that never resends a probe
# (scripts/build.sh noresend) must each fail a check of the soak on
# their seeds (about 2 minutes)
wait_for soak/prereconnect-build
wait_for soak/premerge-build
wait_for soak/noresend-build
step soak/self-test 420 after soak/noresend-build "$top/tests/soak/self_test.py"

# the master series' fuzz targets and their self-test (while its lane
# runs its e2e tests)
if [ $have_master = 1 ]; then
    step master/fuzz          420 ci_no_skip env FUZZ_SECONDS="${FUZZ_SECONDS_MASTER:-15}" \
        FUZZ_SRC="$top/build/obj/master-patched/src" FUZZ_OUT="$top/build/fuzz-master" \
        "$top/tests/fuzz/run.sh"
    step master/fuzz-selftest 360 ci_no_skip env FUZZ_SECONDS=40 \
        FUZZ_SRC="$top/build/obj/master-patched/src" "$top/tests/fuzz/selftest.sh"
fi

# the lanes: the master and 2.7 e2e tests, the builds
lane_collect master
lane_collect builds


echo
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
[ ${#warned[@]} -gt 0 ] &&
    echo "WARNING: passed only with CHECK_ALLOW_DIRTY=1: ${warned[*]} (these results are not those of patches/)"
# in CI a skip is a failure, except upstream's t_net (the kernel has no
# dummy link type here), which tests nothing of the series
if [ $in_ci = 1 ]; then
    for f in "$logs"/*.log.rc; do
        [ -e "$f" ] || continue
        read -r rc _ <"$f"
        n=$(basename "$f" .log.rc)
        if [ "$rc" = 77 ] && [ "$n" != upstream_t_net ]; then
            echo "check: CI=true: $n was skipped; a skip of the product's own tests fails CI"
            fail=$((fail + 1))
        fi
    done
fi
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
