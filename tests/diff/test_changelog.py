"""The Changes page: one section per release and one for the work tree, grouped by severity, with links."""

from __future__ import annotations

from pathlib import Path

from generator.diff.changelog import changes_page
from tests.diff.test_cli import _git, _repo


def test_changes_page_has_each_release_and_the_work_tree(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    _git(root, "tag", "v0.1.0")
    new = root / "spec" / "methods" / "session-new.yaml"
    new.write_text(new.read_text().replace("class: duplicating", "class: safe"))
    _git(root, "commit", "-qam", "session/new is safe")
    _git(root, "tag", "v0.2.0")
    types = root / "spec" / "types" / "session.yaml"
    types.write_text(types.read_text().replace("    required: [cwd]\n", "    required: [cwd, tags]\n"))

    page = changes_page(root)
    sections = [line for line in page.splitlines() if line.startswith("## ")]
    assert sections == ["## Unreleased", "## v0.2.0", "## v0.1.0"]
    unreleased = page.split("## v0.2.0")[0]
    assert "Compared with v0.2.0." in unreleased
    assert "### Breaking (1)" in unreleased
    assert (
        "- [`NewSessionRequest.tags`](types/session.md#NewSessionRequest): now required "
        "([`property-made-required`](compatibility-rules.md#property-made-required))"
    ) in unreleased
    release = page.split("## v0.2.0")[1].split("## v0.1.0")[0]
    assert "### Compatible (1)" in release
    assert "[`session/new`](methods/session-new.md): retry class duplicating became safe" in release
    assert "The first release" in page.split("## v0.1.0")[1]
