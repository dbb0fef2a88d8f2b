#!/usr/bin/env bash
# Headless Chromium for the browser tests in tests/site/ (driven through the playwright Python package, which is
# pointed at this binary and never downloads a browser of its own). Safe to run twice: it does nothing when
# Chromium is already there, and fails loudly when it cannot be installed.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
    echo "chromium: already installed ($(/usr/bin/chromium --version 2>/dev/null || echo 'version unknown'))"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
# Other setup steps may hold the package lock for a while; wait for it rather than fail.
apt-get -o DPkg::Lock::Timeout=600 update
apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends chromium fonts-liberation
/usr/bin/chromium --version
