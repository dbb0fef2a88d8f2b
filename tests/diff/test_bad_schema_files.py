"""Schema files that JSON allows but Python's reader chokes on, or that are not JSON at all, get one located
diagnostic and exit 2 from both commands that read them (`diff` and `audit`), never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT

CASES = {
    # name: (file text, expected "line:col: error[code]: message" start)
    "nested-100000-deep": ('{"$defs": ' + "[" * 100_000 + "]" * 100_000 + "}", "1:74: error[too-deep]: "),
    "5000-digit-integer": ('{"$defs": {\n  "A": {"maximum": ' + "9" * 5000 + "}}}", "2:20: error[invalid-json]: "),
    "nan": ('{"$defs": {"A": {"description": "NaN", "maximum": NaN}}}', "1:51: error[invalid-json]: NaN "),
    "infinity": ('{"$defs": {"A": {"minimum": -Infinity}}}', "1:29: error[invalid-json]: -Infinity "),
}


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "generator", *args]
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120, check=False, env=env)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("command", ["diff", "audit"])
def test_refused_with_a_position_and_exit_2(tmp_path: Path, case: str, command: str) -> None:
    text, expected = CASES[case]
    bad = tmp_path / "bad.json"
    bad.write_text(text, encoding="utf-8")
    if command == "diff":
        (tmp_path / "good.json").write_text('{"$defs": {}}\n', encoding="utf-8")
        done = _run("diff", "good.json", "bad.json", "--root", str(tmp_path), cwd=tmp_path)
    else:
        args = ("--root", str(ROOT), "--spec", str(ROOT / "spec"))
        done = _run("audit", str(bad), *args, cwd=ROOT)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    first = done.stderr.splitlines()[0]
    assert f"bad.json:{expected}" in first, first
    assert done.stderr.rstrip().endswith("nothing was compared."), done.stderr
