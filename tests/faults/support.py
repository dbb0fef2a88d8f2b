"""A copy of the real spec to break, and the checks every bad-spec run must pass."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from tests.support import ROOT, Run, run_generator, tree

LINE = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+):(?P<col>\d+): error\[(?P<code>[a-z0-9-]+)\]: .+$")


def real_project(dest: Path) -> Path:
    """A project root under `dest` holding a copy of the repository's spec/."""
    shutil.copytree(ROOT / "spec", dest / "spec", symlinks=True)
    return dest


def codes_of(run: Run) -> set[str]:
    """The diagnostic codes a run printed."""
    return {m["code"] for line in run.err.splitlines() if (m := LINE.match(line))}


def assert_rejected(root: Path, *codes: str, command: str = "generate") -> Run:
    """`command` exits 2 with well-formed, sorted diagnostics including `codes`, no traceback, and writes nothing."""
    before = tree(root)
    run = run_generator(command, "--root", str(root))
    assert run.status == 2, run
    assert "Traceback" not in run.out + run.err, run.err
    lines = run.err.splitlines()
    assert lines and lines[-1].endswith("nothing was written."), run.err
    assert all(LINE.match(line) for line in lines[:-1]), run.err
    keys = [(m["file"], int(m["line"]), int(m["col"])) for m in map(LINE.match, lines[:-1]) if m]
    assert keys == sorted(keys), run.err
    assert set(codes) <= codes_of(run), run.err
    assert tree(root) == before
    return run
