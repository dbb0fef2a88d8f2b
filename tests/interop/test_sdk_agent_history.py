"""The history check against Agents built on the real TypeScript SDK: the keyed Agent keeps every invariant, and
the one that runs the turn again on a retry is caught by no-second-round.

keyed_agent.ts keeps its store in one JSON file that one process at a time may write, so one Agent runs at a
time (`--instances 1`): kills, closes, restarts and retries still happen, failovers cannot.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.interop.conftest import environment
from tests.interop.test_sdk_agent import AGENTS

BUDGET = ["--instances", "1", "--schedules", "3", "--steps", "12", "--seed", "100", "--shrink-runs", "0"]
TIMING = ["--bound", "10", "--lease", "2", "--stall", "12", "--timeout", "60"]


def history(built: Path, node: str, name: str) -> subprocess.CompletedProcess[str]:
    program, *args = AGENTS[name]
    kit = [sys.executable, "-m", "acp_v2_runtime.conformance", "history", *BUDGET, *TIMING, "--"]
    done = subprocess.run(
        [*kit, node, str(built / program), *args],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=900,
        check=False,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done


def test_the_sdk_keyed_agent_keeps_every_invariant(built: Path, node: str):
    done = history(built, node, "stored sessions and hooks")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed, 0 failed" in done.stdout and "holds on" in done.stdout


def test_the_sdk_agent_that_reruns_a_turn_is_caught(built: Path, node: str):
    done = history(built, node, "reruns the turn on a retry")
    assert done.returncode == 1 and "  no-second-round: " in done.stdout, done.stdout + done.stderr
