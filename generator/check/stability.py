"""Stability of types and properties: which parts of the protocol are not stable yet, as spec data.

A method entry says `stability: stable | unstable` (spec/methods/). A type, or one property of a type, says
`x-stability: unstable` right after its description (spec/types/); without it, it is stable. What is unstable is
left out of `schema.json` and marked in every output that shows it (generator/render/schema/stability.py).

The meaning checks here keep the stable surface whole, so that leaving out what is unstable leaves no dangling
`$ref` and no stable type that nothing stable uses:

- the key appears only on a type or on one of its own properties, with a known value (the meta-schema checks
  the value at those two places; a key anywhere else is reported here);
- a stable method's params and result types are stable;
- a stable type refers to an unstable one only from an unstable property, or as a variant of its own `oneOf` or
  `anyOf` (a variant that the stable file leaves out);
- a stable type that something refers to is reached from a stable method (or from a type that nothing refers to,
  such as `IdempotencyKey`); one that only unstable places use must be marked unstable itself;
- a method's variant (a `sessionUpdate` value of session/update) has the stability of the type it selects.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..model import unions
from ..model.spec import REF_PREFIX

if TYPE_CHECKING:
    from ..read.loader import DataPath
    from .context import CheckState

KEY = "x-stability"
STABLE, UNSTABLE = "stable", "unstable"
VALUES = (STABLE, UNSTABLE)
_UNIONS = ("oneOf", "anyOf")


def of(schema: Any) -> str:
    """The stability a type's schema (or a property's) declares: stable unless it says otherwise."""
    value = schema.get(KEY, STABLE) if isinstance(schema, dict) else STABLE
    return value if value in VALUES else STABLE


def unstable_properties(schema: Any) -> tuple[str, ...]:
    """The names of a type's own properties marked unstable, in authored order."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return ()
    return tuple(name for name, prop in props.items() if of(prop) == UNSTABLE)


def stripped(schema: dict[str, Any]) -> dict[str, Any]:
    """A type's schema without its stability keys (the model holds them as fields of its own)."""
    out = {k: v for k, v in schema.items() if k != KEY}
    props = out.get("properties")
    if isinstance(props, dict) and any(isinstance(p, dict) and KEY in p for p in props.values()):
        out["properties"] = {
            name: ({k: v for k, v in p.items() if k != KEY} if isinstance(p, dict) else p) for name, p in props.items()
        }
    return out


# What may stand beside a variant's reference in a union branch: its annotations, and its tag written inline
# (the published ACP form: the tag's `const` beside an `allOf` of the variant's `$ref`).
_BESIDE_VARIANT = frozenset({"description", "title", "type", "properties", "required"})


def variant_target(branch: Any) -> str | None:
    """The type a union branch selects, when the branch is that type's reference (bare, or as the one `allOf`
    member beside an inline tag); None for any other branch."""
    if not isinstance(branch, dict):
        return None
    ref = branch.get("$ref")
    if isinstance(ref, str) and ref.startswith(REF_PREFIX) and set(branch) - {"description", "title"} == {"$ref"}:
        return ref.removeprefix(REF_PREFIX)
    parts = branch.get("allOf")
    if isinstance(parts, list) and len(parts) == 1 and set(branch) - _BESIDE_VARIANT == {"allOf"}:
        inner = parts[0]
        if isinstance(inner, dict) and set(inner) == {"$ref"} and isinstance(inner["$ref"], str):
            props = branch.get("properties") or {}
            # the properties beside it only fix the tag: nothing else may hide a reference there
            if isinstance(props, dict) and all(isinstance(p, dict) and "const" in p for p in props.values()):
                return inner["$ref"].removeprefix(REF_PREFIX)
    return None


def under_unstable(unstable: frozenset[str] | set[str], path: DataPath) -> bool:
    """Whether a data path into a type (`types` or `$defs`, Name, ...) lies in an unstable type or property;
    `unstable` names them (`Type`, `Type.prop`)."""
    if len(path) < 2 or path[0] not in ("types", "$defs"):
        return False
    if path[1] in unstable:
        return True
    return len(path) >= 4 and path[2] == "properties" and f"{path[1]}.{path[3]}" in unstable


# -- the meaning checks -------------------------------------------------------------------------------------


def check(checker: CheckState) -> None:
    """Every stability problem of the types and methods the checker has read (see the module docstring)."""
    types = checker.types
    unstable = {name for name, (_, schema) in types.items() if of(schema) == UNSTABLE}
    for name, (doc, schema) in types.items():
        for path in _misplaced(schema, ("types", name)):
            checker.error(
                doc, path, "misplaced-stability", f"{KEY} belongs on a type or on one of its properties only", key=True
            )
    for doc in checker.method_docs:
        data = doc.data
        if data.get("stability") != STABLE:
            continue
        for field in ("params", "result"):
            if data.get(field) in unstable:
                checker.error(
                    doc,
                    (field,),
                    "unstable-in-stable",
                    f"the stable {data['kind']} {data['method']!r} names the unstable type {data[field]!r}",
                )
    referred: set[str] = set()
    for name, (doc, schema) in types.items():
        for path, target, seen in _places(schema, ("types", name)):
            referred.add(target)
            if target in unstable and seen == PLAIN and name not in unstable:
                checker.error(
                    doc,
                    path,
                    "unstable-in-stable",
                    f"the stable type {name!r} refers to the unstable type {target!r}; mark the property unstable"
                    " or make the reference a variant of the type's own union",
                )
    _check_reached(checker, unstable, referred)
    _check_variants(checker)


def _check_variants(checker: CheckState) -> None:
    """Each listed variant of a method has the stability of the union variant type its name selects."""
    types = checker.types
    for doc in checker.method_docs:
        data = doc.data
        field, params = data.get("variantField"), data.get("params")
        if not isinstance(field, str) or params not in types:
            continue
        *steps, tag = field.split(".")
        schema: Any = types[params][1]
        for step in steps:
            prop = _properties(schema).get(step)
            target = _pure_target(prop)
            schema = types[target][1] if target in types else prop
        union = unions.tagged_union(schema, REF_PREFIX)
        if union is None or union.tag != tag:
            continue
        selects = dict(union.variants)
        for i, variant in enumerate(data.get("variants", [])):
            target = selects.get(variant.get("name"))
            if target not in types or not isinstance(variant.get("stability"), str):
                continue
            declared = of(types[target][1])
            if variant["stability"] != declared:
                checker.error(
                    doc,
                    ("variants", i, "stability"),
                    "variant-stability-mismatch",
                    f"variant {variant['name']!r} is {variant['stability']}, but the type it selects,"
                    f" {target!r}, is {declared}",
                )


def _properties(schema: Any) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema, dict) else None
    return props if isinstance(props, dict) else {}


def _pure_target(schema: Any) -> str | None:
    """The type a property names by a bare `$ref` (annotations aside), or None."""
    if isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        return schema["$ref"].removeprefix(REF_PREFIX)
    return None


def _check_reached(checker: CheckState, unstable: set[str], referred: set[str]) -> None:
    types = checker.types
    roots = {
        d.data[field]
        for d in checker.method_docs
        if d.data.get("stability") == STABLE
        for field in ("params", "result")
        if d.data.get(field) in types
    }
    roots |= {name for name in types if name not in referred and name not in unstable}
    seen: set[str] = set()
    todo = sorted(roots - unstable)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(
            t for _, t, seen in _places(types[name][1], ()) if seen != HIDDEN and t not in unstable and t in types
        )
    for name in sorted(set(types) - unstable - seen):
        if name in checker.bad_types:
            continue
        doc = types[name][0]
        checker.error(
            doc,
            ("types", name),
            "stable-type-unreached",
            f"the stable type {name!r} is used only by unstable types, properties or methods; mark it {KEY}: unstable",
            key=True,
        )


def _places(schema: Any, path: DataPath) -> Iterator[tuple[DataPath, str, str]]:
    """Each `$ref` to a type in a type's schema: its path, the type it names, and how a stable reader sees it:
    `hidden` under an unstable property, `variant` as a branch of the type's own union (which the stable file
    drops when the variant is unstable), `plain` otherwise."""
    if not isinstance(schema, dict):
        return
    props = schema.get("properties")
    for key, value in schema.items():
        if key == "properties" and isinstance(props, dict):
            for name, prop in props.items():
                hidden = of(prop) == UNSTABLE
                for where, target, seen in _refs(prop, (*path, key, name)):
                    yield where, target, HIDDEN if hidden else seen
        elif key in _UNIONS and isinstance(value, list):
            for i, branch in enumerate(value):
                variant = variant_target(branch)
                for where, target, seen in _refs(branch, (*path, key, i)):
                    yield where, target, VARIANT if target == variant else seen
        else:
            yield from _refs(value, (*path, key))


HIDDEN, VARIANT, PLAIN = "hidden", "variant", "plain"


def _refs(value: Any, path: DataPath) -> Iterator[tuple[DataPath, str, str]]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "$ref" and isinstance(item, str) and item.startswith(REF_PREFIX):
                yield (*path, key), item.removeprefix(REF_PREFIX), PLAIN
            elif isinstance(item, (dict, list)):  # leaves hold no $ref: no call for each
                yield from _refs(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, (dict, list)):
                yield from _refs(item, (*path, i))


def _misplaced(schema: Any, path: DataPath, depth: int = 0) -> Iterator[DataPath]:
    """Paths of stability keys that are neither on the type nor on one of its own properties."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == KEY and depth > 0 and not (depth == 2 and path[-2] == "properties"):
                yield (*path, key)
            elif key != KEY and isinstance(value, (dict, list)):  # a leaf holds no key
                yield from _misplaced(value, (*path, key), depth + 1)
    elif isinstance(schema, list):
        for i, item in enumerate(schema):
            if isinstance(item, (dict, list)):
                yield from _misplaced(item, (*path, i), depth + 1)
