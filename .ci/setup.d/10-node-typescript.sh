#!/usr/bin/env bash
# The TypeScript compiler for the SDK tests in tests/sdk/, pinned in tools/typescript/package-lock.json and
# installed with `npm ci`. Node usually comes with the machine; when it does not, Debian's nodejs and npm are
# installed first. Safe to run twice: `npm ci` replaces tools/typescript/node_modules with exactly what the lock
# file names. Fails loudly when the install does not produce a working `tsc`.
set -euo pipefail
cd "$(dirname "$0")/../../tools/typescript"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    # Other setup steps may hold the package lock for a while; wait for it rather than fail.
    apt-get -o DPkg::Lock::Timeout=600 update
    apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends nodejs npm
fi
echo "node-typescript: node $(node --version), npm $(npm --version)"
npm ci --no-audit --no-fund
./node_modules/.bin/tsc --version
