"""Print the maintainer journey's steps with their timings at the end of the run."""

from __future__ import annotations

from typing import Any

# (step, seconds for the commands, seconds for the tests, tests run) appended by test_maintainer_journey.py.
TIMINGS: list[tuple[str, float, float, str]] = []


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not TIMINGS:
        return
    terminalreporter.section("maintainer journey: each step, then generate/check/diff/audit and the spec's tests")
    for step, commands, tests, outcome in TIMINGS:
        terminalreporter.write_line(f"{commands:6.1f}s commands {tests:6.1f}s tests  {step} ({outcome})")
    total = sum(c + t for _, c, t, _ in TIMINGS)
    terminalreporter.write_line(f"{total:6.1f}s in all")
