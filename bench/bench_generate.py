"""A no-op `generate` against a full one, both as fresh processes on a copy of the real spec (goal: <= 0.25)."""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import Ratio

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 5


def _generate(root: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "generator", "generate", "--root", str(root)], cwd=ROOT, check=True, capture_output=True
    )
    return time.perf_counter() - start


def run() -> list[Ratio]:
    full, noop = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(ROUNDS):
            root = Path(tmp) / f"round{i}"
            shutil.copytree(ROOT / "spec", root / "spec")
            full.append(_generate(root))  # empty output tree and no cache: everything is rendered and written
            noop.append(_generate(root))  # same inputs, outputs untouched: the shortcut applies
    return [
        Ratio(
            "generate: no-op vs full (seconds per run)",
            statistics.median(noop),
            statistics.median(full),
            "s",
            goal=0.25,
            higher_is_better=False,
        )
    ]
