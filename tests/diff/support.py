"""Fixture pairs for the diff rules: a base spec, and per case an overlay for OLD and/or NEW.

tests/diff/cases/<case>/{old,new}/spec/… replace or add files of tests/diff/base/spec/; {old,new}/remove lists
files to delete; `args` holds extra arguments; expected.txt, expected.json and expected.status are the reviewed
report (regenerate with `python -m tests.diff.regen`, or `make golden`, and review the diff).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.support import ROOT, run_generator

HERE = Path(__file__).resolve().parent
BASE = HERE / "base" / "spec"
CASES = HERE / "cases"


def case_names() -> list[str]:
    return sorted(p.name for p in CASES.iterdir() if p.is_dir())


def build_side(dest: Path, case: str | None, side: str) -> Path:
    """The base spec with the real meta-schemas and the case's overlay for `side`, at dest/<side>/spec."""
    spec = dest / side / "spec"
    shutil.copytree(BASE, spec)
    shutil.copytree(ROOT / "spec" / "meta", spec / "meta")
    if case is not None:
        overlay = CASES / case / side
        removals = overlay / "remove"
        if removals.exists():
            for line in removals.read_text().split():
                (dest / side / line).unlink()
        if (overlay / "spec").exists():
            shutil.copytree(overlay / "spec", spec, dirs_exist_ok=True)
    return spec


def run_case(case: str, dest: Path, fmt: str) -> tuple[int, str, str]:
    """Build both sides under `dest` and run `diff old new`; returns (status, stdout, stderr)."""
    build_side(dest, case, "old")
    build_side(dest, case, "new")
    extra_file = CASES / case / "args"
    extra = extra_file.read_text().split() if extra_file.exists() else []
    result = run_generator("diff", str(dest / "old"), str(dest / "new"), "--root", str(dest), "--format", fmt, *extra)
    return result.status, result.out, result.err


def copy_real_spec(dest: Path, *, ignore=None) -> Path:
    """The real spec/ copied to dest, its accepted breaks left out.

    An accepted break belongs to a release; between two directories, which have none, every entry applies and one
    whose break the pair does not show is reported as unused. Tests of the rules on copies of the real spec are
    about the rules, so a maintainer's entries in spec/accepted-breaks.yaml must not change their outcome.
    """
    shutil.copytree(ROOT / "spec", dest, ignore=ignore)
    accepted = dest / "accepted-breaks.yaml"
    if accepted.exists():
        accepted.write_text("accepted: []\n", encoding="utf-8")
    return dest
