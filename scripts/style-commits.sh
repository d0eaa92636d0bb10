#!/bin/bash
# clang-format 21.1.8 (scripts/clang-format.sh) on every C file that each
# commit of a series adds or changes, whole, as of that commit: upstream
# reformatted master with its .clang-format, so a file the series touches
# must stay clean at every commit, not only at the end (style.py checks
# the end).  For bases with a .clang-format (master); 2.6 uses uncrustify
# on the series' lines (style.py).
#   [BASE=NAME] scripts/style-commits.sh
# Exit 0 clean, 1 a file is not clean or the tools are missing.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=base.sh
. "$top/scripts/base.sh"
base_load || exit 1
wt=$WT
if [ ! -f "$wt/.clang-format" ]; then
    echo "style-commits: $wt has no .clang-format (base $BASE_NAME): nothing to do"
    exit 0
fi
"$top/scripts/clang-format.sh" --version || { echo "FAIL: no clang-format 21.1.8"; exit 1; }
bad=0 n=0 commits=0
for c in $(git -C "$wt" rev-list --reverse upstream..HEAD); do
    commits=$((commits + 1))
    subj=$(git -C "$wt" log -1 --format=%s "$c")
    while read -r f; do
        [ -n "$f" ] || continue
        n=$((n + 1))
        if ! git -C "$wt" show "$c:$f" |
            (cd "$wt" && "$top/scripts/clang-format.sh" --style=file --assume-filename="$f") |
            cmp -s - <(git -C "$wt" show "$c:$f"); then
            echo "NOT CLEAN: $f at '$subj'"
            git -C "$wt" show "$c:$f" |
                (cd "$wt" && "$top/scripts/clang-format.sh" --style=file --assume-filename="$f") |
                diff -u <(git -C "$wt" show "$c:$f") - | head -n 20
            bad=$((bad + 1))
        fi
    done < <(git -C "$wt" diff-tree --no-commit-id --name-only -r --diff-filter=AM "$c" | grep -E '\.(c|h)$')
done
echo "style-commits: $commits commits, $n file versions, $bad not clean"
[ "$bad" -eq 0 ] && [ "$commits" -gt 0 ]
