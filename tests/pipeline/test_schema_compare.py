"""The schema comparison on small documents: each kind of wire difference, and what is not one."""

from __future__ import annotations

from typing import Any

from generator.schema_compare import OurEntry, compare_schemas

ENTRY = {("thing/do", "request"): OurEntry("thing/do", "request", "stable", "DoRequest", "DoResponse")}


def _published(params: dict[str, Any], result: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    defs = {
        "DoRequest": {"x-method": "thing/do", **params},
        "DoResponse": {"x-method": "thing/do", **(result or {"type": "object"})},
        **extra,
    }
    return {"$defs": defs}


def _lines(ours: dict[str, Any], published: dict[str, Any], **kwargs: Any) -> list[str]:
    entries = kwargs.pop("entries", ENTRY)
    return [d.line() for d in compare_schemas(entries, ours, published, **kwargs)]


def test_identical_shapes_with_other_names_and_prose_are_no_difference() -> None:
    ours = {
        "DoRequest": {"type": "object", "description": "ours", "properties": {"n": {"$ref": "#/$defs/Count"}}},
        "Count": {"type": "integer", "description": "how many"},
        "DoResponse": {"type": "object"},
    }
    theirs = _published(
        {"type": "object", "properties": {"n": {"$ref": "#/$defs/Number"}}}, Number={"type": "integer", "title": "N"}
    )
    assert _lines(ours, theirs) == []


def test_property_required_type_and_nullability_differences() -> None:
    ours = {
        "DoRequest": {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}, "c": {"type": "string"}},
            "required": ["a"],
        },
        "DoResponse": {"type": "object"},
    }
    theirs = _published(
        {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "c": {"type": ["string", "null"]}},
            "required": [],
        }
    )
    assert _lines(ours, theirs) == [
        "type DoRequest.a: required here, optional there",
        'type DoRequest.b: type here "integer", there "string"',
        "type DoRequest.c: nullable there, not here",
    ]


def test_methods_on_one_side_only_and_stability() -> None:
    entries = {
        **ENTRY,
        ("only/here", "notification"): OurEntry("only/here", "notification", "unstable", None, None),
    }
    ours = {"DoRequest": {"type": "object"}, "DoResponse": {"type": "object"}}
    theirs = _published({"type": "object"}, Extra={"x-method": "only/there", "type": "object"})
    assert _lines(ours, theirs, entries=entries, published_stable={"$defs": {}}) == [
        "method only/here (notification): here, but not in the published schema",
        "method only/there (request): published there, but has no retry class here",
        "method thing/do (request): stable here, unstable there",
    ]


def test_a_union_open_there_and_closed_here() -> None:
    variant = {"type": "object", "properties": {"kind": {"const": "a"}}, "required": ["kind"]}
    ours = {"DoRequest": {"oneOf": [variant]}, "DoResponse": {"type": "object"}}
    open_branch = {"type": "object", "not": {"properties": {"kind": {"const": "a"}}}}
    theirs = _published({"anyOf": [variant, open_branch]})
    assert _lines(ours, theirs) == ["type DoRequest: unknown kind values accepted there, rejected here"]


def test_a_variant_only_on_one_side() -> None:
    def variant(tag: str) -> dict[str, Any]:
        return {"type": "object", "properties": {"kind": {"const": tag}}}

    ours = {"DoRequest": {"oneOf": [variant("a"), variant("b")]}, "DoResponse": {"type": "object"}}
    theirs = _published({"oneOf": [variant("a"), variant("c")]})
    assert _lines(ours, theirs) == [
        "type DoRequest: variant kind=b only here",
        "type DoRequest: variant kind=c only there",
    ]


def test_the_inputs_are_not_changed() -> None:
    ours = {"DoRequest": {"type": "object", "properties": {"a": {"type": "string"}}}, "DoResponse": {"type": "object"}}
    theirs = _published({"type": "object"})
    before = repr((ours, theirs))
    _lines(ours, theirs)
    assert repr((ours, theirs)) == before
