"""Hostile Agents against the conformance runner: each one FAILs the trace with a reason that says what it did,
in bounded time, and a 300 MB stderr flood leaves the runner's memory where it was (its stderr is drained as it
comes and only a tail is kept).

What is tested is the verdict and its reason, never speed, so the suite holds on a busy 2-core CI machine: at
most `PARALLEL` runners go at once, and every wait is generous (`TIMEOUT`), except that of the silent Agent,
whose silence is what its trace measures (`SILENT_TIMEOUT`, still far above what a loaded machine needs to start
an Agent and open a session)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.interop.conftest import PARALLEL, environment

AGENT = Path(__file__).with_name("hostile_agent.py")
TRACE = "retry-same-connection"  # its first prompt is where each Agent turns hostile
TIMEOUT = 120.0  # the runner's --timeout: no hostile Agent but the silent one makes the runner wait for it
SILENT_TIMEOUT = 20.0  # the silent Agent costs this once, after its session is open
REASONS = {
    "garbage": "the Agent wrote a line that is not JSON",
    "silence": f"step 4 (expect): answer to r1: nothing within {SILENT_TIMEOUT:g}s on A",
    "huge-line": "longer than the limit of",
    "exit": "exited (status 3): hostile: exiting in the middle of the trace",
    "stderr-flood": "exited (status 4): hostile: flooded stderr",
    "escaped-key": "an idempotency key of the trace appeared in a session/update notification, at params.update",
    "other-message-id": "expected messageId 'msg_",
    "update-flood": "the Agent wrote more than 10000 messages",
    # the same Agent offers failInsert and ignores it: the reason says the hook was sent and what came back
    "other-message-id@retry-after-error": (
        "answer to r1 (the request carried the failInsert hook, which the Agent offers): expected error -32603"
        " (internal error), got a result with messageId 'msg_"
    ),
}
# Runs the runner as a child and reports the largest resident size among its waited-for descendants (the
# runner, and the Agents it started and waited for), in KiB as Linux reports it.
MEASURE = """
import json, resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"code": done.returncode, "out": done.stdout, "err": done.stderr, "peak_kib": peak}))
"""
RUNNER_PEAK_KIB = 160 * 1024  # the runner alone sits near 40 MiB; before the fix, the flood took it past 800


def run_one(name: str) -> dict:
    """One hostile mode in a measured runner process: what it printed, its peak memory and its seconds."""
    mode, _, trace = name.partition("@")
    timeout = SILENT_TIMEOUT if mode == "silence" else TIMEOUT
    runner = [sys.executable, "-m", "acp_v2_runtime.conformance", "--timeout", str(timeout), "--only"]
    command = [sys.executable, "-c", MEASURE, *runner, trace or TRACE, "--", sys.executable, str(AGENT), mode]
    began = time.monotonic()
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, env=environment(), timeout=600, check=False)
    return {**json.loads(done.stdout), "seconds": time.monotonic() - began}


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    """Every hostile mode, at most PARALLEL at once: mode -> what it printed and cost."""
    with ThreadPoolExecutor(PARALLEL) as pool:
        return dict(zip(REASONS, pool.map(run_one, REASONS), strict=True))


@pytest.mark.parametrize("mode", sorted(REASONS))
def test_hostile_agent_fails_the_trace_with_a_clear_reason(runs: dict[str, dict], mode: str):
    run = runs[mode]
    assert run["code"] == 1 and run["err"] == "" and "Traceback" not in run["out"], run
    (verdict,) = [line for line in run["out"].splitlines() if line.startswith(("PASS", "FAIL", "SKIP"))]
    trace = mode.partition("@")[2] or TRACE
    assert verdict.startswith(f"FAIL {trace}") and REASONS[mode] in verdict, verdict
    assert run["out"].splitlines()[-1] == "0 passed, 1 failed, 0 skipped, of 1 traces"


@pytest.mark.parametrize("mode", sorted(REASONS))
def test_hostile_agent_costs_bounded_time(runs: dict[str, dict], mode: str):
    # Every run but the silent one ends long before its wait would: the runner saw the hostility, it did not
    # time out on it. Bounded by the wait itself, so a loaded machine is never a failure.
    if mode == "silence":
        assert runs[mode]["seconds"] >= SILENT_TIMEOUT, runs[mode]["seconds"]
    else:
        assert runs[mode]["seconds"] < TIMEOUT and "nothing within" not in runs[mode]["out"], runs[mode]


@pytest.mark.parametrize("mode", ["stderr-flood", "huge-line", "update-flood"])
def test_floods_leave_the_runners_memory_bounded(runs: dict[str, dict], mode: str):
    assert runs[mode]["peak_kib"] < RUNNER_PEAK_KIB, runs[mode]["peak_kib"]
