"""`make compat` before the first release: the work tree against the stable schema ACP publishes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from generator.diff import baseline
from tests.support import ROOT, run_generator


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with the real spec committed and no release tag (the published schema cache copied in)."""
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "spec", root / "spec")
    cached = ROOT / baseline.CACHE
    if cached.is_dir():
        shutil.copytree(cached, root / baseline.CACHE)
    for args in (("init", "-q"), ("add", "spec"), ("commit", "-qm", "spec")):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=root, check=True)
    return root


def test_with_no_tag_the_published_stable_schema_is_the_baseline(repo: Path) -> None:
    result = run_generator("diff", "--root", str(repo))
    assert "no v* release tag yet: comparing the work tree with @agentclientprotocol/sdk@2.4.0" in result.err
    assert "breaking[" not in result.out, result.out
    assert result.status == 0, result.err


def _break_a_stable_type(repo: Path) -> None:
    """session/list's cwd filter stops accepting null: a Client that sends null, as ACP allows, is refused."""
    session = repo / "spec" / "types" / "session.yaml"
    old = "        anyOf:\n        - $ref: '#/$defs/AbsolutePath'\n        - type: 'null'\n      cursor:"
    text = session.read_text(encoding="utf-8")
    assert old in text
    session.write_text(text.replace(old, "        $ref: '#/$defs/AbsolutePath'\n      cursor:"), encoding="utf-8")


def test_a_break_of_a_stable_type_fails_with_no_tag(repo: Path) -> None:
    _break_a_stable_type(repo)
    result = run_generator("diff", "--root", str(repo))
    assert result.status == 1, result.out + result.err
    assert "breaking[nullability-removed]: ListSessionsRequest.cwd: no longer accepts null" in result.out, result.out
    assert "list it in spec/accepted-breaks.yaml" in result.err


def test_a_break_accepted_before_the_first_release_passes_the_gate(repo: Path) -> None:
    """Before any tag the baseline is ACP's published schema; a break listed in spec/accepted-breaks.yaml passes it
    (the entry was once dropped on the way to that comparison, so the gate failed whatever the maintainer listed).
    A listed break this comparison does not find is not called unused: a published schema cannot show every break
    the spec may accept (a retry class made less forgiving, say); the gate against a release tag can."""
    accepted = repo / "spec" / "accepted-breaks.yaml"
    entry = (
        "accepted:\n  - rule: nullability-removed\n    subject: ListSessionsRequest.cwd\n    version: 0.1.0\n"
        "    reason: The filter needs a directory.\n"
    )
    text = accepted.read_text(encoding="utf-8")
    if "accepted: []" in text:
        accepted.write_text(text.replace("accepted: []", entry), encoding="utf-8")
    else:  # entries of the maintainer's own come first
        accepted.write_text(text.rstrip("\n") + "\n" + entry.removeprefix("accepted:\n"), encoding="utf-8")
    before = run_generator("diff", "--root", str(repo))
    assert before.status == 0 and "accepted-break-unused" not in before.out, before.out + before.err

    _break_a_stable_type(repo)
    result = run_generator("diff", "--root", str(repo))
    assert result.status == 0, result.out + result.err
    assert "accepted[nullability-removed]: ListSessionsRequest.cwd" in result.out, result.out
