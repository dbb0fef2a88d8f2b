"""The history check: seeded schedules of faults across several Agents, judged against what the store holds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from agent_client import environment

from acp_v2_runtime.conformance.history import INVARIANTS, Shape, check, generate
from acp_v2_runtime.conformance.history.run import Attempt, History, Work
from acp_v2_runtime.conformance.history.schedule import kept

PLANTED = Path(__file__).with_name("planted_agent.py")
# Short store bounds keep the stalls short; the bound on answers leaves a busy machine room.
TIMING = ["--bound", "8", "--lease", "2", "--stall", "9"]


def history_run(*flags: str, bug: str | None = None) -> subprocess.CompletedProcess[str]:
    agent = [sys.executable, str(PLANTED), *(["--bug", bug] if bug else []), "--store-wait", "1", "--"]
    command = [sys.executable, "-m", "acp_v2_runtime.conformance", "history", *TIMING, *flags, "--", *agent]
    done = subprocess.run(
        [*command, "--db", "{db}", "--lease", "2"],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=900,
        check=False,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done


def test_a_seed_gives_the_same_schedule_and_keep_picks_its_steps():
    shape = Shape(instances=3, sessions=2, stall=True, restart=True)
    first, again = generate(7, 30, shape), generate(7, 30, shape)
    assert first == again and first != generate(8, 30, shape)
    assert [s.n for s in kept(first, [0, 5, 29])] == [0, 5, 29]
    assert {s.op for s in generate(1, 400, Shape(stall=False, restart=False))}.isdisjoint({"stall", "restart"})


def _attempt(n: int, key: str | None, outcome: str, message_id: str | None = None) -> Attempt:
    a = Attempt(n, 0, key, f"content {n if key is None else key}", n, False, 0, 0, False, sent=float(n))
    if outcome != "none":
        a.answered = n + 0.5
        a.message_id = message_id if outcome == "ok" else None
        a.code = None if outcome == "ok" else -32800
    return a


def test_the_check_names_each_broken_invariant_of_a_history():
    h = History(1, [], 0.0)
    h.attempts = [_attempt(1, "k1", "ok", "m1"), _attempt(2, "k1", "ok", "m9"), _attempt(3, "k2", "error")]
    h.stored = {0: [("m1", "content k1"), ("m2", "content k1"), ("m3", "content k2")]}
    h.work = [Work(0, 0, 0, 2, 1), Work(0, 1, 0, 1, 1)]
    found = {v.invariant for v in check(h, bound=10, lease=2)}
    assert found == {"at-most-one", "success-names-stored", "errors-mean-nothing", "no-insert-after-cancel",
                     "no-second-round"}  # fmt: skip
    assert found <= set(INVARIANTS)


def test_the_reference_agent_keeps_every_invariant_on_sqlite():
    done = history_run("--schedules", "3", "--steps", "12", "--seed", "100")
    assert done.returncode == 0, done.stdout
    assert "3 passed, 0 failed" in done.stdout and "faults:" in done.stdout


@pytest.mark.parametrize(
    ("bug", "invariant"), [("failover-insert", "at-most-one"), ("new-message-id", "success-names-stored")]
)
def test_a_planted_bug_is_caught_by_its_invariant(bug: str, invariant: str):
    done = history_run("--seed", "100", "--shrink-runs", "0", bug=bug)
    assert done.returncode == 1, done.stdout
    assert f"  {invariant}: " in done.stdout and "replay: " in done.stdout


def test_bad_flags_and_a_missing_command_exit_2():
    for flags in (["--schedules", "0", "--", "true"], ["--bound", "-1", "--", "true"], []):
        done = subprocess.run(
            [sys.executable, "-m", "acp_v2_runtime.conformance", "history", *flags],
            capture_output=True,
            text=True,
            env=environment(),
            check=False,
        )
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
