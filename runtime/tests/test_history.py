"""The history check: seeded schedules of faults across several Agents, judged against what the store holds.

`history_cases.yaml` keeps the shrunk schedules that found something (a planted bug, or a check that judged a
correct Agent wrongly): `make test` replays each from its seed and kept steps. Under `make fuzz` (ACP_FUZZ_DRAWS
set) each planted bug must also be caught from a random seed within the command's default budget, and the
reference Agent runs many more schedules on each store.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from agent_client import environment, run_history
from planted_agent import BUGS
from planted_keys import CAUGHT_BY

from acp_v2_runtime.conformance.history import INVARIANTS, Shape, check, generate
from acp_v2_runtime.conformance.history.run import Attempt, Event, History, Work
from acp_v2_runtime.conformance.history.schedule import kept

HERE = Path(__file__).parent
PLANTED = HERE / "planted_agent.py"
CASES: list[dict[str, Any]] = yaml.safe_load((HERE / "history_cases.yaml").read_text(encoding="utf-8"))
# Short store bounds keep the stalls short; the bound on answers leaves a busy machine room.
TIMING = ["--bound", "8", "--lease", "2", "--stall", "9"]
FUZZ = os.environ.get("ACP_FUZZ_DRAWS")
REFERENCE_SCHEDULES = max(2, int(FUZZ) // 40) if FUZZ else 2  # `make fuzz`: 50 schedules per store
# The planted bugs a history can catch: all but those of keys the schedules never send (a trace proves those).
HISTORY_BUGS = sorted(bug for bug in BUGS if CAUGHT_BY.get(bug, ("", "history"))[1] is not None)


def history_run(*flags: str, bug: str | None = None, postgres: str | None = None) -> subprocess.CompletedProcess[str]:
    agent = [sys.executable, str(PLANTED), *(["--bug", bug] if bug else []), "--store-wait", "1", "--"]
    store = ["--postgres", postgres] if postgres else []
    return run_history([*TIMING, *store, *flags], [*agent, "--db", "{db}", "--lease", "2"], timeout=3600)


def test_a_seed_gives_the_same_schedule_and_keep_picks_its_steps():
    shape = Shape(instances=3, sessions=2, stall=True, restart=True)
    first, again = generate(7, 30, shape), generate(7, 30, shape)
    assert first == again and first != generate(8, 30, shape)
    assert [s.n for s in kept(first, [0, 5, 29])] == [0, 5, 29]
    assert {s.op for s in generate(1, 400, Shape(stall=False, restart=False))}.isdisjoint({"stall", "restart"})


def _attempt(n: int, key: str | None, outcome: str, message_id: str | None = None, sent: float = 0) -> Attempt:
    a = Attempt(n, 0, key, f"content {n if key is None else key}", n, False, 0, 0, False, sent=sent or float(n))
    if outcome != "none":
        a.answered = a.sent + 0.5
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


def test_a_cancel_is_judged_by_what_was_sent_after_it():
    # Attempt 1 is cancelled at 1.2 and told -32800 at 1.5; the content is stored, by attempt 2's success.
    def judged(retry_sent: float) -> set[str]:
        h = History(1, [], 0.0)
        h.attempts = [_attempt(1, "k", "error"), _attempt(2, "k", "ok", "m1", sent=retry_sent)]
        h.attempts[1].answered = 3.0
        h.events = [Event("cancel", 1.2, step=1)]
        h.stored = {0: [("m1", "content k")]}
        return {v.invariant for v in check(h, bound=10, lease=2)}

    assert judged(1.3) == set()  # sent after the cancel, before its answer: a new try, free to insert
    assert judged(1.1) == {"no-insert-after-cancel"}  # pending when the cancel came: it should have been withdrawn


def _history(attempts: list[Attempt], stored: list[tuple[str, str]]) -> set[str]:
    h = History(1, [], 0.0)
    h.attempts, h.stored = attempts, {0: stored}
    return {v.invariant for v in check(h, bound=10, lease=2)} - {"answered-within-bound"}  # not what these test


def test_distinct_submissions_are_judged_by_the_message_ids_answered_not_by_their_text():
    # Two keys that look alike, the same text: two messages are right, one answered to both is not.
    first, twin = _attempt(1, "hk-1-\u00e9", "ok", "m1"), _attempt(2, "HK-1-\u00c9", "ok", "m2")
    twin.content = first.content
    assert _history([first, twin], [("m1", first.content), ("m2", first.content)]) == set()
    twin.message_id = "m1"
    assert _history([first, twin], [("m1", first.content)]) == {"distinct-submissions"}
    # The same text under a new key, told no answer: a second stored message with that text is its own.
    again = _attempt(3, "k3", "none")
    again.content = first.content
    assert _history([first, again], [("m1", first.content), ("m3", first.content)]) == set()
    assert _history([first, again], [("m1", first.content), ("m3", first.content), ("m4", first.content)]) == {
        "at-most-one"
    }


def test_a_new_submission_refused_as_a_reused_key_and_a_malformed_key_let_in_are_caught():
    refused = _attempt(1, "k1", "error")
    refused.code = -32602
    assert _history([refused], []) == {"distinct-submissions"}
    reuse = _attempt(2, "k1", "error")
    reuse.code, reuse.content, reuse.reuse = -32602, "other", True
    assert _history([_attempt(1, "k1", "ok", "m1"), reuse], [("m1", "content k1")]) == set()
    bad = _attempt(3, None, "ok", "m3")
    bad.malformed = True
    assert _history([bad], [("m3", bad.content)]) == {"malformed-refused"}
    bad.code, bad.message_id = -32602, None
    assert _history([bad], []) == set()


def test_new_kinds_of_step_are_drawn_and_retries_send_their_submission():
    shape = Shape(instances=3, sessions=2, stall=True, restart=True, fail=True)
    schedules = [generate(seed, 30, shape) for seed in range(40)]
    steps = [s for schedule in schedules for s in schedule]
    assert {"twin", "again", "cross", "malformed", "list"} <= {s.op for s in steps}
    assert any(s.fail for s in steps) and any(s.op == "unkeyed" and s.form == "null" for s in steps)
    assert all(s.describe() for s in steps)
    for schedule in schedules:
        by_n = {s.n: s for s in schedule}
        for step in schedule:
            if step.op == "retry":  # the same key, text and session as its submission, wherever that went
                subject = by_n[step.subject]
                assert (step.keyof, step.form, step.text, step.session) == (
                    subject.keyof, subject.form, subject.text, subject.session
                )  # fmt: skip
            if step.op == "twin":
                assert step.form and step.text == by_n[step.subject].text


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_a_kept_case_replays_with_its_verdict(case: dict[str, Any], request: pytest.FixtureRequest):
    postgres = request.getfixturevalue("pg_dsn") if case["store"] == "postgres" else None
    flags = ["--seed", str(case["seed"]), "--schedules", "1", "--steps", str(case["steps"])]
    flags += ["--keep", ",".join(map(str, case["keep"])), "--shrink-runs", "0"]
    done = history_run(*flags, bug=case.get("bug"), postgres=postgres)
    if case["verdict"] == "pass":
        assert done.returncode == 0, done.stdout
    else:
        assert done.returncode == 1 and f"  {case['verdict']}: " in done.stdout, done.stdout
    if case["verdict"] == "protocol":  # the answers after a protocol problem are answers, not missing ones
        assert "answered-within-bound" not in done.stdout, done.stdout


def test_every_planted_bug_has_a_kept_case_naming_an_invariant():
    verdicts = {c["bug"]: c["verdict"] for c in CASES if c.get("bug")}
    assert set(verdicts) == set(HISTORY_BUGS) and set(verdicts.values()) <= set(INVARIANTS)
    for bug, (_, invariant) in CAUGHT_BY.items():  # the key bugs' kept cases fail the invariant they are listed by
        assert verdicts.get(bug) == invariant, bug


@pytest.mark.fuzz
@pytest.mark.parametrize("bug", HISTORY_BUGS)
def test_a_planted_bug_is_caught_within_the_default_budget(bug: str):
    if not FUZZ:
        pytest.skip("make fuzz runs it (the default budget from a random seed); make test replays its kept case")
    verdict = next(c["verdict"] for c in CASES if c.get("bug") == bug)
    done = history_run("--shrink-runs", "0", bug=bug)
    assert done.returncode == 1 and f"  {verdict}: " in done.stdout, done.stdout


@pytest.mark.fuzz
@pytest.mark.parametrize("store", ["sqlite", "postgres"])
def test_the_reference_agent_keeps_every_invariant(store: str, request: pytest.FixtureRequest):
    postgres = request.getfixturevalue("pg_dsn") if store == "postgres" else None
    seed = ["--seed", "100"] if not FUZZ else []
    done = history_run("--schedules", str(REFERENCE_SCHEDULES), "--steps", "12", *seed, postgres=postgres)
    assert done.returncode == 0, done.stdout
    assert f"{REFERENCE_SCHEDULES} passed, 0 failed" in done.stdout and "faults:" in done.stdout
    print(done.stdout.splitlines()[-4:])


def test_a_shrunk_failure_replays_from_its_printed_command():
    case = next(c for c in CASES if c.get("bug") == "restart-rerun")
    padded = sorted({*case["keep"], *range(case["keep"][0], case["keep"][0] + 3)})  # a few steps more to shrink away
    flags = ["--seed", str(case["seed"]), "--steps", str(case["steps"]), "--keep", ",".join(map(str, padded))]
    done = history_run(*flags, "--shrink-runs", "8", bug="restart-rerun")
    assert done.returncode == 1, done.stdout
    shrunk = re.search(rf"^shrunk to (\d+) of {len(padded)} steps .* still failing ([a-z-]+):$", done.stdout, re.M)
    replay = re.search(r"^replay: (.*)$", done.stdout, re.M)
    assert shrunk and replay and int(shrunk.group(1)) < len(padded), done.stdout
    words = shlex.split(replay.group(1))
    assert words[:4] == ["python", "-m", "acp_v2_runtime.conformance", "history"]
    again = subprocess.run(
        [sys.executable, *words[1:]], capture_output=True, text=True, env=environment(), timeout=600, check=False
    )
    assert again.returncode == 1 and f"  {shrunk.group(2)}: " in again.stdout, again.stdout


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
