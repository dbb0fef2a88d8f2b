"""Every invalid fixture gets exactly its snapshot of diagnostics, exit status 2, no traceback, and no writes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from generator import paths
from generator.diagnostics import display_path
from generator.read.specfiles import Snapshot
from tests.regen import BASE_CASE
from tests.support import (
    INVALID_FIXTURES,
    apply_overlay,
    fixture_cases,
    golden_mismatch,
    make_project,
    run_generator,
    tree,
)

CASES = fixture_cases(INVALID_FIXTURES)
LINE = re.compile(r"^spec/\S+:\d+:\d+: error\[[a-z0-9-]+\]: .+$")


def test_there_are_enough_invalid_fixtures() -> None:
    assert len(CASES) >= 12


@pytest.mark.parametrize("case", CASES)
def test_invalid_spec_is_reported_and_nothing_is_written(case: str, tmp_path: Path) -> None:
    root = make_project(tmp_path, BASE_CASE)
    # sentinel outputs stand in for a previous generation: they must survive a failed run byte for byte
    for rel in (paths.POLICY, paths.RETRY_TABLE_PAGE):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(f"previous content of {rel}\n")
    before = tree(root)
    apply_overlay(root, INVALID_FIXTURES / case)

    for command in ("generate", "check"):
        result = run_generator(command, "--root", str(root))
        assert result.status == 2, result
        assert "Traceback" not in result.err + result.out
        expected = (INVALID_FIXTURES / case / "expected.txt").read_text()
        assert result.err == expected, golden_mismatch(f"invalid/{case}/expected.txt", expected, result.err)
    assert tree(root) == before
    lines = result.err.splitlines()
    assert lines[-1].endswith("nothing was written.")
    assert all(LINE.match(line) for line in lines[:-1]), lines
    assert lines[:-1] == sorted(lines[:-1], key=_sort_key)


def _sort_key(line: str) -> tuple[str, int, int]:
    path, row, col = line.split(":")[:3]
    return path, int(row), int(col)


def test_a_bad_spec_leaves_a_real_generation_untouched(tmp_path: Path) -> None:
    root = make_project(tmp_path, BASE_CASE)
    assert run_generator("generate", "--root", str(root)).status == 0
    before = tree(root)
    apply_overlay(root, INVALID_FIXTURES / "many-at-once")
    result = run_generator("generate", "--root", str(root), "--force")
    assert result.status == 2
    assert tree(root) == before
    assert not list(root.glob("generated*/.*new*")) and not list(root.glob(".*.new-*"))


def test_every_problem_in_one_run(tmp_path: Path) -> None:
    root = make_project(tmp_path, BASE_CASE)
    apply_overlay(root, INVALID_FIXTURES / "many-at-once")
    err = run_generator("validate", "--root", str(root)).err
    files = {line.split(":")[0] for line in err.splitlines()[:-1]}
    assert files == {"spec/methods/session-close.yaml", "spec/methods/session-new.yaml", "spec/types/broken.yaml"}


def test_spec_file_names_resolve_folders_not_files(tmp_path: Path) -> None:
    """A spec file is named relative to the root through its resolved folder, the file itself as written; the
    folder cache of a run gives the same names as `display_path`, and a spec outside the root keeps its path."""
    root = tmp_path / "project"
    (root / "real" / "methods").mkdir(parents=True)
    (root / "spec").symlink_to(root / "real")  # a symlinked folder is resolved
    (root / "real" / "methods" / "a.yaml").write_text("x")
    (root / "real" / "methods" / "b.yaml").symlink_to(root / "real" / "methods" / "a.yaml")  # a file is not
    snapshot = Snapshot(root / "spec", root)
    names = [snapshot.display(rel) for rel in ("methods/a.yaml", "methods/b.yaml", "top.yaml", "methods/a.yaml")]
    assert names == ["real/methods/a.yaml", "real/methods/b.yaml", "real/top.yaml", "real/methods/a.yaml"]
    assert names[:3] == [
        display_path(root / "spec" / rel, root) for rel in ("methods/a.yaml", "methods/b.yaml", "top.yaml")
    ]
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    assert Snapshot(outside, root).display("methods/a.yaml") == (outside / "methods/a.yaml").as_posix()
