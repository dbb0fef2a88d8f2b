"""The compiled meta-schema check agrees with jsonschema's, so the fast path never hides a problem."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from generator.check import schema_check
from generator.diagnostics import SpecError
from generator.pipeline import load_spec
from generator.render.schema import bundles as schema
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
    """jsonschema's own answer, without the compiled shortcut (its words, or ours for a `type` that is no JSON type)."""
    ordered = json.loads(json.dumps(value, sort_keys=True))
    return tuple(
        (tuple(e.absolute_path), schema_check._said(e)) for e in schema_check._full_meta().iter_errors(ordered)
    )


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


# -- instances: the compiled answer against jsonschema's ----------------------------------------------------------


def _instances(value: Any) -> list[Any]:
    """A value and broken copies of it: each field dropped, each field given a value of another JSON kind."""
    out = [value]
    if isinstance(value, dict):
        for key in sorted(value):
            out.append({k: v for k, v in value.items() if k != key})
            for other in (None, 7, "x", [], {}, True, 1.5):
                if type(other) is not type(value[key]):
                    out.append({**value, key: other})
    return out


def _agree(schema: dict[str, Any], instances: list[Any], fast: schema_check.Validator | None = None) -> None:
    fast = fast or schema_check.Validator(schema)
    from jsonschema import Draft202012Validator

    slow = Draft202012Validator(schema)
    for instance in instances:
        assert fast.is_valid(instance) == slow.is_valid(instance), (schema.get("$ref"), instance)
        assert [e.message for e in fast.iter_errors(instance)] == [e.message for e in slow.iter_errors(instance)]


def test_types_judge_values_as_jsonschema_does() -> None:
    from generator.render.docs import type_examples

    shown = type_examples.type_examples(SPEC)
    bundle = schema_check.TypeBundle(TYPES)
    for name in sorted(TYPES):
        candidates = [json.loads(shown[name])] if name in shown else []
        candidates += [type_examples._sample(TYPES[name], TYPES, 0), {}, [], "x", 0, None]
        instances = [i for c in candidates for i in _instances(c)]
        _agree({**bundle.root, "$ref": f"#/$defs/{name}"}, instances, bundle.validator(name))
        assert bundle.validator(name)._fast is not None  # the compiled path is the one tested


def test_spec_files_judged_as_jsonschema_does(tmp_path: Path) -> None:
    import yaml

    from generator.check.kinds import KINDS, META_DIR

    for kind in KINDS:
        meta = json.loads((ROOT / "spec" / META_DIR / kind.meta).read_text(encoding="utf-8"))
        files = sorted((ROOT / "spec").glob(kind.pattern))[:6]
        data = [yaml.safe_load(f.read_text(encoding="utf-8")) for f in files]
        _agree(meta, [i for d in data for i in _instances(d)])


@pytest.mark.parametrize(
    ("pattern", "plain"),
    [
        ("^[a-z][a-z0-9-]*$", True),
        ("^v?[0-9]+\\.[0-9]+\\.[0-9]+$", True),
        ("^[$A-Za-z_][A-Za-z0-9_/.$-]*$", True),
        ("^\\d+$", False),  # \d: Unicode digits in Python, ASCII in ECMA-262
        ("^\\W+$", False),
        ("(?<n>a)", False),
        ("(?=a)", False),
        ("[[:alpha:]]", False),
        ("[a-z&&[^aeiou]]", False),
        ("\\\\.", False),  # a backslash escaped: left to jsonschema
    ],
)
def test_plain_patterns(pattern: str, plain: bool) -> None:
    assert schema_check._plain(pattern) is plain


def test_schemas_with_other_patterns_are_left_to_jsonschema() -> None:
    digits = schema_check.Validator({"type": "string", "pattern": "^\\d+$"})
    assert digits.is_valid("١٢٣")  # Arabic-Indic digits: \d in Python's re
    assert not digits.is_valid("12a")
    named = schema_check.Validator({"type": "string", "pattern": "^(?P<n>a)$"})
    assert named.is_valid("a") and not named.is_valid("b")
    trailing = schema_check.Validator({"type": "string", "pattern": "^a$"})
    assert trailing.is_valid("a\n")  # Python's $ matches before a final newline; ECMA-262's does not
    odd = schema_check.Validator({"type": "number", "multipleOf": 0.1})
    assert odd.is_valid(0.3) is Draft202012ValidatorForTest({"type": "number", "multipleOf": 0.1}).is_valid(0.3)


def Draft202012ValidatorForTest(schema: dict[str, Any]) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema)
