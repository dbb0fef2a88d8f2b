"""Fixtures for the key-ledger tests: stores of each kind, and the PostgreSQL server that CI starts.

PostgreSQL comes from `.ci/setup.d/30-postgresql.sh` (run by `.ci/run`, and by these fixtures when the default
server is down and they run as root, which then stop it when the run ends); the DSN is read from
ACP_TEST_POSTGRES_DSN. Without a server the PostgreSQL tests are skipped on a developer's machine and fail under
CI=true.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

DEFAULT_DSN = "postgresql://acp:acp@127.0.0.1:54329/acp_ledger"
ROOT = Path(__file__).resolve().parents[2]
SETUP = ROOT / ".ci" / "setup.d" / "30-postgresql.sh"
sys.dont_write_bytecode = True  # the runtime is installed editable: keep the work tree free of caches


def postgres_dsn() -> str:
    return os.environ.get("ACP_TEST_POSTGRES_DSN", DEFAULT_DSN)


def _reachable(dsn: str) -> Exception | None:
    try:
        import psycopg

        with psycopg.connect(dsn, connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:
        return exc
    return None


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """A reachable PostgreSQL DSN, or a skip (a failure in CI).

    With the default DSN, a root user whose server is down gets it started by the same script CI runs, and stopped
    again when the run ends: a server the tests start is not left running after them.
    """
    dsn = postgres_dsn()
    problem = _reachable(dsn)
    started = False
    if problem is not None and "ACP_TEST_POSTGRES_DSN" not in os.environ and os.geteuid() == 0 and SETUP.exists():
        subprocess.run(["bash", str(SETUP)], capture_output=True, timeout=600, check=False)
        problem = _reachable(dsn)
        started = problem is None
    if problem is not None:
        message = f"PostgreSQL is not reachable ({type(problem).__name__}); run {SETUP.relative_to(ROOT)}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    yield dsn
    if started:
        _stop_server()


def _stop_server() -> None:
    """Stop the server SETUP started (its data directory and binaries found as SETUP finds them)."""
    data = os.environ.get("ACP_TEST_POSTGRES_DATA", "/tmp/acp-ledger-postgres")
    versions = Path("/usr/lib/postgresql").glob("*/bin/pg_ctl")
    binaries = sorted(versions, key=lambda p: [int(x) for x in p.parts[-3].split(".") if x.isdigit()])
    if binaries:
        stop = ["runuser", "-u", "postgres", "--", str(binaries[-1]), "-D", data, "-m", "fast", "-w", "stop"]
        subprocess.run(stop, capture_output=True, timeout=120, check=False)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store_factory(request: pytest.FixtureRequest, tmp_path) -> Iterator:
    """A function that makes stores of one kind sharing one database (so two calls see the same keys)."""
    from acp_v2_runtime.idempotency import MemoryStore, SQLiteStore

    made = []
    if request.param == "memory":
        shared = MemoryStore()

        def make(lease: float = 30.0):
            shared.lease_seconds = lease
            return shared
    elif request.param == "sqlite":

        def make(lease: float = 30.0):
            made.append(SQLiteStore(tmp_path / "ledger.db", lease_seconds=lease))
            return made[-1]
    else:
        dsn = request.getfixturevalue("pg_dsn")
        from acp_v2_runtime.idempotency.postgres import PostgresStore

        def make(lease: float = 30.0):
            made.append(PostgresStore(dsn, lease_seconds=lease))
            return made[-1]

    yield make
    for store in made:
        store.close()


@pytest.fixture
def session_id() -> str:
    """A fresh session id, so tests that share a PostgreSQL database never see each other's keys."""
    return f"sess_{uuid.uuid4().hex}"
