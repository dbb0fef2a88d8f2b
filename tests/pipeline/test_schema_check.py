"""The compiled meta-schema check agrees with jsonschema's, so the fast path never hides a problem."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from generator import schema_check
from generator.diagnostics import SpecError
from generator.pipeline import load_spec
from generator.render import schema
from tests.support import ROOT, run_generator

SPEC = load_spec(ROOT / "spec", ROOT)
TYPES = {t.name: t.schema for t in SPEC.types}

# Ways to break a schema at its root, each a problem the meta-schema (or the regex format) names.
BREAKS: tuple[tuple[str, Any], ...] = (
    ("type", "strin"),
    ("type", ["string", "string"]),
    ("minLength", -1),
    ("maxItems", 1.5),
    ("pattern", "(?<name>a)"),  # ECMA-262 named group: not a Python regex
    ("pattern", "["),
    ("required", ["a", "a"]),
    ("required", "a"),
    ("properties", []),
    ("properties", {"a": 3}),
    ("patternProperties", {"(": {}}),
    ("anyOf", []),
    ("enum", "a"),
    ("$ref", 3),
    ("additionalProperties", "no"),
    ("items", [{"type": "string"}]),
    ("$defs", {"x": {"type": 7}}),
)


def _slow(value: Any) -> tuple[schema_check.Problem, ...]:
    """jsonschema's own answer, without the compiled shortcut."""
    ordered = json.loads(json.dumps(value, sort_keys=True))
    return tuple((tuple(e.absolute_path), e.message) for e in schema_check._full().iter_errors(ordered))


def test_real_types_are_valid_both_ways() -> None:
    for name, value in TYPES.items():
        assert schema_check.problems(value) == _slow(value) == (), name


@pytest.mark.parametrize(("key", "bad"), BREAKS, ids=[f"{k}={v!r}" for k, v in BREAKS])
def test_broken_types_are_reported_as_jsonschema_reports_them(key: str, bad: Any) -> None:
    for name, value in sorted(TYPES.items())[::10]:  # a spread of real types, each broken the same way
        broken = {**copy.deepcopy(value), key: bad}
        found = schema_check.problems(broken)
        assert found, f"{name} with {key}={bad!r} passed"
        assert found == _slow(broken)


def test_nested_problems_are_found() -> None:
    for value in TYPES.values():
        if "properties" not in value:
            continue
        broken = copy.deepcopy(value)
        first = sorted(broken["properties"])[0]
        broken["properties"][first] = {"type": "string", "pattern": "(?<n>x)"}
        assert (
            schema_check.problems(broken)
            == _slow(broken)
            == ((("properties", first, "pattern"), "'(?<n>x)' is not a 'regex'"),)
        )


def test_a_bundle_that_is_no_schema_is_refused() -> None:
    document = schema.bundle(SPEC, unstable=True)
    schema.check_bundle(document)
    document["$defs"][sorted(document["$defs"])[0]]["minLength"] = -1
    with pytest.raises(Exception, match="less than the minimum"):
        schema.check_bundle(document)


def test_a_bad_pattern_in_the_spec_is_a_diagnostic(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "spec", tmp_path / "spec")
    path = tmp_path / "spec" / "types" / "session.yaml"
    text = path.read_text(encoding="utf-8")
    anchor = "    type: string\n  ArchiveSessionRequest:\n"
    assert anchor in text
    path.write_text(text.replace(anchor, "    type: string\n    pattern: '(?<n>x)'\n" + anchor[17:]), encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_spec(tmp_path / "spec", tmp_path)
    report = caught.value.report()
    assert "spec/types/session.yaml:9:14: error[invalid-type-schema]" in report, report
    assert "is not a 'regex'" in report
    assert run_generator("generate", "--root", str(tmp_path)).status == 2
    assert not (tmp_path / "generated").exists()
