"""One run reports every problem: an error in one place does not hide a key-parameter problem elsewhere."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from generator.diagnostics import SpecError
from generator.pipeline import load_spec
from tests.support import ROOT


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "spec", tmp_path / "spec")
    return tmp_path / "spec"


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _codes(spec: Path) -> list[str]:
    with pytest.raises(SpecError) as caught:
        load_spec(spec, spec.parent)
    return sorted(f"{d.location.file}:{d.code}" for d in caught.value.diagnostics)


def _make_key_required(spec: Path) -> None:
    _edit(
        spec / "types" / "prompt.yaml",
        "    required: [sessionId, prompt]",
        "    required: [sessionId, prompt, idempotencyKey]",
    )


def test_a_dangling_ref_in_the_params_type_does_not_hide_the_key_problem(spec: Path) -> None:
    _make_key_required(spec)
    # the dangling $ref sits in PromptRequest itself, beside the key parameter
    receives = "description: The session that receives the message.\n        $ref: '#/$defs/"
    _edit(spec / "types" / "prompt.yaml", receives + "SessionId'", receives + "NoSuchType'")
    codes = _codes(spec)
    assert "spec/methods/session-prompt.yaml:bad-key-param" in codes, codes
    assert "spec/types/prompt.yaml:unknown-type" in codes, codes


def test_an_invalid_kind_does_not_hide_the_key_problem(spec: Path) -> None:
    _make_key_required(spec)
    _edit(spec / "methods" / "session-prompt.yaml", "kind: request", "kind: reqest")
    codes = _codes(spec)
    assert "spec/methods/session-prompt.yaml:bad-key-param" in codes, codes
    assert "spec/methods/session-prompt.yaml:invalid-value" in codes, codes


def test_an_entry_without_a_worked_example_is_named(spec: Path) -> None:
    (spec / "examples" / "session-new.yaml").unlink()
    with pytest.raises(SpecError) as caught:
        load_spec(spec, spec.parent)
    (found,) = [d.format() for d in caught.value.diagnostics]
    assert found.startswith("spec/methods/session-new.yaml:"), found
    assert (
        "error[missing-example]: request 'session/new' has no worked example: add spec/examples/session-new.yaml"
        in (found)
    )


def test_a_broken_example_file_is_not_also_called_missing(spec: Path) -> None:
    (spec / "examples" / "session-new.yaml").write_text("steps: [\n", encoding="utf-8")
    codes = _codes(spec)
    assert codes == ["spec/examples/session-new.yaml:yaml-syntax"], codes


def test_a_discriminator_that_is_not_an_object_is_a_structure_error(spec: Path) -> None:
    # Found by the fuzz tests: a string in its place made the type page's renderer crash.
    text = (spec / "types" / "content.yaml").read_text(encoding="utf-8")
    start = text.index("discriminator:", text.index("  ContentBlock:"))
    end = text.index("\n  ", text.index("mapping:", start))
    while text[end + 1 : end + 9] == "        ":  # the mapping's entries
        end = text.index("\n", end + 1)
    (spec / "types" / "content.yaml").write_text(text[:start] + "discriminator: type" + text[end:], encoding="utf-8")
    codes = _codes(spec)
    assert "spec/types/content.yaml:wrong-type" in codes, codes


def test_a_ref_that_is_a_bare_name_is_reported_not_followed(spec: Path) -> None:
    # Found by the fuzz tests: the examples check followed it and crashed in the JSON Schema library.
    receives = "description: The session that receives the message.\n        $ref: "
    _edit(spec / "types" / "prompt.yaml", receives + "'#/$defs/SessionId'", receives + "AuthStatusRequest")
    codes = _codes(spec)
    assert codes == ["spec/types/prompt.yaml:bad-ref"], codes
