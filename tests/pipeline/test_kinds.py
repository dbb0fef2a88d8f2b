"""One loader for every spec file kind: each kind is a table entry, and a new entry is all a new kind needs."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from generator import pipeline
from generator.check import kinds
from generator.diagnostics import SpecError
from tests.faults.support import real_project
from tests.support import ROOT


def test_every_kind_has_its_meta_schema_and_every_spec_file_a_kind() -> None:
    for kind in kinds.KINDS:
        assert (ROOT / "spec" / kinds.META_DIR / kind.meta).is_file(), kind.name
    snapshot = pipeline.read_spec(ROOT / "spec", ROOT)
    yaml_files = sorted(p.relative_to(ROOT / "spec").as_posix() for p in (ROOT / "spec").rglob("*.yaml"))
    assert sorted(rel for rel in snapshot.files if rel.endswith(".yaml")) == yaml_files


def test_a_new_kind_is_one_table_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = real_project(tmp_path)
    meta = {"type": "object", "required": ["notes"], "properties": {"notes": {"type": "array"}}}
    (root / "spec/meta/notes.schema.json").write_text(json.dumps(meta), encoding="utf-8")
    (root / "spec/notes").mkdir()
    (root / "spec/notes/good.yaml").write_text("notes: [a, b]\n", encoding="utf-8")
    (root / "spec/notes/bad.yaml").write_text("title: x\nnotes: 5\n", encoding="utf-8")
    seen: list[str] = []

    def check(checker) -> None:  # a meaning check sees only the structurally sound files of its kind
        for doc in checker.docs["notes"]:
            seen.append(doc.display)
            checker.error(doc, ("notes", 1), "invalid-value", "the second note is not welcome")

    entry = kinds.SpecKind("notes", "notes/*.yaml", "notes.schema.json", check)
    monkeypatch.setattr(pipeline, "KINDS", (*kinds.KINDS, entry))
    with pytest.raises(SpecError) as caught:
        pipeline.load_spec(root / "spec", root)
    lines = [d.format() for d in caught.value.diagnostics]
    assert lines == [
        "spec/notes/bad.yaml:2:8: error[wrong-type]: expected a list, found integer 5 (at notes)",
        "spec/notes/good.yaml:1:12: error[invalid-value]: the second note is not welcome (at notes[1])",
    ]
    assert seen == ["spec/notes/good.yaml"]


def test_a_required_kind_without_files_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = real_project(tmp_path)
    (root / "spec/meta/notes.schema.json").write_text("{}", encoding="utf-8")
    entry = kinds.SpecKind("notes", "notes/*.yaml", "notes.schema.json", lambda checker: None)
    entry = dataclasses.replace(entry, missing=("missing-file", "the notes are missing"))
    monkeypatch.setattr(pipeline, "KINDS", (*kinds.KINDS, entry))
    with pytest.raises(SpecError) as caught:
        pipeline.load_spec(root / "spec", root)
    assert [d.format() for d in caught.value.diagnostics] == [
        "spec/notes:1:1: error[missing-file]: the notes are missing"
    ]
