"""The run says what it skipped and why (tests/skips.py)."""

from __future__ import annotations

import subprocess
import sys

from tests import skips
from tests.support import ROOT


def test_skips_are_grouped_by_reason_most_frequent_first() -> None:
    reports = [
        ("a.py", 1, "Skipped: tsc is not available"),
        ("b.py", 2, "Skipped: tsc is not available"),
        ("c.py", 3, "Skipped: no shared folder"),
    ]
    assert skips.summary_lines(reports) == [
        "   2 skipped: tsc is not available",
        "   1 skipped: no shared folder",
        "   3 skipped in all",
    ]
    assert skips.summary_lines([]) == []


def test_missing_prerequisites_are_named_with_their_fix(monkeypatch) -> None:
    monkeypatch.setattr(skips, "_present", lambda probe: probe != "rustc")
    monkeypatch.delenv("CI", raising=False)
    (line,) = skips.header_lines()
    assert "will be skipped" in line and "rustc (from .ci/setup.d/11-rust.sh)" in line
    assert f"`{skips.SETUP_COMMAND}`" in line  # the one command that enables them, on the same line
    monkeypatch.setenv("CI", "true")
    assert "will fail (CI=true)" in skips.header_lines()[0]
    monkeypatch.setattr(skips, "_present", lambda probe: True)
    assert skips.header_lines() == []


def test_a_real_run_ends_with_the_grouped_skips(tmp_path) -> None:
    test = tmp_path / "test_one_skip.py"
    test.write_text("import pytest\n\ndef test_x():\n    pytest.skip('nothing to see')\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.conftest", "--rootdir", str(tmp_path), str(test)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "skipped, and why" in done.stdout, done.stdout
    assert "   1 skipped: nothing to see" in done.stdout, done.stdout
