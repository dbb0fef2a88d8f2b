"""Helpers shared by the pipeline tests: fixture projects, running the generator, reading output trees."""

from __future__ import annotations

import io
import shutil
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

from generator import paths
from generator.cli import main

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SPEC_FIXTURES = FIXTURES / "specs"
INVALID_FIXTURES = FIXTURES / "invalid"
OUTPUT_DIRS = paths.MANAGED_ROOTS


@dataclass
class Run:
    status: int
    out: str
    err: str


def run_generator(*args: str) -> Run:
    """Run the command line in-process and capture what it prints."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        status = main(list(args))
    return Run(status, out.getvalue(), err.getvalue())


def make_project(dest: Path, case: str) -> Path:
    """A project root under `dest` holding the fixture spec `case` and the real meta-schemas."""
    shutil.copytree(SPEC_FIXTURES / case / "spec", dest / "spec")
    shutil.copytree(ROOT / "spec" / "meta", dest / "spec" / "meta", dirs_exist_ok=True)
    return dest


def apply_overlay(root: Path, case_dir: Path) -> None:
    """Lay an invalid fixture's files over a project; `remove` lists spec files to delete first."""
    removals = case_dir / "remove"
    if removals.exists():
        for line in removals.read_text().split():
            (root / line).unlink()
    overlay = case_dir / "spec"
    if overlay.exists():
        shutil.copytree(overlay, root / "spec", dirs_exist_ok=True)


def tree(root: Path) -> dict[str, bytes]:
    """Every file under the output directories, by relative path, ignoring Python caches."""
    found = {}
    for name in OUTPUT_DIRS:
        base = root / name
        if base.is_dir():
            for path in sorted(base.rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    found[path.relative_to(root).as_posix()] = path.read_bytes()
    return found
