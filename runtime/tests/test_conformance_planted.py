"""The conformance traces against the planted Agents of planted_keys.py: each fails the trace named for its rule.

A planted Agent breaks exactly one rule of the key, so the trace that proves that rule must FAIL it. `make test`
runs the bugs that only a trace can catch (the history draws no such key); the history check's kept cases prove
the rest there. `make fuzz` runs every bug's trace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from agent_client import ROOT, environment
from generator import paths
from planted_keys import CAUGHT_BY, KEY_BUGS

PLANTED = Path(__file__).with_name("planted_agent.py")
TRACES = {t["id"] for t in json.loads((ROOT / paths.TRACES).read_text(encoding="utf-8"))["traces"]}
FUZZ = os.environ.get("ACP_FUZZ_DRAWS")


def _trace_verdict(bug: str | None, trace: str, tmp_path: Path) -> str:
    agent = [sys.executable, str(PLANTED), *(["--bug", bug] if bug else []), "--", "--db", str(tmp_path / "a.db")]
    done = subprocess.run(
        [sys.executable, "-m", "acp_v2_runtime.conformance", "--timeout", "20", "--only", trace, "--", *agent],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=240,
        check=False,
    )
    line = next((x for x in done.stdout.splitlines() if x.split(" ", 1)[0] in ("PASS", "FAIL", "SKIP")), "")
    return line


def test_every_key_bug_names_a_trace_and_an_invariant_or_none():
    from acp_v2_runtime.conformance.history import INVARIANTS

    assert set(CAUGHT_BY) == set(KEY_BUGS)
    for trace, invariant in CAUGHT_BY.values():
        assert trace in TRACES and (invariant is None or invariant in INVARIANTS)


@pytest.mark.fuzz
@pytest.mark.parametrize("bug", sorted(KEY_BUGS))
def test_a_planted_key_bug_fails_its_trace(bug: str, tmp_path: Path):
    trace, invariant = CAUGHT_BY[bug]
    if invariant is not None and not FUZZ:
        pytest.skip(f"make test proves it by the history's kept case ({invariant}); make fuzz runs its trace")
    line = _trace_verdict(bug, trace, tmp_path)
    assert line.startswith(f"FAIL {trace}:"), line
