"""generate writes and removes stale files; check names missing, changed and extra files and prints the fix."""

from __future__ import annotations

from pathlib import Path

from generator import paths
from tests.support import make_project, run_generator, tree


def test_check_reports_each_kind_of_drift(tmp_path: Path) -> None:
    root = make_project(tmp_path, "keyed")
    assert run_generator("generate", "--root", str(root)).status == 0
    assert run_generator("check", "--root", str(root)).status == 0

    (root / paths.POLICY).write_text("{}\n")
    (root / paths.method_page("session-new")).unlink()
    (root / "generated/schema/stale.json").write_text("{}\n")
    result = run_generator("check", "--root", str(root))
    assert result.status == 1
    assert f"changed: {paths.POLICY}" in result.err
    assert f"missing: {paths.method_page('session-new')}" in result.err
    assert "extra:   generated/schema/stale.json" in result.err
    assert "make generate" in result.err


def test_generate_repairs_drift_and_removes_stale_files(tmp_path: Path) -> None:
    root = make_project(tmp_path, "keyed")
    assert run_generator("generate", "--root", str(root)).status == 0
    good = tree(root)
    (root / paths.POLICY).write_text("{}\n")
    (root / "generated/schema/stale.json").write_text("{}\n")
    # the no-op shortcut must notice hand edits to outputs, not only changes to inputs
    assert run_generator("generate", "--root", str(root)).status == 0
    assert tree(root) == good
    assert run_generator("check", "--root", str(root)).status == 0


def test_noop_generate_skips_work_and_spec_edits_are_seen(tmp_path: Path) -> None:
    root = make_project(tmp_path, "keyed")
    assert run_generator("generate", "--root", str(root)).status == 0
    assert "up to date" in run_generator("generate", "--root", str(root)).out
    method = root / "spec/methods/session-new.yaml"
    method.write_text(method.read_text().replace("Creates a session.", "Creates a new session."))
    result = run_generator("generate", "--root", str(root))
    assert "up to date" not in result.out
    assert "Creates a new session." in (root / paths.method_page("session-new")).read_text()


def test_removed_method_loses_its_page(tmp_path: Path) -> None:
    root = make_project(tmp_path, "keyed")
    assert run_generator("generate", "--root", str(root)).status == 0
    (root / "spec/methods/session-close.yaml").unlink()
    assert run_generator("check", "--root", str(root)).status == 1
    assert run_generator("generate", "--root", str(root)).status == 0
    assert not (root / "site/reference/methods/session-close.md").exists()
