"""The example of keys added to one's own asyncio Agent (runtime/examples/keyed_agent.py): the conformance kit
passes every trace it can run on it, on SQLite and on PostgreSQL, and the keys cost it few lines."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import uuid

import pytest
from agent_client import ROOT, environment, run_history
from generator import paths

EXAMPLE = ROOT / "runtime" / "examples" / "keyed_agent.py"
TRACES = json.loads((ROOT / paths.TRACES).read_text(encoding="utf-8"))
MOST_KEY_LINES = 25  # the budget for what an Agent author adds


def example_offers() -> set[str]:
    spec = importlib.util.spec_from_file_location("keyed_agent_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return set(module.OFFERS)


def expected_verdicts() -> dict[str, str]:
    """PASS for each trace whose needs the example meets (the protocol and its offers), SKIP for the rest."""
    offered = example_offers() | {name for name, need in TRACES["needs"].items() if need["from"] == "protocol"}
    return {t["id"]: "PASS" if set(t["needs"]) <= offered else "SKIP" for t in TRACES["traces"]}


def run_kit(db: str, cwd) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "acp_v2_runtime.conformance", "--timeout", "5", "--"]
    return subprocess.run(
        [*command, sys.executable, str(EXAMPLE), "--db", db],
        capture_output=True,
        text=True,
        env=environment(),
        cwd=cwd,
        timeout=300,
        check=False,
    )


def verdicts(output: str) -> dict[str, str]:
    lines = [line.split() for line in output.splitlines() if line[:4] in ("PASS", "FAIL", "SKIP")]
    return {words[1].rstrip(":"): words[0] for words in lines}


def test_the_keys_take_few_lines_of_the_authors_code():
    marked = [line for line in EXAMPLE.read_text(encoding="utf-8").splitlines() if "  # key" in line]
    assert 0 < len(marked) <= MOST_KEY_LINES, len(marked)


def test_the_example_passes_every_trace_it_can_run_on_sqlite(tmp_path):
    done = run_kit("{tmp}/agent.db", tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert verdicts(done.stdout) == expected_verdicts(), done.stdout
    assert "PASS" in verdicts(done.stdout).values()


def test_the_example_passes_every_trace_it_can_run_on_postgresql(pg_dsn, tmp_path):
    import psycopg

    schema = f"example_agent_{uuid.uuid4().hex[:12]}"  # a schema of its own: other tests share the database
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    params = psycopg.conninfo.conninfo_to_dict(pg_dsn)
    options = f"{params.get('options', '')} -c search_path={schema}".strip()
    url = pg_dsn + ("&" if "?" in pg_dsn else "?") + "options=" + options.replace(" ", "%20").replace("=", "%3D")
    try:
        done = run_kit(url, tmp_path)
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
    assert done.returncode == 0, done.stdout + done.stderr
    assert verdicts(done.stdout) == expected_verdicts(), done.stdout


@pytest.mark.parametrize("runs", [3])
def test_the_early_cancel_trace_passes_every_time(tmp_path, runs):
    """cancel-pending is where a task-per-line Agent used to hang: run it a few times."""
    for _ in range(runs):
        command = [sys.executable, "-m", "acp_v2_runtime.conformance", "--timeout", "5", "--only", "cancel-pending"]
        done = subprocess.run(
            [*command, "--", sys.executable, str(EXAMPLE), "--db", "{tmp}/agent.db"],
            capture_output=True,
            text=True,
            env=environment(),
            cwd=tmp_path,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_the_example_keeps_every_invariant_of_a_random_history(store: str, request: pytest.FixtureRequest):
    # The example keeps the ledger's lease (30 s), so the kit is told it: a retry after a holder's death may wait it.
    postgres = ["--postgres", request.getfixturevalue("pg_dsn")] if store == "postgres" else []
    kit = ["--schedules", "2", "--steps", "12", "--seed", "100", "--bound", "10", "--stall", "12", "--shrink-runs", "0"]
    done = run_history([*kit, *postgres], [sys.executable, str(EXAMPLE), "--db", "{db}"], timeout=900)
    assert done.returncode == 0 and "2 passed, 0 failed" in done.stdout, done.stdout + done.stderr


PAGE = ROOT / "site" / "remote-transport.md"


def served_wrapper() -> str:
    """The page's wrapper that serves the example on the remote transport (the block that defines RemoteKeyedAgent)."""
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    (wrapper,) = [block for block in blocks if "class RemoteKeyedAgent" in block]
    return wrapper


def test_the_example_served_as_the_page_shows_keeps_every_invariant_behind_a_balancer(pg_dsn, tmp_path):
    """The wrapper of the remote transport's page, as written, run as three nodes on one PostgreSQL database behind
    HAProxy: the history check, with its network faults and node kills, on both profiles."""
    if (shutil.which("haproxy") or shutil.which("haproxy", path="/usr/sbin")) is None:
        if os.environ.get("CI") == "true":
            pytest.fail("haproxy is not installed; run .ci/setup.d/31-haproxy.sh")
        pytest.skip("haproxy is not installed; run .ci/setup.d/31-haproxy.sh")
    served = tmp_path / "served_keyed_agent.py"
    served.write_text(served_wrapper(), encoding="utf-8")
    env = {**environment(), "PYTHONPATH": os.pathsep.join([str(EXAMPLE.parent), environment().get("PYTHONPATH", "")])}
    # Two small budgets, and the shrunk case that found the wrapper's missing withdrawal on close: a prompt held on
    # a connection that then closed kept its key's claim, and the retry on another node was never answered.
    runs = [["--profile", "http", "--seed", "400"], ["--profile", "websocket", "--seed", "410"]]
    found = ["--profile", "http", "--seed", "915", "--steps", "16", "--keep", "2,6,8", "--instances", "4"]
    for run, schedules in ((runs[0], "2"), (runs[1], "2"), (found, "1")):
        kit = [sys.executable, "-m", "acp_v2_runtime.conformance", "history", "--nodes", "3", "--postgres", pg_dsn]
        kit += ["--steps", "12", *run, "--schedules", schedules, "--shrink-runs", "0"]
        done = subprocess.run(
            [*kit, "--", sys.executable, str(served), "{db}", "{port}"],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600, check=False,
        )  # fmt: skip
        print(done.stdout[-1500:])
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
        assert f"{schedules} passed, 0 failed" in done.stdout
