#!/bin/bash
# Create the work tree of a base (scripts/base.sh; BASE=2.6 by default:
# build/openvpn), or DIR: a git work tree whose first commit is the pinned
# base (tag "upstream"), followed by the base's patches/NAME/ applied with
# git am in patches/NAME/series order.
#   debian base: the source package as dpkg-source -x leaves it, one commit
#   git base:    a clone of the pinned commit (branch main)
#
#   [BASE=NAME] scripts/make-tree.sh [DIR] [--base-only]
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=base.sh
. "$top/scripts/base.sh"
base_load
dest=${1:-$WT}
mode=${2:-}
cache="${CACHE_DIR:-$top/build/src}"

base_fetch

if [ -e "$dest" ]; then
    echo "make-tree: $dest exists; remove it first (or use 'make retree')" >&2
    exit 1
fi
mkdir -p "$(dirname "$dest")"

case $BASE_KIND in
debian)
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    (cd "$tmp" && dpkg-source --no-check -x "$cache/${BASE_REF}_${BASE_PIN}.dsc" base >/dev/null)
    rm -rf "$tmp/base/.pc"
    mv "$tmp/base" "$dest"

    cd "$dest"
    export GIT_AUTHOR_NAME="OpenVPN base" GIT_AUTHOR_EMAIL="base@invalid"
    export GIT_COMMITTER_NAME="OpenVPN base" GIT_COMMITTER_EMAIL="base@invalid"
    export GIT_AUTHOR_DATE="2025-04-02T00:00:00Z" GIT_COMMITTER_DATE="2025-04-02T00:00:00Z"
    git init -q -b main .
    git config core.autocrlf false
    git add -A -f .
    git commit -q -m "openvpn $BASE_PIN (Debian source, patches applied)"
    git tag upstream
    unset GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL \
          GIT_AUTHOR_DATE GIT_COMMITTER_DATE
    ;;
git)
    git clone -q --no-checkout "$cache/openvpn.git" "$dest"
    cd "$dest"
    git config core.autocrlf false
    git checkout -q -b main "$BASE_PIN"
    git tag upstream
    git remote remove origin
    ;;
esac
# build products must not show up as changes
cat >> .git/info/exclude <<'EXC'
/build-*/
*.o
*.lo
*.la
.deps/
.libs/
EXC

[ "$mode" = "--base-only" ] && exit 0

if [ -s "$PATCHES/series" ]; then
    git config user.name >/dev/null || git config user.name "oob-server-probe"
    git config user.email >/dev/null || git config user.email "oob@invalid"
    while read -r p; do
        case "$p" in ''|'#'*) continue ;; esac
        git am -q --committer-date-is-author-date "$PATCHES/$p"
    done < "$PATCHES/series"
    echo "make-tree: $(git rev-list --count upstream..HEAD) patch(es) applied in $dest"
fi
