"""Every extensible union has the shape the TypeScript SDK's guard step reads (tests/sdk_pipelines/guard_shape.py).

Run on both files of the published v2 schema (the control, which must pass) and of ours. The checker itself is
tried on small hand-made unions first, one per rule, so a rule that stopped firing would show.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.sdk_pipelines import guard_shape
from tests.sdk_pipelines.conftest import SDK_GUARDS_FILE, Source

FILES = ("schema.json", "schema.unstable.json")


def sdk_guards(declarations: str) -> dict[str, list[str]]:
    """Each union's guards in the SDK's guards.gen.d.ts, `isCustom` (the catch-all's) left out."""
    out = {}
    for block in re.finditer(r"^export declare const (\w+): \{\n(.*?)^\};", declarations, re.DOTALL | re.MULTILINE):
        names = re.findall(r"^ {4}readonly is(\w+):", block.group(2), re.MULTILINE)
        out[block.group(1)] = sorted(name for name in names if name != "Custom")
    return out


def _catch_all(tags: list[str], key: str = "type", **extra: Any) -> dict[str, Any]:
    return {
        "title": "other",
        "type": "object",
        "properties": {key: {"type": "string"}},
        "required": [key],
        "not": {"anyOf": [{"properties": {key: {"type": "string", "const": tag}}} for tag in tags]},
        **extra,
    }


def _tagged(tag: str, ref: str, key: str = "type") -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {key: {"type": "string", "const": tag}},
        "required": [key],
        "allOf": [{"$ref": f"#/$defs/{ref}"}],
    }


def _schema(**unions: Any) -> dict[str, Any]:
    return {"$defs": {"A": {"type": "object"}, "B": {"type": "object"}, **unions}}


def test_checker_accepts_upstreams_shape() -> None:
    schema = _schema(U={"anyOf": [_tagged("a", "A"), _tagged("b", "B"), _catch_all(["a", "b"])]})
    assert guard_shape.guard_problems(schema) == []
    assert guard_shape.extensible_unions(schema)["U"] == guard_shape.Union("U", "type", ("a", "b"), ("A", "B"))


@pytest.mark.parametrize(
    ("variant", "expected"),
    [
        ({"$ref": "#/$defs/A"}, "known variant 'A' has neither allOf $refs nor a const-tagged 'type'"),
        (
            {"properties": {"type": {"type": "string"}}, "allOf": [{"$ref": "#/$defs/A"}]},
            "declares 'type' without a const",
        ),
        (_tagged("z", "A"), "known variant tag 'z' is not reserved"),
        (
            {
                **_tagged("a", "A"),
                "properties": {"type": {"const": "a"}, "n": {"type": "integer"}},
                "required": ["type", "n"],
            },
            "U.a: required property 'n' has a shape the guard step cannot re-check",
        ),
    ],
)
def test_checker_names_each_broken_rule(variant: dict[str, Any], expected: str) -> None:
    problems = guard_shape.guard_problems(_schema(U={"oneOf": [variant, _catch_all(["a"])]}))
    assert len(problems) == 1 and expected in problems[0], problems


def test_checker_reads_the_catch_all_and_the_unions_own_properties() -> None:
    loose = {"type": "array"}
    union = {
        "properties": {"items": loose},
        "required": ["items"],
        "anyOf": [_tagged("a", "A"), _catch_all(["a"], properties={"type": {}, "x": loose}, required=["type", "x"])],
    }
    problems = guard_shape.guard_problems(_schema(U=union))
    assert [p.split(":")[0] for p in problems] == ["U (the union's own properties)", "U (catch-all)"]
    salvaged = {**union, "properties": {"items": {**loose, guard_shape.SALVAGED: True}}}
    assert len(guard_shape.guard_problems(_schema(U=salvaged))) == 1
    assert guard_shape.extensible_unions(_schema(U={"oneOf": [_tagged("a", "A")]})) == {}  # no catch-all: no guards


@pytest.mark.parametrize("file_name", FILES)
def test_published_unions_have_the_guard_shape(file_name: str, sources: dict[str, Source]) -> None:
    schema = sources["published"].schema(file_name)
    assert guard_shape.extensible_unions(schema), "the published schema has no extensible union"
    assert guard_shape.guard_problems(schema) == []


def test_published_sdk_has_a_guard_for_each_variant_the_checker_finds(sources: dict[str, Source]) -> None:
    """The control of the checker's reading: the guards the published SDK ships for the unstable schema."""
    shipped = sdk_guards((sources["published"].directory / SDK_GUARDS_FILE).read_text(encoding="utf-8"))
    found = guard_shape.extensible_unions(sources["published"].schema("schema.unstable.json"))
    assert shipped, "no guards read from the published SDK"
    assert {name: sorted(union.guards) for name, union in found.items()} == shipped


@pytest.mark.parametrize("file_name", FILES)
def test_our_unions_have_the_guard_shape(file_name: str, sources: dict[str, Source]) -> None:
    problems = guard_shape.guard_problems(sources["ours"].schema(file_name))
    unions = {problem.split(":")[0].split(".")[0].split(" ")[0] for problem in problems}
    assert not problems, f"{len(problems)} problems in {len(unions)} unions:\n" + "\n".join(problems)


@pytest.mark.parametrize("file_name", FILES)
def test_ours_offers_the_guard_step_the_published_unions(file_name: str, sources: dict[str, Source]) -> None:
    """The SDK's step also stops when the unions it finds differ from the list it expects (upstream's)."""
    published = guard_shape.extensible_unions(sources["published"].schema(file_name))
    ours = guard_shape.extensible_unions(sources["ours"].schema(file_name))
    assert sorted(set(published) - set(ours)) == [], "unions the SDK expects that ours does not offer"
    assert sorted(set(ours) - set(published)) == [], "unions ours offers that the SDK does not expect"
    assert {name: ours[name].discriminant for name in ours} == {name: published[name].discriminant for name in ours}


def test_ours_gets_every_guard_the_published_sdk_has(sources: dict[str, Source]) -> None:
    """The SDK's hand-written layer calls guards by name (`ContentBlock.isText`), so each must still exist."""
    published = guard_shape.extensible_unions(sources["published"].schema("schema.unstable.json"))
    ours = guard_shape.extensible_unions(sources["ours"].schema("schema.unstable.json"))
    missing = [
        f"{name}.is{guard}"
        for name, union in published.items()
        for guard in union.guards
        if name in ours and guard not in ours[name].guards
    ]
    assert not missing, f"{len(missing)} guards missing: {', '.join(missing)}"
