"""Forms of the published schema that code generators read, checked against the published schema itself.

Generators name models by titles, try union members in order and read an open branch on its own, so these three
must be as ACP writes them: every title ACP gives (ours may add titles for its additions), each envelope's members
in ACP's order, and a catch-all branch that repeats none of its union's own fields.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.sdk_pipelines.conftest import Source

FILES = ("schema.json", "schema.unstable.json")


def _titles(node: Any, found: set[str]) -> set[str]:
    if isinstance(node, dict):
        if isinstance(node.get("title"), str):
            found.add(node["title"])
        for value in node.values():
            _titles(value, found)
    elif isinstance(node, list):
        for value in node:
            _titles(value, found)
    return found


@pytest.mark.parametrize("file_name", FILES)
def test_every_title_the_published_schema_gives_ours_gives_in_the_same_type(
    sources: dict[str, Source], file_name: str
) -> None:
    theirs, ours = sources["published"].schema(file_name)["$defs"], sources["ours"].schema(file_name)["$defs"]
    missing = {
        name: sorted(_titles(schema, set()) - _titles(ours[name], set()))
        for name, schema in theirs.items()
        if name in ours
    }
    assert {name: titles for name, titles in missing.items() if titles} == {}


def _members(envelope: dict[str, Any]) -> list[str]:
    """The titles of an envelope's payload members (params, or a response's result), in order."""
    branches = envelope.get("anyOf") or [envelope]
    for branch in branches:
        for payload in ("params", "result"):
            union = (branch.get("properties") or {}).get(payload)
            if isinstance(union, dict):
                inner = union["anyOf"][0] if payload == "params" else union
                return [str(member.get("title")) for member in inner["anyOf"]]
    return []


@pytest.mark.parametrize("file_name", FILES)
def test_envelope_members_come_in_the_published_order(sources: dict[str, Source], file_name: str) -> None:
    theirs, ours = sources["published"].schema(file_name)["$defs"], sources["ours"].schema(file_name)["$defs"]
    checked = 0
    for name, schema in ours.items():
        if "x-envelope" not in schema or name not in theirs:
            continue
        mine, published = _members(schema), _members(theirs[name])
        both = set(mine) & set(published)
        assert [m for m in mine if m in both] == [m for m in published if m in both], name
        checked += 1
    assert checked > 0


def _open_branch_repeats(schema: dict[str, Any]) -> list[str]:
    """The fields a union declares itself that its catch-all branch (the one with a `not`) declares again, its tag
    (a field the other branches fix to a constant) aside."""
    branches = [b for b in schema.get("anyOf") or [] if isinstance(b, dict)]
    tags = {n for b in branches for n, p in (b.get("properties") or {}).items() if isinstance(p, dict) and "const" in p}
    own = set(schema.get("properties") or {}) - tags
    return [
        field
        for branch in schema.get("anyOf") or []
        if isinstance(branch, dict) and "not" in branch
        for field in sorted(own & set(branch.get("properties") or {}))
    ]


def test_open_branches_repeat_no_field_of_their_union(sources: dict[str, Source]) -> None:
    for name in ("published", "ours"):
        defs = sources[name].schema()["$defs"]
        repeats = {type_name: found for type_name, d in defs.items() if (found := _open_branch_repeats(d))}
        assert repeats == {}, name
    # The control has such unions at all, so the check above is not empty.
    assert any("properties" in d and any("not" in b for b in d.get("anyOf") or []) for d in defs.values())
