"""The history check over a cluster of Agents built on the TypeScript SDK: sdk_pg_agent.ts, served by the SDK's own
AcpServer and keeping sessions, messages and key records in PostgreSQL, run as three nodes behind the kit's
HAProxy and fault proxy (`conformance history --nodes 3`). It keeps every invariant on both remote profiles, and the
same Agent with its key records in process memory (`--memory-keys`) is caught storing a prompt twice.

The nodes share a schema made for this module, named to them by the `options=-c search_path=...` parameter of the
URL they are given (which the pg client passes on to the server); it is dropped at the end.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import pytest

from tests.interop.conftest import compile_programs, environment, missing

HERE = Path(__file__).resolve().parent
BUDGET = ["--seed", "300", "--schedules", "3", "--steps", "12", "--shrink-runs", "0"]
BOUND = ["--bound", "10"]
"""Seconds an answer may take: the settle step waits this long for each answer a network fault swallowed."""
SUMMARY = ("history:", "schedules:", "faults:", "answers:", "network faults")


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The node command: sdk_pg_agent.ts compiled as tests/interop compiles its programs, run by node."""
    node = shutil.which("node")
    if node is None:
        missing("node is not available; run .ci/setup.d/10-node-typescript.sh")
    assert node is not None
    built = compile_programs(node, ("sdk_pg_agent.ts",), tmp_path_factory.mktemp("sdk-pg-agent"), HERE)
    return [node, str(built / "sdk_pg_agent.js"), "--host", "{host}", "--port", "{port}", "--db", "{db}"]


@pytest.fixture(scope="module")
def schema_dsn(shared_dsn: str) -> Iterator[str]:
    """`shared_dsn` with a search_path of a schema of this module's own."""
    import psycopg

    schema = f"sdk_pg_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(shared_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    parts = urlsplit(shared_dsn)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "options"]
    query.append(("options", f"-c search_path={schema}"))
    try:
        yield urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))
    finally:
        with psycopg.connect(shared_dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def history(agent: list[str], dsn: str, profile: str, *flags: str) -> subprocess.CompletedProcess[str]:
    """The kit's history check over three nodes of `agent` (with `flags`) on `dsn`; its output is printed."""
    kit = [sys.executable, "-m", "acp_v2_runtime.conformance", "history", "--nodes", "3", "--postgres", dsn]
    kit += ["--profile", profile, *BUDGET, *BOUND, "--", *agent, "--test-hooks", *flags]
    began = time.monotonic()
    done = subprocess.run(kit, capture_output=True, text=True, env=environment(), timeout=600, check=False)
    print(f"{' '.join([profile, *flags])}: exit {done.returncode} in {time.monotonic() - began:.1f}s")
    shown = [line for line in done.stdout.splitlines() if line.startswith(SUMMARY) or line.startswith("  at-most-one:")]
    for line in dict.fromkeys(shown):  # a violation is printed again under its shrunk trace
        print("  " + line)
    assert "Traceback" not in done.stdout + done.stderr, done.stdout[-3000:] + done.stderr[-3000:]
    return done


@pytest.mark.parametrize("profile", ["http", "websocket"])
def test_the_sdk_agent_on_postgresql_keeps_every_invariant_over_three_nodes(
    haproxy: str, agent: list[str], schema_dsn: str, profile: str
) -> None:
    done = history(agent, schema_dsn, profile)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-3000:]
    assert "3 passed, 0 failed" in done.stdout
    assert "3 nodes behind a balancer; holds on" in done.stdout  # the hooks were offered and used
    faults = next(line for line in done.stdout.splitlines() if line.startswith("faults: "))
    assert "node-kill" in faults, faults  # a node died and its prompts' retries went to the others


def test_key_records_kept_in_memory_are_caught_storing_a_prompt_twice(
    haproxy: str, agent: list[str], schema_dsn: str
) -> None:
    """The check can fail: a node that remembers keys only in its own memory inserts a retry that reaches it after
    another node recorded the key."""
    done = history(agent, schema_dsn, "http", "--memory-keys")
    assert done.returncode == 1, done.stdout[-4000:] + done.stderr[-3000:]
    assert "  at-most-one: " in done.stdout, done.stdout[-4000:]
