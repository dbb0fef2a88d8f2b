"""JSON-Schema mode on real releases: diff two consecutive published ACP v2 schemas against a reviewed snapshot."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from generator.audit import command as audit
from tests.diff.releases import PAIRS, diff_releases, snapshot


@pytest.mark.parametrize(("old", "new"), PAIRS)
def test_release_to_release_report_matches_the_reviewed_snapshot(old: str, new: str, tmp_path: Path) -> None:
    try:
        status, out = diff_releases(tmp_path, old, new)
    except audit.FetchError as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(str(exc))
        pytest.skip(f"cannot fetch the releases: {exc}")
    expected = snapshot(old, new).read_text()
    assert f"# exit {status}\n{out}" == expected, "run `python -m tests.diff.releases` and review the diff"
