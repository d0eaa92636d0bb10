#!/bin/bash
# Make a pinned upstream commit available in the local mirror
# build/src/openvpn.git, for a base of kind "git" (scripts/base.sh).
#
#   scripts/fetch-git.sh COMMIT
#
# Where the commits come from (the first that is set or there):
#   OPENVPN_GIT=URL-or-bundle   a git URL or a git bundle file
#   ../shared/upstream/openvpn.bundle   the bundle beside the repository
#                               (CI and machines without network)
#   upstream's public repository (OPENVPN_GIT_URL, default below)
# A commit id is a hash of the whole tree, so checking out the full id is a
# verified fetch; a commit the source does not have fails with a message.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
commit=${1:?usage: fetch-git.sh COMMIT}
mirror="${CACHE_DIR:-$top/build/src}/openvpn.git"
bundle="$top/../shared/upstream/openvpn.bundle"
: "${OPENVPN_GIT_URL:=https://github.com/OpenVPN/openvpn.git}"

have() { git -C "$mirror" cat-file -e "$commit^{commit}" 2>/dev/null; }

if [ -d "$mirror" ] && have; then
    exit 0
fi

if [ -n "${OPENVPN_GIT:-}" ]; then
    src=$OPENVPN_GIT
elif [ -f "$bundle" ]; then
    src=$(cd "$(dirname "$bundle")" && pwd)/$(basename "$bundle")
else
    src=$OPENVPN_GIT_URL
fi

if [ -f "$src" ]; then
    git bundle verify "$src" >/dev/null 2>&1 ||
        { echo "fetch-git: $src is not a valid git bundle" >&2; exit 1; }
fi
if [ ! -d "$mirror" ]; then
    mkdir -p "$(dirname "$mirror")"
    git init -q --bare "$mirror"
fi
echo "fetch-git: fetching from $src"
git -C "$mirror" fetch -q "$src" '+refs/heads/*:refs/remotes/src/*' '+refs/tags/*:refs/tags/*' ||
    { echo "fetch-git: cannot fetch from $src (set OPENVPN_GIT to a git URL or bundle)" >&2; exit 1; }
if ! have; then
    echo "fetch-git: $src does not have commit $commit (the pinned base); set OPENVPN_GIT to a source that has it" >&2
    exit 1
fi
echo "fetch-git: $commit is there"
