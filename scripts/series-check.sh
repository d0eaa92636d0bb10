#!/bin/bash
# Apply patches/ onto a fresh copy of the base with git am, and fail if the
# work tree holds commits that are not exported (or exported differently).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
wt="$top/build/openvpn"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$top/scripts/make-tree.sh" "$tmp/tree" >/dev/null
applied=$(git -C "$tmp/tree" rev-list --count upstream..HEAD)
listed=$(grep -c . "$top/patches/series" 2>/dev/null || true)
if [ "$applied" != "$listed" ]; then
    echo "series-check: $listed patch(es) listed, $applied applied" >&2
    exit 1
fi
echo "series-check: $applied patch(es) apply with git am onto the base"
if [ -d "$wt/.git" ]; then
    a=$(git -C "$tmp/tree" rev-parse 'HEAD^{tree}')
    b=$(git -C "$wt" rev-parse 'HEAD^{tree}')
    if [ "$a" != "$b" ]; then
        echo "series-check: build/openvpn HEAD differs from patches/: run 'make export'" >&2
        git -C "$wt" log --oneline upstream..HEAD >&2
        exit 1
    fi
    if ! git -C "$wt" diff --quiet HEAD --; then
        echo "series-check: note: build/openvpn has uncommitted edits (not part of the series)"
    fi
    echo "series-check: build/openvpn matches patches/"
fi
