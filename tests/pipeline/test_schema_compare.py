"""The schema comparison on small documents: each kind of wire difference, and what is not one."""

from __future__ import annotations

from typing import Any

from generator.audit.schema_compare import OurEntry, compare_schemas

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


def _envelope(refs: list[str], *, ours: bool) -> dict[str, Any]:
    """A request envelope carrying `refs`: ours as model/envelopes.py writes it, theirs as ACP publishes it."""
    branches = [{"$ref": f"#/$defs/{r}"} if ours else {"title": r, "allOf": [{"$ref": f"#/$defs/{r}"}]} for r in refs]
    envelope = {
        "type": "object",
        "properties": {
            "id": {"$ref": "#/$defs/Id"},
            "method": {"type": "string"},
            "params": {"anyOf": [{"anyOf": branches}, {"type": "null"}]},
        },
        "required": ["id", "method"],
    }
    return {"x-envelope": {"message": "request", "from": "client"}, **envelope} if ours else envelope


TWO = {
    ("thing/do", "request"): OurEntry("thing/do", "request", "stable", "DoRequest", "DoResponse"),
    ("thing/undo", "request"): OurEntry("thing/undo", "request", "stable", "UndoRequest", None),
}


def _envelope_specs(ours_refs: list[str], theirs_refs: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    plain = {"Id": {"type": "string"}, "DoRequest": {"type": "object"}, "DoResponse": {"type": "object"}}
    plain |= {"UndoRequest": {"type": "object"}, "Ext": {}}
    ours = {**plain, "ClientRequest": _envelope(ours_refs, ours=True)}
    theirs = {"$defs": {**plain, "ClientRequest": _envelope(theirs_refs, ours=False)}}
    theirs["$defs"]["DoRequest"] = {"x-method": "thing/do", "type": "object"}
    theirs["$defs"]["DoResponse"] = {"x-method": "thing/do", "type": "object"}
    theirs["$defs"]["UndoRequest"] = {"x-method": "thing/undo", "type": "object"}
    return ours, theirs


def test_envelope_members_in_the_same_order_are_no_difference() -> None:
    ours, theirs = _envelope_specs(["DoRequest", "UndoRequest", "Ext"], ["DoRequest", "UndoRequest", "Ext"])
    assert _lines(ours, theirs, entries=TWO) == []


def test_envelope_members_in_another_order_are_a_difference() -> None:
    # First-match consumers (zod unions) pick the first member that accepts a message, so the order is the shape.
    ours, theirs = _envelope_specs(["DoRequest", "UndoRequest", "Ext"], ["UndoRequest", "Ext", "DoRequest"])
    assert _lines(ours, theirs, entries=TWO) == [
        "type ClientRequest: member 1 is the params of thing/do (request) here, the params of thing/undo (request)"
        " there (another order)"
    ]


def test_a_method_one_envelope_carries_on_one_side_only() -> None:
    ours, theirs = _envelope_specs(["DoRequest", "UndoRequest", "Ext"], ["DoRequest", "Ext"])
    assert _lines(ours, theirs, entries=TWO) == [
        "type ClientRequest: carries the params of thing/undo (request) here only"
    ]
    ours, theirs = _envelope_specs(["DoRequest"], ["DoRequest", "Ext"])
    assert _lines(ours, theirs, entries=TWO) == ["type ClientRequest: carries type Ext there only"]


def test_the_rest_of_an_envelope_is_compared_like_any_schema() -> None:
    ours, theirs = _envelope_specs(["DoRequest"], ["DoRequest"])
    theirs["$defs"]["ClientRequest"]["required"] = ["method"]
    assert _lines(ours, theirs, entries=TWO) == ["type ClientRequest.id: required here, optional there"]
    del theirs["$defs"]["ClientRequest"]
    assert _lines(ours, theirs, entries=TWO) == ["type ClientRequest: an envelope here, not defined there"]


def test_a_union_written_through_a_named_union_is_the_same_union() -> None:
    # ours: Id | null with Id = integer | string; theirs: integer | string | null, written out
    ours = {
        "DoRequest": {"type": "object", "properties": {"id": {"anyOf": [{"$ref": "#/$defs/Id"}, {"type": "null"}]}}},
        "Id": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "DoResponse": {"type": "object"},
    }
    flat = {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]}
    assert _lines(ours, _published({"type": "object", "properties": {"id": flat}})) == []
    flat["anyOf"][1] = {"type": "boolean"}
    assert _lines(ours, _published({"type": "object", "properties": {"id": flat}})) != []
