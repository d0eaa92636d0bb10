#!/bin/bash
# Test-suite for udprelay; the tests themselves are in test_relay.py
# (python3 stdlib only). Used by `make -C testbed/relay check`.
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${UDPRELAY:=$here/udprelay}"
export UDPRELAY
child=""
trap '[ -n "$child" ] && kill -TERM "$child" 2>/dev/null; wait; exit 130' INT TERM
python3 "$here/test_relay.py" "$@" &
child=$!
wait "$child"
rc=$?
exit $rc
