"""Objects refined by one property's value: the published form of ACP's IdleStateUpdate.

Such an object lists its own properties, and beside them an `anyOf` of branches that each fix one property (named
by `x-refinedBy`) to a constant and may bring properties of their own: a stop reason of "error" brings `error`.
A branch with `title: none` may stand for the property being omitted or null. Like a tagged union, the set is
open (ACP v2 receivers keep values they do not know), so the schema gets one catch-all branch for any other
string, derived from the constants here and never written by hand.

Code generators cannot make a model that a tagged union dispatches to out of properties beside an `anyOf` (they
make a union of models), so they are given the flattened form: the branches' own properties join the object's as
optional properties, and the `anyOf` goes. The flattened model accepts every published message; it checks a
branch's properties whatever the value (an `error` property must be an Error or null even beside "end_turn").
"""

from __future__ import annotations

from typing import Any

from . import unions

REFINED_BY = "x-refinedBy"


def refined_by(schema: Any) -> str | None:
    """The property that selects the branches of a refined object, or None when `schema` is not one."""
    if not isinstance(schema, dict) or not isinstance(schema.get("anyOf"), list):
        return None
    name = schema.get(REFINED_BY)
    return name if isinstance(name, str) else None


def problem(schema: Any) -> str | None:
    """What is wrong with a type's `x-refinedBy`, or None (also when it has none)."""
    if not isinstance(schema, dict) or REFINED_BY not in schema:
        return None
    name = schema[REFINED_BY]
    if not isinstance(name, str) or name not in (schema.get("properties") or {}):
        return f"{REFINED_BY} must name one of the type's own properties, not {name!r}"
    if not isinstance(schema.get("anyOf"), list) or not constants(schema, name):
        return f"{REFINED_BY} needs an anyOf with branches that fix {name!r} to a constant"
    return None


def constants(schema: dict[str, Any], name: str) -> list[str]:
    """The values of `name` that the branches fix, in branch order."""
    found = []
    for branch in schema["anyOf"]:
        prop = branch.get("properties", {}).get(name) if isinstance(branch, dict) else None
        if isinstance(prop, dict) and isinstance(prop.get("const"), str):
            found.append(prop["const"])
    return found


def opened(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with the catch-all branch after the last branch that fixes a value; otherwise unchanged."""
    name = refined_by(schema)
    if name is None or any(unions.is_catch_all(b) for b in schema["anyOf"]):
        return schema
    known = constants(schema, name)
    union = unions.TaggedUnion(name, tuple((value, "") for value in known))
    branches = list(schema["anyOf"])
    last = max((i for i, b in enumerate(branches) if _fixes(b, name)), default=len(branches) - 1)
    branches.insert(last + 1, unions.catch_all(union))
    return {**schema, "anyOf": branches}


def _fixes(branch: Any, name: str) -> bool:
    prop = branch.get("properties", {}).get(name) if isinstance(branch, dict) else None
    return isinstance(prop, dict) and "const" in prop


def flattened(document: dict[str, Any], ref_prefix: str) -> dict[str, Any]:
    """A bundle (`$defs`) with every refined object flattened for code generators (see the module docstring)."""
    defs = document.get("$defs", {})
    out = dict(defs)
    for type_name, schema in defs.items():
        name = refined_by(schema)
        if name is None:
            continue
        properties = dict(schema.get("properties", {}))
        for branch in schema["anyOf"]:
            if unions.is_catch_all(branch):
                continue
            for prop, prop_schema in unions.properties_of(branch, defs, ref_prefix).items():
                properties.setdefault(prop, prop_schema)
        flat = {k: v for k, v in schema.items() if k not in ("anyOf", REFINED_BY)}
        out[type_name] = {**flat, "properties": properties}
    return {**document, "$defs": out}
