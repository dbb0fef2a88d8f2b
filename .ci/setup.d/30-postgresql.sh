#!/usr/bin/env bash
# PostgreSQL for runtime/tests: Debian's server, a throwaway cluster under /tmp, listening on loopback only.
# Safe to run twice: an installed package, an existing cluster and a running server are all left as they are.
# The tests read ACP_TEST_POSTGRES_DSN; the default below matches what this script creates.
set -euo pipefail

PORT="${ACP_TEST_POSTGRES_PORT:-54329}"
DATA="${ACP_TEST_POSTGRES_DATA:-/tmp/acp-ledger-postgres}"
ROLE=acp
DB=acp_ledger

if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
    apt-get update -qq
    apt-get install -y -qq postgresql >/dev/null
fi
BIN="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)"
as_pg() { runuser -u postgres -- "$@"; }

if [ ! -s "$DATA/PG_VERSION" ]; then
    rm -rf "$DATA"
    install -d -o postgres -g postgres -m 700 "$DATA"
    as_pg "$BIN/initdb" -D "$DATA" --auth=trust --username=postgres --encoding=UTF8 >/dev/null
fi
if ! as_pg "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
    # Sockets go to the data dir so the server needs nothing from /var/run; max_connections covers 4 processes
    # with pools plus the tests' own connections.
    as_pg "$BIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w -t 60 start \
        -o "-h 127.0.0.1 -p $PORT -k $DATA -c max_connections=200 -c fsync=off"
fi
psql_pg() { as_pg "$BIN/psql" -h 127.0.0.1 -p "$PORT" -U postgres -v ON_ERROR_STOP=1 -qAt "$@"; }
if [ "$(psql_pg -c "SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'")" != 1 ]; then
    psql_pg -c "CREATE ROLE $ROLE LOGIN PASSWORD '$ROLE'"
fi
if [ "$(psql_pg -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != 1 ]; then
    psql_pg -c "CREATE DATABASE $DB OWNER $ROLE"
fi
echo "postgresql: ready on 127.0.0.1:$PORT (database $DB, role $ROLE)"
