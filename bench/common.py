"""Shared pieces of the benchmarks: the result type and a robust timer."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Ratio:
    """One figure: ours against a reference, with the goal the ratio must meet (None: informational, no goal)."""

    name: str
    ours: float
    reference: float
    unit: str
    goal: float | None
    higher_is_better: bool  # True for throughput (ours / reference >= goal), False for times (<= goal)

    @property
    def ratio(self) -> float:
        return self.ours / self.reference if self.reference else float("inf")

    @property
    def met(self) -> bool:
        """Whether the goal is met; an informational figure has none, so it never counts as missed."""
        if self.goal is None:
            return True
        return self.ratio >= self.goal if self.higher_is_better else self.ratio <= self.goal

    def line(self) -> str:
        if self.goal is None:
            verdict = "(informational, no goal)"
        else:
            sign = ">=" if self.higher_is_better else "<="
            verdict = f"(goal {sign} {self.goal}) {'met' if self.met else 'MISSED'}"
        return (
            f"{self.name}: ratio {self.ratio:.3f} {verdict}; "
            f"ours {self.ours:.4g} {self.unit}, reference {self.reference:.4g} {self.unit}"
        )


def median_seconds(action: Callable[[], object], *, repeat: int) -> float:
    """The median wall time of `repeat` calls of `action`."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved(
    a: Callable[[], object], b: Callable[[], object], *, rounds: int, clock: Callable[[], float] = time.perf_counter
) -> tuple[float, float]:
    """Median times of `a` and `b`, measured in alternation so that machine noise hits both alike, each going
    first in every other round.

    `clock=time.process_time` counts this process's CPU time only, which other work on a shared machine disturbs far
    less than wall time; it suits work done in this process that never waits.
    """
    ta, tb = [], []
    for index in range(rounds):
        # a then b, then b then a: whatever the first of a pair gains or loses (a warm cache, a late timer tick)
        # falls to each side in turn
        pairs = ((a, ta), (b, tb)) if index % 2 == 0 else ((b, tb), (a, ta))
        for action, sink in pairs:
            start = clock()
            action()
            sink.append(clock() - start)
    return statistics.median(ta), statistics.median(tb)


def compile_generator() -> None:
    """Compile the generator's modules to bytecode, as pip does for an installed library.

    Libraries run from the bytecode pip wrote at install; the generator runs from its sources, and where
    PYTHONDONTWRITEBYTECODE is set (as in some sandboxes and CI images) each fresh process would compile every
    module again, a cost no user with a usual Python setup pays. Both sides of the lines that time the generator's
    commands then load bytecode.
    """
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "generator")], check=True)
