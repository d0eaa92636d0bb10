#!/bin/bash
# Install what building and testing the series needs, when missing.
# Needs root (or sudo) only if something is missing.
set -euo pipefail

pkgs=(autoconf automake libtool pkg-config make gcc
      libssl-dev liblzo2-dev liblz4-dev libcmocka-dev libcap-ng-dev
      libnl-genl-3-dev libpam0g-dev python3-docutils python3 dpkg-dev
      git rsync uncrustify iproute2 procps psmisc ca-certificates
      clang openssl)

missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
        || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "deps: need root to install: ${missing[*]}" >&2; exit 1; }
    sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get -q update >/dev/null
$sudo apt-get -y -q install --no-install-recommends "${missing[@]}" >/dev/null
# what the checks run directly must be there now (style.py fails without
# uncrustify instead of skipping)
for c in uncrustify python3 git rsync; do
    command -v "$c" >/dev/null || { echo "deps: '$c' still missing after the install" >&2; exit 1; }
done
