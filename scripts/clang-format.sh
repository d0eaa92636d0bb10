#!/bin/bash
# The clang-format that upstream OpenVPN master pins (21.1.8, through its
# pre-commit configuration): the npm package clang-format-node@2.0.8 ships
# exactly that binary.  Installed once into build/tools/ (npm, from
# scripts/deps.sh), then run with the arguments given.
#   scripts/clang-format.sh --version
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
tools="$top/build/tools"
want=21.1.8
bin="$tools/node_modules/clang-format-node/bin/cfn-linux-x64/clang-format"
if [ ! -x "$bin" ]; then
    command -v npm >/dev/null || { echo "clang-format.sh: npm is missing (make deps)" >&2; exit 1; }
    mkdir -p "$tools"
    npm install --silent --no-audit --no-fund --prefix "$tools" clang-format-node@2.0.8 >&2 ||
        { echo "clang-format.sh: npm install clang-format-node@2.0.8 failed" >&2; exit 1; }
    chmod +x "$bin" 2>/dev/null || true
fi
"$bin" --version | grep -q "version $want" ||
    { echo "clang-format.sh: $bin is not clang-format $want" >&2; exit 1; }
exec "$bin" "$@"
