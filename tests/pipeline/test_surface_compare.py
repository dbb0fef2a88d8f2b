"""The def-by-def comparison of the two files on small documents: presence, required-ness, stability, scope."""

from __future__ import annotations

from generator.audit.schema_compare import Difference
from generator.audit.surface_compare import presence, scoped, stability


def _obj(*props: str, required: tuple[str, ...] = ()) -> dict[str, object]:
    return {"type": "object", "properties": {p: {"type": "string"} for p in props}, "required": list(required)}


def test_defs_properties_and_required_ness() -> None:
    ours = {"A": _obj("x", "y", required=("x",)), "Ours": _obj()}
    theirs = {"A": _obj("x", "z"), "Theirs": _obj()}
    assert sorted(d.line() for d in presence(ours, theirs)) == [
        "type A.x: required here, optional there",
        "type A: property y only here (optional)",
        "type A: property z only there (optional)",
        "type Ours: defined here only",
        "type Theirs: defined there only",
    ]
    assert presence(ours, theirs, skip={"Ours", "A.y"}) == presence(ours, theirs) - {
        Difference("type Ours", "defined here only"),
        Difference("type A", "property y only here (optional)"),
    }


def test_stability_of_defs_and_properties_both_unstable_files_have() -> None:
    every = {"A": _obj("p", "q"), "B": _obj(), "C": _obj("r")}
    ours = ({"A": _obj("p"), "C": _obj("r")}, every)  # B unstable, A.q unstable
    theirs = ({"A": _obj("p", "q"), "B": _obj()}, every)  # C unstable
    found, explained = stability(ours, theirs)
    assert sorted(d.line() for d in found) == [
        "type A.q: unstable here, stable there",
        "type B: unstable here, stable there",
        "type C: stable here, unstable there",
    ]
    assert explained == {"A.q", "B", "C"}


def test_a_difference_in_one_file_only_says_which() -> None:
    both, stable_only, unstable_only = Difference("a", "x"), Difference("b", "y"), Difference("c", "z")
    lines = [d.line() for d in scoped({both, stable_only}, {both, unstable_only})]
    assert lines == ["a: x", "b: y [in schema.json only]", "c: z [in schema.unstable.json only]"]
