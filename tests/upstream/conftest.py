"""The published ACP v2 schema, fetched once per test run with `npm pack` (pinned in generator/read/published.py).

Nothing fetched is kept in the repository. Without network or npm the tests that need it are skipped on a
developer's machine, but in CI (CI=true) a failed fetch fails them: the audit must really run there.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from generator.read import published
from generator.read.fetch import FetchError

# Instances kept per (direction, type) by the equivalence test, printed in the terminal summary.
DRAWS: dict[str, int] = {}


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not DRAWS:
        return
    terminalreporter.section("equivalence draws per type")
    for key, count in sorted(DRAWS.items()):
        terminalreporter.write_line(f"{count:4d}  {key}")
    terminalreporter.write_line(f"{sum(DRAWS.values())} instances checked in all")


@dataclass(frozen=True)
class Upstream:
    unstable_path: Path
    stable_path: Path

    @property
    def schema(self) -> dict[str, Any]:
        return json.loads(self.unstable_path.read_text(encoding="utf-8"))

    @property
    def stable(self) -> dict[str, Any]:
        return json.loads(self.stable_path.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Upstream:
    dest = tmp_path_factory.mktemp("upstream")
    try:
        unstable, stable = published.fetch_upstream(dest)
    except FetchError as exc:
        message = f"cannot fetch {published.UPSTREAM_PACKAGE}@{published.UPSTREAM_VERSION}: {exc}"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return Upstream(unstable, stable)
