#!/bin/bash
# Compare the series' own files (the files the series adds to upstream:
# src/openvpn/oob*.[ch], tests/unit_tests/openvpn/test_oob*.c, ...)
# between the HEADs of two work trees, e.g. the master series and a
# backport of it.  Prints each file that differs (or is missing on one
# side) and exits non-zero if any of them is not listed in the allow-list.
#
#   scripts/series-diff.sh [TREE_A [TREE_B [ALLOWED]]]
#
# TREE_A, TREE_B   git work trees made by scripts/make-tree.sh (tag
#                  "upstream" = their base); default build/openvpn-master
#                  and build/openvpn-2.7
# ALLOWED          the allow-list, default patches/NAME/ALLOWED-DIFFS where
#                  TREE_B is build/openvpn-NAME: one path per line followed
#                  by the reason it may differ; '#' starts a comment.  A
#                  missing allow-list allows nothing.
#
# The series' hunks in upstream files are compared too (below).
#
# "The series' own files" are the files that the HEAD of either tree has
# and neither base ("upstream" tag) has: the union of the files added
# between upstream and HEAD in either tree (git diff --diff-filter=A),
# less the files the other tree's base already has (so upstream commits
# backported into a series, e.g. siphash.c on v2.7.6, are upstream's and
# not compared), so a file one series adds and the other lacks shows up
# as differing.  Reads the two
# trees only (git rev-parse/diff on their HEADs); uncommitted edits are not
# compared.  Exit 0 no unallowed differences, 1 unallowed differences,
# 2 usage or a tree that is not there.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
a=${1:-$top/build/openvpn-master}
b=${2:-$top/build/openvpn-2.7}
if [ $# -ge 3 ]; then
    allowed=$3
else
    name=$(basename "$b")
    name=${name#openvpn-}
    allowed=$top/patches/$name/ALLOWED-DIFFS
fi
for t in "$a" "$b"; do
    if ! git -C "$t" rev-parse -q --verify 'upstream^{commit}' >/dev/null 2>&1; then
        echo "series-diff: $t is not a work tree with an 'upstream' tag (scripts/make-tree.sh)" >&2
        exit 2
    fi
done

# paths from the allow-list (first field of each non-comment line)
declare -A allow=()
if [ -f "$allowed" ]; then
    while read -r p _; do
        allow[$p]=1
    done < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$allowed")
fi

added() { git -C "$1" diff --no-renames --diff-filter=A --name-only upstream HEAD --; }
in_base() { git -C "$1" cat-file -e "upstream:$2" 2>/dev/null; }
blob() { git -C "$1" rev-parse -q --verify "HEAD:$2" 2>/dev/null || echo missing; }

n=0 bad=0
# verdict KEY WHAT: a difference, allowed when the allow-list has KEY
verdict() {
    if [ -n "${allow[$1]:-}" ]; then
        echo "allowed  $1 ($2)"
    else
        echo "DIFFERS  $1 ($2)"
        bad=$((bad + 1))
    fi
}
while read -r f; do
    [ -n "$f" ] || continue
    in_base "$a" "$f" && continue
    in_base "$b" "$f" && continue
    n=$((n + 1))
    x=$(blob "$a" "$f")
    y=$(blob "$b" "$f")
    [ "$x" = "$y" ] && continue
    what=differs
    [ "$x" = missing ] && what="missing in $a"
    [ "$y" = missing ] && what="missing in $b"
    verdict "$f" "$what"
done < <({ added "$a"; added "$b"; } | sort -u)

# The series' hunks in upstream files: for each file that both bases have
# and the series changes in either tree, the lines the series removes and
# adds (git diff -U0 upstream HEAD, without the hunk headers: line numbers
# and context differ between bases), compared in order.  A file whose
# hunks may differ is listed in the allow-list as "hunks:PATH reason".
# Upstream commits a backport carries before the series (v2.7.6 takes
# master's SipHash cookie and send_standalone_reply()) are its base here:
# in each tree the series starts at the commit whose subject is that of
# TREE_A's first commit, so only the series' own hunks are compared.
first=$(git -C "$a" log --reverse --format=%s upstream..HEAD | sed -n 1p)
own_base() {
    local h s
    while IFS=$'\t' read -r h s; do
        [ "$s" = "$first" ] && { git -C "$1" rev-parse "$h^"; return; }
    done < <(git -C "$1" log --reverse --format='%H%x09%s' upstream..HEAD)
    git -C "$1" rev-parse upstream
}
declare -A base=([$a]=$(own_base "$a") [$b]=$(own_base "$b"))
hunks() {
    git -C "$1" diff --no-renames -U0 "${base[$1]}" HEAD -- "$2" |
        grep -E '^[-+]' | grep -vE '^(\+\+\+|---) ' || true
}
modified() { git -C "$1" diff --no-renames --diff-filter=M --name-only "${base[$1]}" HEAD --; }
m=0
while read -r f; do
    [ -n "$f" ] || continue
    in_base "$a" "$f" && in_base "$b" "$f" || continue
    m=$((m + 1))
    [ "$(hunks "$a" "$f")" = "$(hunks "$b" "$f")" ] && continue
    what="hunks differ"
    [ -z "$(hunks "$a" "$f")" ] && what="not changed in $a"
    [ -z "$(hunks "$b" "$f")" ] && what="not changed in $b"
    verdict "hunks:$f" "$what"
done < <({ modified "$a"; modified "$b"; } | sort -u)

echo "series-diff: $n file(s) the series add, $m upstream file(s) it changes, $bad unallowed difference(s) (allow-list: ${allowed#"$top"/})"
[ "$bad" -eq 0 ]
