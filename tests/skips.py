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
    ("tools/acp-sdk/node_modules/@agentclientprotocol/sdk", "the ACP TypeScript SDK", ".ci/setup.d/12-acp-sdk.sh"),
    ("rustc", "rustc", ".ci/setup.d/11-rust.sh"),
    (
        "tools/ts-pipeline/node_modules/@hey-api/openapi-ts",
        "the TypeScript SDK's generator (hey-api)",
        ".ci/setup.d/13-ts-pipeline.sh",
    ),
    ("/usr/bin/chromium", "Chromium", ".ci/setup.d/20-chromium.sh"),
    ("postgresql:", "a PostgreSQL server (ACP_TEST_POSTGRES_DSN)", ".ci/setup.d/30-postgresql.sh"),
    ("../shared/upstream-examples", "the shared upstream examples (../shared/)", "a checkout beside shared/"),
)


# The one command that runs every script above, as CI does before `make test`.
SETUP_COMMAND = "sudo make setup"


def _present(probe: str) -> bool:
    if probe == "postgresql:":
        return _postgres_reachable()
    if "/" not in probe:
        return shutil.which(probe) is not None
    path = Path(probe)
    return (path if path.is_absolute() else ROOT / path).exists()


def _postgres_reachable() -> bool:
    """Whether the server the PostgreSQL tests use answers (the DSN as runtime/tests/conftest.py reads it)."""
    dsn = os.environ.get("ACP_TEST_POSTGRES_DSN", "postgresql://acp:acp@127.0.0.1:54329/acp_ledger")
    try:
        import psycopg

        with psycopg.connect(dsn, connect_timeout=3):
            return True
    except Exception:
        return False


def header_lines() -> list[str]:
    """One line naming each missing prerequisite, what installs it, and the command that installs them all."""
    absent = [(label, fix) for probe, label, fix in PREREQUISITES if not _present(probe)]
    if not absent:
        return []
    then = "fail (CI=true)" if os.environ.get("CI") == "true" else "be skipped"
    line = f"missing, so the tests that need them will {then}: " + "; ".join(f"{a} (from {b})" for a, b in absent)
    if any(fix.startswith(".ci/setup.d/") for _, fix in absent):
        line += f"; `{SETUP_COMMAND}` runs every .ci/setup.d/ script, as CI does before `make test`"
    return [line]


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
