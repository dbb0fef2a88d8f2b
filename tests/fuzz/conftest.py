"""Shared by the fuzz tests: how many draws to make, and the counts printed at the end of the run.

`make test` runs each fuzz test with its default number of draws; `make fuzz` sets ACP_FUZZ_DRAWS (thousands) and
selects the tests marked `fuzz`. A new fuzz test takes its draw count from `draws()` and records outcomes with
`record()`; the summary below prints them.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import pytest
from hypothesis import Phase

OUTCOMES: Counter[str] = Counter()


def draws(default: int) -> int:
    """The number of examples a fuzz test draws: ACP_FUZZ_DRAWS when set, else its default for `make test`."""
    value = os.environ.get("ACP_FUZZ_DRAWS")
    return int(value) if value else default


def scaled(default: int, ratio: float) -> int:
    """A second, costlier test's draws: `default` in `make test`, a share of ACP_FUZZ_DRAWS under `make fuzz`."""
    value = os.environ.get("ACP_FUZZ_DRAWS")
    return max(default, int(int(value) * ratio)) if value else default


def phases() -> tuple[Phase, ...]:
    """Hypothesis phases: no shrinking unless ACP_FUZZ_SHRINK=1 (shrinking a spec mutation can take minutes, and
    each draw is labelled, so a failure is readable as it is)."""
    if os.environ.get("ACP_FUZZ_SHRINK") == "1":
        return tuple(Phase)
    return tuple(p for p in Phase if p is not Phase.shrink)


def record(test: str, outcome: str) -> None:
    """Count one draw of `test` that ended in `outcome`."""
    OUTCOMES[f"{test}: {outcome}"] += 1


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not OUTCOMES:
        return
    terminalreporter.section("fuzz draws")
    for key, count in sorted(OUTCOMES.items()):
        terminalreporter.write_line(f"{count:6d}  {key}")
    terminalreporter.write_line(f"{sum(OUTCOMES.values()):6d}  draws in all")


@pytest.fixture(autouse=True)
def _fuzz_marker_is_declared(request: pytest.FixtureRequest) -> None:
    # every test in this folder is a fuzz test, so `make fuzz` (pytest -m fuzz) selects it
    assert request.node.get_closest_marker("fuzz") is not None, "mark fuzz tests with @pytest.mark.fuzz"
