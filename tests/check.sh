#!/bin/bash
# Run every test of the project against the builds in build/:
#   upstream's unit tests (all of them, with the series' own) and
#   t_lpback.sh / t_cltsrv.sh / t_net.sh, the series check, the style
#   check, the relay's tests and the end-to-end tests in tests/e2e/.
# Prints PASS/FAIL/SKIP per test and a closing "N passed, N failed" line.
#
#   tests/check.sh [-k PATTERN]   only steps whose name matches PATTERN
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
obj="$top/build/obj/patched/src"
logs="$top/build/check"
filter=""
[ "${1:-}" = "-k" ] && filter=${2:-}
rm -rf "$logs"
mkdir -p "$logs"

pass=0 fail=0 skip=0
failed=()

result()
{
    local name=$1 rc=$2 log=$3 t=$4
    case $rc in
        0)  pass=$((pass + 1)); printf 'PASS %-40s %5ss\n' "$name" "$t" ;;
        77) skip=$((skip + 1))
            reason=$(grep -m1 -iE 'skip' "$log" | sed 's/^SKIP[: ]*//' | cut -c1-160)
            printf 'SKIP %-40s %s\n' "$name" "${reason:-see $log}" ;;
        *)  fail=$((fail + 1)); failed+=("$name")
            printf 'FAIL %-40s %5ss (rc %s, log %s)\n' "$name" "$t" "$rc" "${log#"$top"/}"
            tail -n 25 "$log" | sed 's/^/    | /' ;;
    esac
}

# step NAME TIMEOUT CMD...: run one test, bounded in time
step()
{
    local name=$1 limit=$2; shift 2
    if [ -n "$filter" ] && [[ ! "$name" =~ $filter ]]; then return; fi
    local log="$logs/${name//\//_}.log" t0 rc
    t0=$(date +%s)
    # bash -c so that exported shell functions can be steps too
    timeout --kill-after=10 "$limit" bash -c '"$@"' step "$@" >"$log" 2>&1 </dev/null
    rc=$?
    [ $rc -eq 124 ] && echo "TIMEOUT after ${limit}s" >>"$log"
    result "$name" $rc "$log" $(( $(date +%s) - t0 ))
}

unit_tests()
{
    # upstream's harness, every driver it knows (the series' test_oob too)
    make -C "$obj/tests/unit_tests" check 2>&1
    local rc=$?
    return $rc
}

upstream_script()
{
    cd "$obj/tests" && top_srcdir=.. srcdir=. top_builddir=.. "./$1"
}

t_net()
{
    if [ "$(id -u)" -ne 0 ]; then
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

export top obj
export -f upstream_script t_net

if [ ! -x "$obj/src/openvpn/openvpn" ]; then
    echo "check: no build in $obj; run 'make check' (it builds first)" >&2
    exit 2
fi

step series-check       300 "$top/scripts/series-check.sh"
step style              120 python3 "$top/scripts/style.py"
if [ -z "$filter" ] || [[ unit =~ $filter ]]; then
    # one result per unit test driver, as upstream's harness reports them
    t0=$(date +%s)
    unit_tests >"$logs/unit-tests.log" 2>&1
    urc=$?
    t=$(( $(date +%s) - t0 ))
    n=0
    # upstream uses automake's serial harness: one "RESULT: driver" line each
    while read -r res drv; do
        n=$((n + 1))
        case $res in
            PASS:) result "unit/$drv" 0 "$logs/unit-tests.log" "-" ;;
            SKIP:) result "unit/$drv" 77 "$logs/unit-tests.log" "-" ;;
            *)     result "unit/$drv" 1 "$logs/unit-tests.log" "-" ;;
        esac
    done < <(grep -E '^(PASS|FAIL|XPASS|ERROR|SKIP): [A-Za-z0-9_.-]+_testdriver$' "$logs/unit-tests.log")
    if [ $n -eq 0 ] || { [ $urc -ne 0 ] && ! grep -qE '^(FAIL|ERROR|XPASS): ' "$logs/unit-tests.log"; }; then
        result "unit-tests (build/harness)" 1 "$logs/unit-tests.log" "$t"
    fi
    c_pass=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$logs/unit-tests.log" | awk '{s+=$1} END {print s+0}')
    echo "     (cmocka: ${c_pass:-0} test cases passed in $n drivers, ${t}s)"
fi
step upstream/t_lpback  600 upstream_script t_lpback.sh
step upstream/t_cltsrv  600 upstream_script t_cltsrv.sh
step upstream/t_net     300 t_net
step relay              180 make -s -C "$top/testbed/relay" check
step fuzz/oob-codec      300 env FUZZ_SECONDS="${FUZZ_SECONDS:-30}" "$top/tests/fuzz/run.sh"
for t in "$top"/tests/e2e/t_*.sh; do
    [ -e "$t" ] || continue
    n=$(basename "$t" .sh)
    step "e2e/${n#t_}" 600 "$t"
done

echo
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
