#!/bin/bash
# Fetch the pinned base of the series: Debian's openvpn 2.6.14-0+deb12u2
# source package, verified by sha256, cached in build/src/.
#
# Without apt, download the three files yourself and point OPENVPN_SRC_DIR
# at the directory that holds them:
#   make tree OPENVPN_SRC_DIR=/path/to/dir
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cache="${CACHE_DIR:-$top/build/src}"
version="2.6.14-0+deb12u2"
dsc="openvpn_${version}.dsc"

declare -A sums=(
    ["openvpn_2.6.14-0+deb12u2.dsc"]=040bba014900f3ff5417c9e049a57b5d36a7e969d2f47933a9b1728e804c76a0
    ["openvpn_2.6.14.orig.tar.gz"]=9eb6a6618352f9e7b771a9d38ae1631b5edfeed6d40233e243e602ddf2195e7a
    ["openvpn_2.6.14-0+deb12u2.debian.tar.xz"]=8024bac4a098e54c9af32a4a818a1b8557954793973a618675e1cdd9fbcf387b
)

verify()
{
    local dir=$1 f
    for f in "${!sums[@]}"; do
        [ -f "$dir/$f" ] || return 1
        echo "${sums[$f]}  $dir/$f" | sha256sum --quiet -c - >/dev/null 2>&1 || {
            echo "fetch-base: checksum MISMATCH for $dir/$f" >&2
            return 2
        }
    done
    return 0
}

mkdir -p "$cache"

if verify "$cache"; then
    exit 0
fi

if [ -n "${OPENVPN_SRC_DIR:-}" ]; then
    rc=0; verify "$OPENVPN_SRC_DIR" || rc=$?
    if [ $rc -ne 0 ]; then
        echo "fetch-base: $OPENVPN_SRC_DIR does not hold the pinned files with the right checksums:" >&2
        for f in "${!sums[@]}"; do echo "  $f  sha256 ${sums[$f]}" >&2; done
        exit 1
    fi
    for f in "${!sums[@]}"; do cp "$OPENVPN_SRC_DIR/$f" "$cache/"; done
    echo "fetch-base: using local copy from $OPENVPN_SRC_DIR"
    exit 0
fi

command -v apt-get >/dev/null || {
    echo "fetch-base: apt-get not found. Download $dsc and its two tarballs" >&2
    echo "and run again with OPENVPN_SRC_DIR=/dir/with/the/files" >&2
    exit 1
}

# A private apt configuration: a deb-src list derived from the machine's
# own deb sources, with its own state and cache directories, so the
# system's apt setup is left untouched.
apt="$top/build/apt"
rm -rf "$apt"
mkdir -p "$apt/etc/sources.list.d" "$apt/etc/preferences.d" "$apt/lists/partial" \
    "$apt/cache/archives/partial"
: > "$apt/etc/sources.list"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f" >> "$apt/etc/sources.list"
done
for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # deb822: turn "Types: deb" into "Types: deb-src"
    sed -e 's/^Types:.*/Types: deb-src/' "$f" > "$apt/etc/sources.list.d/$(basename "$f")"
done

aptopts=(-o "Dir::Etc::SourceList=$apt/etc/sources.list"
         -o "Dir::Etc::SourceParts=$apt/etc/sources.list.d"
         -o "Dir::Etc::Preferences=$apt/etc/preferences"
         -o "Dir::Etc::PreferencesParts=$apt/etc/preferences.d"
         -o "Dir::State::Lists=$apt/lists"
         -o "Dir::Cache=$apt/cache"
         -o "Debug::NoLocking=1")

echo "fetch-base: updating private deb-src lists"
apt-get "${aptopts[@]}" -q update >"$apt/update.log" 2>&1 || {
    echo "fetch-base: apt-get update failed, see $apt/update.log" >&2
    exit 1
}
echo "fetch-base: downloading openvpn=$version"
if ! (cd "$cache" && apt-get "${aptopts[@]}" -q source --download-only \
        "openvpn=$version") >"$apt/source.log" 2>&1; then
    echo "fetch-base: could not download openvpn=$version (see $apt/source.log)." >&2
    echo "The pinned version may have left the archive. Nothing else will be built." >&2
    echo "Download these files by hand (e.g. from snapshot.debian.org):" >&2
    for f in "${!sums[@]}"; do echo "  $f  sha256 ${sums[$f]}" >&2; done
    echo "and run again with OPENVPN_SRC_DIR=/dir/with/the/files" >&2
    exit 1
fi

rc=0; verify "$cache" || rc=$?
if [ $rc -ne 0 ]; then
    echo "fetch-base: downloaded files do not match the pinned checksums; refusing to build" >&2
    exit 1
fi
echo "fetch-base: verified $version"
