"""Renaming the vocabulary of spec/retry-classes.yaml is one edit plus `make generate`.

Failure kinds live only in that file, so renaming every one of them is a single edit. A class is also named by
the method files and the RetryClass type: after renaming it in the vocabulary, the validator names each place
that still uses the old name (no traceback), and once those follow, generation works again. The decision names
are the one fixed vocabulary (the generators turn each into code); renaming one is reported, not a crash.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml

from generator import paths
from generator.diagnostics import SpecError
from generator.pipeline import load_spec
from generator.render import render_all
from tests.support import ROOT

CLASSES = "retry-classes.yaml"


def _rename(text: str, old: str, new: str) -> str:
    """Replace `old` where it stands as a whole vocabulary word (not inside another name)."""
    return re.sub(rf"(?<![\w-]){re.escape(old)}(?![\w-])", new, text)


@pytest.fixture
def spec_copy(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "spec", tmp_path / "spec")
    return tmp_path


def _vocabulary(root: Path) -> dict:
    return yaml.safe_load((root / "spec" / CLASSES).read_text(encoding="utf-8"))


def _generate(root: Path) -> dict[str, str]:
    return render_all(load_spec(root / "spec", root))


def test_renaming_every_failure_kind_is_one_edit(spec_copy: Path) -> None:
    path = spec_copy / "spec" / CLASSES
    old_names = [f["name"] for f in _vocabulary(spec_copy)["failureKinds"]]
    new_names = [f"renamed-{i}-kind" for i in range(len(old_names))]
    text = path.read_text(encoding="utf-8")
    for old, new in zip(old_names, new_names, strict=True):
        text = _rename(text, old, new)
    path.write_text(text, encoding="utf-8")

    files = _generate(spec_copy)
    policy = json.loads(files[paths.POLICY])
    assert [f["name"] for f in policy["failureKinds"]] == new_names
    cases = json.loads(files[paths.DECISION_VECTORS])["cases"]
    assert {c["failure"] for c in cases} == set(new_names)
    for old in old_names:
        for output in (paths.POLICY, paths.TYPESCRIPT, paths.RUST, paths.PYTHON_RETRY, paths.RETRY_TABLE_PAGE):
            assert f'"{old}"' not in files[output], (old, output)
    assert "RENAMED_0_KIND" in files[paths.PYTHON_RETRY] and "Renamed0Kind" in files[paths.RUST]


def test_renaming_every_class_is_guided_by_the_validator(spec_copy: Path) -> None:
    path = spec_copy / "spec" / CLASSES
    old_names = [c["name"] for c in _vocabulary(spec_copy)["classes"]]
    renames = {old: f"class-{i}" for i, old in enumerate(old_names)}
    text = path.read_text(encoding="utf-8")
    for old, new in renames.items():
        text = _rename(text, old, new)
    path.write_text(text, encoding="utf-8")

    with pytest.raises(SpecError) as caught:
        load_spec(spec_copy / "spec", spec_copy)
    named = {d.location.file for d in caught.value.diagnostics}
    codes = {d.code for d in caught.value.diagnostics}
    assert codes <= {"unknown-class", "retry-class-enum-mismatch"}, codes
    assert named and all(p.startswith("spec/") for p in named)
    for relative in named:  # follow the validator: rename where it points
        target = spec_copy / relative
        content = target.read_text(encoding="utf-8")
        for old, new in renames.items():
            content = re.sub(rf"(class: |- ){re.escape(old)}\b(?![\w-])", rf"\g<1>{new}", content)
            content = content.replace(f"enum: [{old}", f"enum: [{new}").replace(f", {old}", f", {new}")
        target.write_text(content, encoding="utf-8")

    files = _generate(spec_copy)
    policy = json.loads(files[paths.POLICY])
    assert [c["name"] for c in policy["classes"]] == list(renames.values())
    assert {row["class"] for row in policy["methods"]} <= set(renames.values())
    assert policy["errorCodes"]["otherCodes"]["decisions"].keys() == set(renames.values())


def test_renaming_a_decision_is_reported_not_a_crash(spec_copy: Path) -> None:
    path = spec_copy / "spec" / CLASSES
    path.write_text(_rename(path.read_text(encoding="utf-8"), "opt-in", "ask-first"), encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_spec(spec_copy / "spec", spec_copy)
    assert "unknown-decision" in {d.code for d in caught.value.diagnostics}
