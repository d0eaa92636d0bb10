#!/bin/bash
# Apply a base's patches/NAME/ onto a fresh copy of the base with git am,
# and fail if its work tree holds commits that are not exported (or
# exported differently).
#   [BASE=NAME] scripts/series-check.sh      (scripts/base.sh; default 2.6)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=base.sh
. "$top/scripts/base.sh"
base_load
wt=$WT
rel=${wt#"$top"/}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$top/scripts/make-tree.sh" "$tmp/tree" >/dev/null
applied=$(git -C "$tmp/tree" rev-list --count upstream..HEAD)
listed=$(grep -c . "$PATCHES/series" 2>/dev/null || true)
if [ "$applied" != "$listed" ]; then
    echo "series-check: $listed patch(es) listed, $applied applied" >&2
    exit 1
fi
echo "series-check: $applied patch(es) apply with git am onto the base ($BASE_NAME: $BASE_KIND $BASE_PIN)"
# no left-overs of a merge or of patch(1) in any commit of the series
stray=$(git -C "$tmp/tree" log --format= --name-only --diff-filter=AM upstream..HEAD |
    grep -E '\.(orig|rej|bak|swp)$|~$' | sort -u || true)
if [ -n "$stray" ]; then
    echo "series-check: the series adds files that are no source:" $stray >&2
    exit 1
fi
if [ -d "$wt/.git" ]; then
    a=$(git -C "$tmp/tree" rev-parse 'HEAD^{tree}')
    b=$(git -C "$wt" rev-parse 'HEAD^{tree}')
    if [ "$a" != "$b" ]; then
        echo "series-check: $rel HEAD differs from patches/$BASE_NAME/: run 'make export'" >&2
        git -C "$wt" log --oneline upstream..HEAD >&2
        exit 1
    fi
    if ! git -C "$wt" diff --quiet HEAD --; then
        echo "series-check: note: $rel has uncommitted edits (not part of the series)"
    fi
    echo "series-check: $rel matches patches/$BASE_NAME/"
fi
