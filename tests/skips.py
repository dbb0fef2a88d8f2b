"""What a run could not test, said twice: the prerequisites missing at the start, and every skip grouped by its
reason at the end (under CI=true the tests that need them fail instead of skipping)."""

from __future__ import annotations

import os
import shutil
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# What some tests need beyond .venv, and the command that provides it.
PREREQUISITES: tuple[tuple[str, str, str], ...] = (
    ("node", "node", ".ci/setup.d/10-node-typescript.sh"),
    ("tools/typescript/node_modules/.bin/tsc", "TypeScript (tsc)", ".ci/setup.d/10-node-typescript.sh"),
    ("rustc", "rustc", ".ci/setup.d/11-rust.sh"),
    (
        "tools/ts-pipeline/node_modules/@hey-api/openapi-ts",
        "the TypeScript SDK's generator (hey-api)",
        ".ci/setup.d/13-ts-pipeline.sh",
    ),
    ("/usr/bin/chromium", "Chromium", ".ci/setup.d/20-chromium.sh"),
    ("../shared/upstream-examples", "the shared upstream examples (../shared/)", "a checkout beside shared/"),
)


def _present(probe: str) -> bool:
    if "/" not in probe:
        return shutil.which(probe) is not None
    path = Path(probe)
    return (path if path.is_absolute() else ROOT / path).exists()


def header_lines() -> list[str]:
    """One line naming each missing prerequisite and what installs it, or none when all are there."""
    missing = [f"{label} (from {fix})" for probe, label, fix in PREREQUISITES if not _present(probe)]
    if not missing:
        return []
    then = "fail (CI=true)" if os.environ.get("CI") == "true" else "be skipped"
    return [f"missing, so the tests that need them will {then}: " + "; ".join(missing)]


def _reason(longrepr: object) -> str:
    text = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ").strip()


def summary_lines(longreprs: Iterable[object]) -> list[str]:
    """`N skipped: reason` per distinct reason, the most frequent first, then a total line."""
    counts = Counter(_reason(item) for item in longreprs)
    lines = [f"{n:>4} skipped: {reason}" for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    if lines:
        lines.append(f"{sum(counts.values()):>4} skipped in all")
    return lines
