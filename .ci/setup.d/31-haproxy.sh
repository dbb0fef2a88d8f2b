#!/usr/bin/env bash
# HAProxy for the cluster tests (runtime/tests/test_cluster*.py) and `python -m acp_v2_runtime.cluster`: Debian's
# package, the 2.6 long-term branch the cluster's configuration is written for. The cluster starts its own haproxy
# processes; the package's system service is not used. Safe to run twice: an installed 2.6 is left as it is. Fails
# loudly when the package cannot be installed or when haproxy cannot start and serve a request.
set -euo pipefail

SERIES="2.6"
if ! command -v haproxy >/dev/null 2>&1 || ! haproxy -v | grep -q "version $SERIES\."; then
    export DEBIAN_FRONTEND=noninteractive
    # Other setup steps may hold the package lock for a while; wait for it rather than fail.
    apt-get -o DPkg::Lock::Timeout=600 update -qq
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "haproxy=$SERIES.*" >/dev/null
fi

# Prove it starts: a throwaway proxy on a free loopback port that answers its own monitor URI.
WORK="$(mktemp -d)"
trap 'kill "${PID:-0}" 2>/dev/null || true; rm -rf "$WORK"' EXIT
PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
cat >"$WORK/check.cfg" <<EOF
defaults
    mode http
    timeout connect 5s
    timeout client 5s
    timeout server 5s
frontend check
    bind 127.0.0.1:$PORT
    monitor-uri /alive
EOF
haproxy -c -q -f "$WORK/check.cfg"
haproxy -db -f "$WORK/check.cfg" &
PID=$!
for _ in $(seq 50); do
    if python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/alive', timeout=1)" 2>/dev/null; then
        echo "haproxy: ready ($(haproxy -v | head -n 1))"
        exit 0
    fi
    kill -0 "$PID" 2>/dev/null || { echo "haproxy: exited at start" >&2; exit 1; }
    sleep 0.2
done
echo "haproxy: started but did not answer on 127.0.0.1:$PORT" >&2
exit 1
