#!/bin/bash
# Create build/openvpn (or $1): a git work tree whose first commit is the
# pinned base as dpkg-source -x leaves it (tag "upstream"), followed by
# patches/ applied with git am in patches/series order.
#
#   scripts/make-tree.sh [DIR] [--base-only]
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$top/build/openvpn}
mode=${2:-}
cache="${CACHE_DIR:-$top/build/src}"

"$top/scripts/fetch-base.sh"

if [ -e "$dest" ]; then
    echo "make-tree: $dest exists; remove it first (or use 'make retree')" >&2
    exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && dpkg-source --no-check -x "$cache/openvpn_2.6.14-0+deb12u2.dsc" base >/dev/null)
rm -rf "$tmp/base/.pc"
mkdir -p "$(dirname "$dest")"
mv "$tmp/base" "$dest"

cd "$dest"
export GIT_AUTHOR_NAME="OpenVPN base" GIT_AUTHOR_EMAIL="base@invalid"
export GIT_COMMITTER_NAME="OpenVPN base" GIT_COMMITTER_EMAIL="base@invalid"
export GIT_AUTHOR_DATE="2025-04-02T00:00:00Z" GIT_COMMITTER_DATE="2025-04-02T00:00:00Z"
git init -q -b main .
git config core.autocrlf false
# build products must not show up as changes
cat >> .git/info/exclude <<'EXC'
/build-*/
*.o
*.lo
*.la
.deps/
.libs/
EXC
git add -A -f .
git commit -q -m "openvpn 2.6.14-0+deb12u2 (Debian source, patches applied)"
git tag upstream
unset GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL \
      GIT_AUTHOR_DATE GIT_COMMITTER_DATE

[ "$mode" = "--base-only" ] && exit 0

if [ -s "$top/patches/series" ]; then
    git config user.name >/dev/null || git config user.name "oob-server-probe"
    git config user.email >/dev/null || git config user.email "oob@invalid"
    while read -r p; do
        case "$p" in ''|'#'*) continue ;; esac
        git am -q --committer-date-is-author-date "$top/patches/$p"
    done < "$top/patches/series"
    echo "make-tree: $(git rev-list --count upstream..HEAD) patch(es) applied in $dest"
fi
