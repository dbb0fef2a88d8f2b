"""Helpers shared by the pipeline tests: fixture projects, running the generator, reading output trees."""

from __future__ import annotations

import difflib
import io
import shutil
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from generator import paths
from generator.cli import main
from generator.model.spec import KeyRules, Spec
from generator.pipeline import load_spec

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SPEC_FIXTURES = FIXTURES / "specs"
INVALID_FIXTURES = FIXTURES / "invalid"
OUTPUT_DIRS = paths.MANAGED_ROOTS


GOLDEN_COMMAND = "make golden"


@cache
def real_spec() -> Spec:
    """The repository's own spec, loaded once per test process."""
    return load_spec(ROOT / "spec", ROOT)


def key_rules() -> KeyRules:
    """The idempotency key's limits as the spec states them, for tests that probe the bounds."""
    rules = real_spec().key_rules
    assert rules is not None and rules.max_length is not None, "the spec defines a bounded IdempotencyKey"
    return rules


def fixture_cases(kind: Path) -> list[str]:
    """The fixture cases under SPEC_FIXTURES or INVALID_FIXTURES: one folder each, sorted."""
    return sorted(p.name for p in kind.iterdir() if p.is_dir())


def golden_mismatch(name: str, expected: bytes | str, actual: bytes | str) -> str:
    """A message for a golden file that differs: a unified diff (expected -> actual) and the command that
    updates the golden copy once the change is intended."""
    as_text = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in (expected, actual)]
    diff = difflib.unified_diff(
        as_text[0].splitlines(keepends=True),
        as_text[1].splitlines(keepends=True),
        fromfile=f"golden/{name}",
        tofile=f"generated/{name}",
        n=2,
    )
    lines = list(diff)
    shown = "".join(lines[:200]) + (f"\n[… {len(lines) - 200} more diff lines]\n" if len(lines) > 200 else "")
    fix = f"If the change is intended, run `{GOLDEN_COMMAND}` and review the diff."
    return f"{name} differs from its golden copy:\n{shown}\n{fix}"


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
