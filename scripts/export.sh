#!/bin/bash
# Write upstream..HEAD of a base's work tree back to its patches/NAME/
# (git format-patch, stable output) and rewrite patches/NAME/series.
#   [BASE=NAME] scripts/export.sh      (scripts/base.sh; default 2.6)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=base.sh
. "$top/scripts/base.sh"
base_load
wt=$WT
[ -d "$wt/.git" ] || { echo "export: no work tree at $wt (make tree)" >&2; exit 1; }
if ! git -C "$wt" diff --quiet HEAD --; then
    echo "export: warning: $wt has uncommitted changes; they are not exported" >&2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# --no-signature/--zero-commit/--no-stat-free: output depends only on the commits
git -C "$wt" -c core.abbrev=12 -c diff.noprefix=false -c format.signature= \
    format-patch -q --no-signature --zero-commit --no-numbered-files \
    --full-index -N -o "$tmp" upstream..HEAD >/dev/null
# patches are named NNNN-subject.patch; keep the leading number
mkdir -p "$PATCHES"
changed=0
for f in "$tmp"/*.patch; do
    [ -e "$f" ] || continue
    b=$(basename "$f")
    if ! cmp -s "$f" "$PATCHES/$b"; then
        cp "$f" "$PATCHES/$b"
        changed=$((changed + 1))
    fi
done
# drop patches that are no longer in the series
for f in "$PATCHES"/*.patch; do
    [ -e "$f" ] || continue
    b=$(basename "$f")
    if [ ! -e "$tmp/$b" ]; then
        rm -f "$f"
        changed=$((changed + 1))
    fi
done
(cd "$tmp" && ls -1 -- *.patch 2>/dev/null || true) > "$tmp/series.new"
if ! cmp -s "$tmp/series.new" "$PATCHES/series"; then
    cp "$tmp/series.new" "$PATCHES/series"
    changed=$((changed + 1))
fi
n=$(grep -c . "$PATCHES/series" || true)
echo "export: $n patch(es) in patches/$BASE_NAME/, $changed file(s) changed"
