"""A retry-class change is never silent: before the first release tag `make compat` compares with ACP's published
schema, which has no classes, and spec/retry-class-baseline.yaml (the classes as the proposal states them) stands in.

The repository here is a clean clone as CI has it: the real spec committed, no tag, nothing uncommitted to compare
with. The method to change and the class it gets are chosen from the spec's data. The default report leads with
the breaks and the changes since the last commit, and summarises the known differences from the published schema.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from generator.diagnostics import SpecError
from generator.diff import baseline
from generator.pipeline import load_spec
from tests.support import ROOT, run_generator

BASELINE = "retry-class-baseline.yaml"


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=root, check=True)


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """The real spec committed with no release tag, the published schema's cache copied in (fetched otherwise)."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "spec", root / "spec")
    (root / "spec" / "accepted-breaks.yaml").write_text("accepted:\n", encoding="utf-8")  # the maintainer's aside
    if (ROOT / baseline.CACHE).is_dir():
        shutil.copytree(ROOT / baseline.CACHE, root / baseline.CACHE)
    _git(root, "init", "-q")
    _git(root, "add", "spec")
    _git(root, "commit", "-qm", "spec")
    return root


def _classes() -> list[str]:
    data = yaml.safe_load((ROOT / "spec" / "retry-classes.yaml").read_text(encoding="utf-8"))
    return [c["name"] for c in data["classes"]]


def _stable_method(root: Path, *, later: bool) -> tuple[Path, str, str, str]:
    """A stable method without variants: its file, name and class, and the least forgiving class (`later`) or the
    most forgiving one, whichever differs from its own."""
    classes = _classes()
    other = classes[-1] if later else classes[0]
    for path in sorted((root / "spec" / "methods").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        old = data["retry"]["class"]
        if data["stability"] == "stable" and "variants" not in data and old != other:
            return path, data["method"], old, other
    pytest.fail(f"no stable method has a class other than {other}")


def _set_class(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace(f"class: {old}", f"class: {new}", 1), encoding="utf-8")


def test_a_less_forgiving_class_fails_the_gate_with_no_tag_until_accepted(clone: Path) -> None:
    clean = run_generator("diff", "--root", str(clone))
    assert clean.status == 0 and clean.out == "", clean.out + clean.err
    path, method, old, new = _stable_method(clone, later=True)
    _set_class(path, old, new)
    _git(clone, "commit", "-qam", "a class changed")  # committed, as CI sees it: nothing uncommitted to compare with
    gate = run_generator("diff", "--root", str(clone))
    assert gate.status == 1, gate.out + gate.err
    said = f"breaking[retry-class-less-forgiving]: {method}: retry class {old} (as the proposal states it) became {new}"
    assert said in gate.out, gate.out
    assert f'subject: "{method}"' in gate.err  # the entry to add

    # appended below `accepted:` exactly as the file's comment and the maintainers' page show
    accepted = clone / "spec" / "accepted-breaks.yaml"
    entry = f"  - rule: retry-class-less-forgiving\n    subject: {method}\n    version: 0.1.0\n    reason: Meant.\n"
    accepted.write_text(accepted.read_text(encoding="utf-8") + entry, encoding="utf-8")
    passed = run_generator("diff", "--root", str(clone))
    assert passed.status == 0 and f"accepted[retry-class-less-forgiving]: {method}" in passed.out, passed.err

    # the class put back: the listed break no longer occurs, and the gate says so
    _set_class(path, new, old)
    unused = run_generator("diff", "--root", str(clone))
    assert unused.status == 1 and "breaking[accepted-break-unused]" in unused.out, unused.out


def test_a_variant_class_change_fails_the_gate_with_no_tag(clone: Path) -> None:
    classes = _classes()
    for path in sorted((clone / "spec" / "methods").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        stable = [v for v in data.get("variants", ()) if v["stability"] == "stable" and v["class"] != classes[-1]]
        if data["stability"] == "stable" and stable:
            break
    else:
        pytest.skip("no stable variant has a less forgiving class after its own")
    variant = stable[0]
    text = path.read_text(encoding="utf-8")
    head = f"- name: {variant['name']}\n"
    start = text.index(head)
    at = text.index(f"class: {variant['class']}", start)
    path.write_text(text[:at] + f"class: {classes[-1]}" + text[at + len(f"class: {variant['class']}") :], "utf-8")
    gate = run_generator("diff", "--root", str(clone))
    assert gate.status == 1, gate.out + gate.err
    assert f"breaking[variant-class-less-forgiving]: {data['method']}[{variant['name']}]" in gate.out, gate.out


def test_the_report_leads_with_the_maintainers_changes_and_summarises_the_rest(clone: Path) -> None:
    full = run_generator("diff", "--root", str(clone), "--full")
    known = full.out.splitlines()
    assert known and all("breaking[" not in line for line in known)
    quiet = run_generator("diff", "--root", str(clone))
    assert quiet.out == ""
    assert f"not shown: {len(known)} known differences from the published schema" in quiet.err
    assert "--full lists them" in quiet.err

    path, method, old, new = _stable_method(clone, later=False)
    _set_class(path, old, new)  # more forgiving: compatible, and the maintainer's own change
    mine = run_generator("diff", "--root", str(clone))
    assert mine.status == 0, mine.err
    assert mine.out.splitlines() == [
        line for line in run_generator("diff", "--root", str(clone), "--full").out.splitlines() if line not in known
    ]
    assert f"compatible[retry-class-more-forgiving]: {method}" in mine.out, mine.out


def test_sources_name_exactly_the_classes_the_proposal_fixes() -> None:
    """The entries whose source is the RFD are the keyed and duplicating ones: the classes the RFD fixes (a class
    that resends with a key or on opt-in, as the decisions say)."""
    vocabulary = yaml.safe_load((ROOT / "spec" / "retry-classes.yaml").read_text(encoding="utf-8"))
    fixed = {c["name"] for c in vocabulary["classes"] if set(c["decisions"].values()) & {"with-key", "opt-in"}}
    data = yaml.safe_load((ROOT / "spec" / BASELINE).read_text(encoding="utf-8"))
    assert {m["method"] for m in data["methods"] if m["source"] == "rfd"} == {
        m["method"] for m in data["methods"] if m["class"] in fixed
    }


def test_a_bad_baseline_gets_one_diagnostic_per_mistake_at_its_line(tmp_path: Path) -> None:
    spec = tmp_path / "spec"
    shutil.copytree(ROOT / "spec", spec)
    path = spec / BASELINE
    text = path.read_text(encoding="utf-8")
    first = text.index("    class: ")
    text = text[:first] + "    class: sometimes" + text[text.index("\n", first) :]
    second = text.index("    source: ", first)
    text = text[:second] + "    source: folklore" + text[text.index("\n", second) :]
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_spec(spec, tmp_path)
    found = sorted((d.location.file, d.location.line, d.code) for d in caught.value.diagnostics)
    lines = text.splitlines()
    where = [i + 1 for i, line in enumerate(lines) if "sometimes" in line or "folklore" in line]
    assert found == [
        ("spec/" + BASELINE, where[0], "unknown-class"),
        ("spec/" + BASELINE, where[1], "unknown-baseline-source"),
    ]
