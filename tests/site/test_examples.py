"""Worked examples are data: every method entry has one, and a bad one stops generation with a diagnostic."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from generator.diagnostics import SpecError
from generator.pipeline import load_spec

from .conftest import ROOT

SPEC = ROOT / "spec"


def test_every_entry_has_an_example_checked_against_its_types():
    spec = load_spec(SPEC, ROOT)
    missing = [m.name for m in spec.methods if m.example is None]
    assert missing == []
    prompt = next(m for m in spec.methods if m.name == "session/prompt")
    attempts = [s.message for s in prompt.example.steps if "method" in s.message]
    assert len({a["id"] for a in attempts}) == len(attempts) > 1
    assert len({a["params"]["idempotencyKey"] for a in attempts}) == 1


@pytest.fixture
def spec_copy(tmp_path: Path) -> Path:
    target = tmp_path / "spec"
    shutil.copytree(SPEC, target)
    return target


def _codes(spec_dir: Path, root: Path) -> list[str]:
    with pytest.raises(SpecError) as caught:
        load_spec(spec_dir, root)
    return [d.format() for d in caught.value.diagnostics]


def _replace(path: Path, old: str, new: str, count: int = -1) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, count), encoding="utf-8")


def test_params_that_break_the_schema_are_reported_at_their_line(spec_copy: Path, tmp_path: Path):
    example = spec_copy / "examples" / "session-prompt.yaml"
    _replace(example, "idempotencyKey: 3f6c2a9e-85d1-4c7b-9e0a-6b14f2d8c5a7", 'idempotencyKey: ""')
    lines = _codes(spec_copy, tmp_path)
    assert len(lines) == 2
    assert all(line.startswith("spec/examples/session-prompt.yaml:") for line in lines)
    assert all("error[example-invalid-params]" in line and "idempotencyKey" in line for line in lines)
    line_number = int(lines[0].split(":")[1])
    assert 'idempotencyKey: ""' in example.read_text(encoding="utf-8").splitlines()[line_number - 1]


def test_retry_with_another_key_or_the_same_id_is_reported(spec_copy: Path, tmp_path: Path):
    example = spec_copy / "examples" / "session-prompt.yaml"
    text = example.read_text(encoding="utf-8")
    last = text.rindex("3f6c2a9e-85d1-4c7b-9e0a-6b14f2d8c5a7")
    text = text[:last] + "0000" + text[last + 4 :]
    example.write_text(text.replace("id: 57", "id: 41"), encoding="utf-8")
    lines = "\n".join(_codes(spec_copy, tmp_path))
    assert "error[example-key-mismatch]" in lines
    assert "error[example-duplicate-id]" in lines
    # the message names the fault (which attempt, which key), not only the rule
    assert (
        "attempt 2 carries idempotencyKey '00002a9e-85d1-4c7b-9e0a-6b14f2d8c5a7', "
        "but an earlier attempt carries '3f6c2a9e-85d1-4c7b-9e0a-6b14f2d8c5a7'"
    ) in lines


def test_an_example_for_no_method_is_reported(spec_copy: Path, tmp_path: Path):
    shutil.copy(spec_copy / "examples" / "session-new.yaml", spec_copy / "examples" / "session-renew.yaml")
    lines = _codes(spec_copy, tmp_path)
    assert lines == [
        "spec/examples/session-renew.yaml:2:1: error[unknown-example]: no method entry has the slug "
        "'session-renew'; name an example after its method's page, such as session-prompt.yaml"
    ]


def test_an_example_of_another_method_is_reported(spec_copy: Path, tmp_path: Path):
    _replace(spec_copy / "examples" / "session-delete.yaml", "method: session/delete", "method: session/archive")
    lines = _codes(spec_copy, tmp_path)
    assert lines and all("error[example-method-mismatch]" in line for line in lines)
