#!/usr/bin/env bash
# rustc and rustfmt for the SDK tests in tests/sdk/, which compile the generated Rust table with `rustc --test`
# and check its formatting. Usually on the machine already (through rustup); when they are not, Debian's packages
# are installed. Safe to run twice, and fails loudly when the tools still cannot be run.
set -euo pipefail
export PATH="$PATH:${CARGO_HOME:-$HOME/.cargo}/bin"

if ! command -v rustc >/dev/null || ! command -v rustfmt >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    # Other setup steps may hold the package lock for a while; wait for it rather than fail.
    apt-get -o DPkg::Lock::Timeout=600 update
    apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends rustc rustfmt
fi
echo "rust: $(rustc --version), $(rustfmt --version)"
