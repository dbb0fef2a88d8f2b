"""The generator's commands explain themselves: full --help for each, and one summary line on success."""

from __future__ import annotations

import subprocess
import sys

import pytest

from generator.cli import COMMANDS
from tests.support import ROOT


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "generator", *args], cwd=ROOT, capture_output=True, text=True, check=False
    )


def test_overview_lists_every_command_with_its_summary() -> None:
    done = _run("--help")
    assert done.returncode == 0
    for name, summary, _ in COMMANDS:
        assert name in done.stdout and summary.split()[0] in done.stdout
    assert "exit status" in done.stdout and "examples" in done.stdout


@pytest.mark.parametrize("name", [c[0] for c in COMMANDS])
def test_each_command_has_a_full_help(name: str) -> None:
    done = _run(name, "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "Exit status:" in text, text
    assert len(text) > 300, text  # more than a usage line


def test_validate_prints_one_summary_line() -> None:
    done = _run("validate")
    assert done.returncode == 0
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("validate: ") and "valid" in lines[0]
