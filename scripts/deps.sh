#!/bin/bash
# Install what building and testing the series needs, when missing.
# Needs root (or sudo) only if something is missing.
set -euo pipefail

pkgs=(autoconf automake libtool pkg-config make gcc
      libssl-dev liblzo2-dev liblz4-dev libcmocka-dev libcap-ng-dev
      libnl-genl-3-dev libpam0g-dev python3-docutils python3 dpkg-dev
      git rsync uncrustify iproute2 procps psmisc ca-certificates
      clang openssl
      # the e2e tests: wrapped probes (tests/e2e/spec_tools.py, tls-crypt
      # and tls-crypt-v2) import python3-cryptography, the rest of their
      # python (probe_tool.py, spec_tools.py, hostile_responder.py,
      # testbed/pktgen.py) only the standard library; unshare, setpriv and
      # flock (testbed/lib.sh, t_resolve.sh) come from util-linux
      python3-cryptography util-linux
      # the mbedTLS variant (scripts/build.sh mbedtls), upstream's CI
      # builds it too; libfaketime for the wall-clock jump in t_clock.sh
      libmbedtls-dev faketime libfaketime
      # the master series: CMake (npm for clang-format 21.1.8, see below)
      cmake
      # the field test bed (testbed/field.sh): the router's NAT and its
      # conntrack flush, and a ping to check the paths
      iptables conntrack iputils-ping)
# npm (scripts/clang-format.sh installs clang-format-node@2.0.8 with it):
# the machine's Node.js may ship it (nodejs from elsewhere conflicts with
# Debian's npm package); only without an npm command is Debian's installed
command -v npm >/dev/null || pkgs+=(npm)

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
for c in uncrustify python3 git rsync unshare; do
    command -v "$c" >/dev/null || { echo "deps: '$c' still missing after the install" >&2; exit 1; }
done
python3 -c 'import cryptography' 2>/dev/null ||
    { echo "deps: python3 cannot import cryptography after the install (python3-cryptography)" >&2; exit 1; }
