"""The command around the rules: sources (directories, git revisions, schema files), errors, releases."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from tests.diff.support import build_side, copy_real_spec
from tests.support import ROOT, run_generator


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
        check=True,
        capture_output=True,
    )


def _repo(tmp: Path) -> Path:
    """A repository whose spec/ is the diff base spec, committed."""
    build_side(tmp, None, "repo")
    root = tmp / "repo"
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    return root


def test_real_spec_against_itself_is_empty(tmp_path: Path) -> None:
    spec = copy_real_spec(tmp_path / "spec")
    result = run_generator("diff", str(spec), str(spec), "--root", str(tmp_path), "--all")
    assert (result.status, result.out) == (0, "")
    assert "no changes" in result.err


def test_no_release_tag_and_no_published_schema_is_an_error_not_a_pass(tmp_path: Path, monkeypatch) -> None:
    # Before the first tag the baseline is ACP's published stable schema (tests/upstream/test_compat_baseline.py);
    # when it cannot be had, the gate says so and fails rather than passing with nothing checked.
    from generator.diff import baseline
    from generator.read.fetch import FetchError

    def unreachable(root: Path) -> Path:
        raise FetchError("npm is not installed")

    monkeypatch.setattr(baseline, "stable_schema", unreachable)
    root = _repo(tmp_path)
    result = run_generator("diff", "--root", str(root))
    assert result.status == 2
    assert "no v* release tag yet, and @agentclientprotocol/sdk@2.4.0 schema/v2/schema.json" in result.err
    assert "cannot be fetched: npm is not installed" in result.err


def test_newest_release_is_the_default_baseline_and_old_paths_name_the_revision(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    _git(root, "tag", "v0.1.0")
    (root / "spec" / "methods" / "session-close.yaml").write_text("method: session/list\n")  # a broken work tree
    result = run_generator("diff", "--root", str(root))
    assert result.status == 2 and "Traceback" not in result.err
    assert result.err.startswith("spec/methods/session-close.yaml:")
    _git(root, "checkout", "-q", "--", "spec")
    (root / "spec" / "methods" / "session-fork.yaml").unlink()
    before = sorted(p.name for p in (root / "spec" / "methods").iterdir())
    result = run_generator("diff", "--root", str(root), "--format", "json")
    assert result.status == 0, result.err  # session/fork was unstable
    rows = json.loads(result.out)
    removed = [r for r in rows if r["rule"] == "method-removed"]
    assert removed and removed[0]["path"] == "v0.1.0:spec/methods/session-fork.yaml"
    assert removed[0]["severity"] == "unstable"
    assert sorted(p.name for p in (root / "spec" / "methods").iterdir()) == before  # work tree untouched


def test_accepted_breaks_are_scoped_by_release(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    _git(root, "tag", "v1.0.0")
    new = root / "spec" / "methods" / "session-new.yaml"
    new.write_text(new.read_text().replace("class: duplicating", "class: unsafe"))
    accepted = root / "spec" / "accepted-breaks.yaml"
    entry = (
        "  - rule: retry-class-less-forgiving\n    subject: session/new\n    version: {v}\n    reason: On purpose.\n"
    )
    accepted.write_text("accepted:\n" + entry.format(v="1.1.0"))
    result = run_generator("diff", "--root", str(root))
    assert result.status == 0 and "accepted[retry-class-less-forgiving]" in result.out
    # an entry for an earlier release does not apply (and is not "unused") between v1.0.0 and now
    accepted.write_text("accepted:\n" + entry.format(v="1.0.0"))
    result = run_generator("diff", "--root", str(root))
    assert result.status == 1 and "breaking[retry-class-less-forgiving]" in result.out
    assert "accepted-break-unused" not in result.out
    # the report says how a deliberate break is accepted, with an entry to copy
    assert "list it in spec/accepted-breaks.yaml under `accepted:`" in result.err
    assert '- {rule: retry-class-less-forgiving, subject: "session/new", version: X.Y.Z, reason: ...}' in result.err


def test_bad_accepted_breaks_file_gets_positions_and_exit_2(tmp_path: Path) -> None:
    old = build_side(tmp_path, None, "old")
    new = build_side(tmp_path, None, "new")
    (new / "accepted-breaks.yaml").write_text(
        "accepted:\n"
        "  - rule: no-such-rule\n    subject: x\n    version: 1.0.0\n    reason: r\n"
        "  - rule: method-added\n    subject: x\n    version: 1.0.0\n    reason: r\n"
        "  - rule: method-removed\n    subject: x\n    version: soon\n    reason: r\n"
    )
    result = run_generator("diff", str(old), str(new), "--root", str(tmp_path))
    assert result.status == 2
    assert "Traceback" not in result.err
    lines = result.err.splitlines()
    assert lines[:-1] == [
        "new/spec/accepted-breaks.yaml:2:11: error[unknown-rule]: 'no-such-rule' is not a rule id "
        "(at accepted[0].rule)",
        "new/spec/accepted-breaks.yaml:6:11: error[not-a-breaking-rule]: rule 'method-added' is never breaking, so "
        "there is nothing to accept (at accepted[1].rule)",
        "new/spec/accepted-breaks.yaml:12:14: error[invalid-format]: 'soon' does not match the pattern "
        "^v?[0-9]+\\.[0-9]+\\.[0-9]+$ (at accepted[2].version)",
    ]
    assert lines[-1] == "3 errors; nothing was compared."
    # the same file fails `generate` too: it is checked by the loader with the rest of the spec
    shutil.copytree(new, tmp_path / "proj" / "spec")
    assert run_generator("validate", "--root", str(tmp_path / "proj")).status == 2


def test_errors_in_both_sides_are_reported_at_once(tmp_path: Path) -> None:
    old = build_side(tmp_path, None, "old")
    new = build_side(tmp_path, None, "new")
    for side in (old, new):
        (side / "methods" / "session-new.yaml").write_text("method: session/new\n")
    result = run_generator("diff", str(old), str(new), "--root", str(tmp_path))
    assert result.status == 2
    files = {line.split(":")[0] for line in result.err.splitlines()[:-1]}
    assert files == {"old/spec/methods/session-new.yaml", "new/spec/methods/session-new.yaml"}


def test_an_argument_that_names_nothing(tmp_path: Path) -> None:
    result = run_generator("diff", "no-such-thing", "--root", str(ROOT))
    assert result.status == 2
    assert result.err.startswith("diff: 'no-such-thing' is not a spec directory")


def test_a_spec_against_its_own_generated_schema_is_empty() -> None:
    schema = ROOT / "generated" / "schema" / "schema.unstable.json"
    result = run_generator("diff", str(ROOT / "spec"), str(schema), "--root", str(ROOT))
    assert (result.status, result.out) == (0, "")


def test_bad_json_schema_file(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('{"$defs": {}}\n')
    (tmp_path / "b.json").write_text('{"$defs": {\n  "X": }\n')
    result = run_generator("diff", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--root", str(tmp_path))
    assert result.status == 2
    assert result.err.startswith("b.json:2:8: error[invalid-json]: ")
