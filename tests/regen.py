"""Regenerate the expected outputs of the fixture tests: `python -m tests.regen` (or `make golden`).

Golden trees: tests/fixtures/specs/<case>/expected/. Diagnostics snapshots: tests/fixtures/invalid/<case>/expected.txt.
Review the diff before committing it: a golden change is a change in what users get.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from tests.support import (
    INVALID_FIXTURES,
    SPEC_FIXTURES,
    apply_overlay,
    fixture_cases,
    make_project,
    run_generator,
    tree,
)

BASE_CASE = "keyed"  # invalid fixtures are laid over this spec


def golden_outputs(case: str) -> dict[str, bytes]:
    """What the generator writes for fixture spec `case`."""
    with tempfile.TemporaryDirectory() as tmp:
        root = make_project(Path(tmp), case)
        result = run_generator("generate", "--root", str(root))
        if result.status != 0:
            raise SystemExit(f"fixture {case} does not generate:\n{result.err}")
        return tree(root)


def diagnostics_of(case: str) -> str:
    """What the generator prints on stderr for the invalid fixture `case`."""
    with tempfile.TemporaryDirectory() as tmp:
        root = make_project(Path(tmp), BASE_CASE)
        apply_overlay(root, INVALID_FIXTURES / case)
        return run_generator("generate", "--root", str(root)).err


def main() -> int:
    for case_dir in (SPEC_FIXTURES / case for case in fixture_cases(SPEC_FIXTURES)):
        expected = case_dir / "expected"
        shutil.rmtree(expected, ignore_errors=True)
        for rel, data in golden_outputs(case_dir.name).items():
            dest = expected / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        print(f"golden: {case_dir.name}")
    for case_dir in (INVALID_FIXTURES / case for case in fixture_cases(INVALID_FIXTURES)):
        (case_dir / "expected.txt").write_text(diagnostics_of(case_dir.name))
        print(f"diagnostics: {case_dir.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
