"""Paired timing in a random order, for comparisons whose sides take a few milliseconds each."""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable


def shuffled_pairs(
    a: Callable[[], object],
    b: Callable[[], object],
    *,
    rounds: int,
    seed: int = 14,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[float, float]:
    """Median times of `a` and `b` over `rounds` pairs, each pair run in an order drawn at random.

    A fixed order (a, b, a, b, ...) lets any periodic load on a shared machine line up with one side for a whole
    run: an A/A check of the reference Agent measured the same work at 0.55 to 1.0 of itself that way, and at
    0.99 to 1.01 with the order drawn per pair. The seed keeps the order the same from run to run.

    `clock=time.process_time` counts this process's CPU time only (as `common.interleaved` explains), for work done
    in this process that never waits.
    """
    order = random.Random(seed)
    times: dict[int, list[float]] = {0: [], 1: []}
    sides = [(0, a), (1, b)]
    for _ in range(rounds):
        order.shuffle(sides)
        for side, action in sides:
            start = clock()
            action()
            times[side].append(clock() - start)
    return statistics.median(times[0]), statistics.median(times[1])
