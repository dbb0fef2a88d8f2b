"""The union shape the TypeScript SDK's guard step reads, checked on a JSON Schema (our reading of its rule).

The SDK (`@agentclientprotocol/sdk`, `scripts/generate.js`) emits one validated type guard per *extensible*
union after hey-api has run. It finds those unions and their variants from the raw schema alone:

- an extensible union is a def whose `anyOf`/`oneOf` holds one catch-all variant with a `not` clause; each branch
  of that clause (or the clause itself) pins one and the same property, the discriminant, to a string `const`,
  and those consts are the tags the known variants reserve;
- every other variant is a known one. A guard validates it through its `allOf` `$ref`s and its own inline
  `const` tag, so a known variant needs at least one of the two; a discriminant it declares must be a string
  `const` that the catch-all reserves, or `{"type": "null"}` for the one variant that carries no tag (2.4.0
  emits `IdleStateUpdate.isNone` from such a variant);
- the required properties the guard re-checks inline (the variant's, the catch-all's and the union def's own,
  except the discriminant and those marked `x-deserialize-default-on-error`) must be a `$ref`, a one-item `allOf`
  of a `$ref`, a string, a boolean, or unconstrained; any other shape stops the step.

This module says which unions a schema offers the step and lists every place where the step would stop, so a
test can compare a schema with the published one (which passes) and name each problem at once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# Keys that leave a property unconstrained, as the guard step counts them.
NEUTRAL_KEYS = frozenset({"description", "title", "$comment"})
SALVAGED = "x-deserialize-default-on-error"


@dataclass(frozen=True)
class Union:
    """An extensible union as the guard step sees it."""

    name: str
    discriminant: str
    reserved: tuple[str, ...]
    guards: tuple[str, ...]  # the guard each known variant gets, `is` + this name, in schema order


def _reserved_tags(variant: Any) -> tuple[str, tuple[str, ...]] | None:
    """The discriminant and reserved tags of a catch-all's `not` clause, or None when it is not one."""
    clause = variant.get("not") if isinstance(variant, dict) else None
    if not isinstance(clause, dict):
        return None
    branches = clause.get("anyOf", [clause])
    key: str | None = None
    tags: list[str] = []
    for branch in branches:
        for prop, sub in (branch.get("properties") or {}).items() if isinstance(branch, dict) else ():
            if not isinstance(sub, dict) or not isinstance(sub.get("const"), str):
                continue
            if key is not None and key != prop:
                return None  # two different properties pinned: not a tag exclusion
            key = prop
            tags.append(sub["const"])
    return (key, tuple(sorted(tags))) if key is not None else None


def _variants(definition: Any) -> list[Any] | None:
    if not isinstance(definition, dict):
        return None
    found = definition.get("anyOf", definition.get("oneOf"))
    return found if isinstance(found, list) else None


def _catch_all(variants: list[Any]) -> tuple[int, str, tuple[str, ...]] | None:
    """The index, discriminant and reserved tags of the variant the step takes as the catch-all (the first)."""
    for index, variant in enumerate(variants):
        found = _reserved_tags(variant)
        if found is not None:
            return index, found[0], found[1]
    return None


def extensible_unions(schema: dict[str, Any]) -> dict[str, Union]:
    """Every def the guard step would emit guards for, by name."""
    out: dict[str, Union] = {}
    for name, definition in (schema.get("$defs") or {}).items():
        variants = _variants(definition)
        if variants is None:
            continue
        found = _catch_all(variants)
        if found is not None:
            index, key, reserved = found
            guards = tuple(_guard_name(v, key) for i, v in enumerate(variants) if i != index and isinstance(v, dict))
            out[name] = Union(name, key, reserved, guards)
    return out


def _guard_name(variant: dict[str, Any], discriminant: str) -> str:
    """The name a known variant's guard takes: its tag, else its title, else its first allOf target, else the
    discriminant, in PascalCase (`tool_call` gives `isToolCall`)."""
    tag_schema = (variant.get("properties") or {}).get(discriminant)
    tag = tag_schema.get("const") if isinstance(tag_schema, dict) else None
    refs = _ref_names(variant)
    label = tag if tag is not None else variant.get("title") or (refs[0] if refs else discriminant)
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^a-zA-Z0-9]+", str(label)) if part)


def _ref_names(variant: dict[str, Any]) -> list[str]:
    return [
        entry["$ref"].rsplit("/", 1)[-1]
        for entry in variant.get("allOf") or []
        if isinstance(entry, dict) and isinstance(entry.get("$ref"), str)
    ]


def _plain_enough(prop: Any) -> bool:
    """Whether the step can re-check a required property of this shape inline."""
    if not isinstance(prop, dict):
        return False
    if isinstance(prop.get("$ref"), str):
        return True
    all_of = prop.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict) and "$ref" in all_of[0]:
        return True
    if prop.get("type") in ("string", "boolean"):
        return True
    return all(key in NEUTRAL_KEYS or key.startswith("x-") for key in prop)


def _label(variant: dict[str, Any], tag: Any, index: int) -> str:
    """How a problem names a known variant: its tag, else its title, else what its `$ref` points at."""
    if tag is not None:
        return str(tag)
    if isinstance(variant.get("title"), str):
        return variant["title"]
    if isinstance(variant.get("$ref"), str):
        return variant["$ref"].rsplit("/", 1)[-1]
    refs = _ref_names(variant)
    return refs[0] if refs else f"#{index}"


def _inline_required(node: dict[str, Any], skip: str | None) -> list[str]:
    """The required properties the step re-checks inline: all but `skip` and the salvaged ones."""
    properties = node.get("properties") or {}
    return [
        prop
        for prop in node.get("required") or []
        if prop != skip and not (isinstance(properties.get(prop), dict) and properties[prop].get(SALVAGED))
    ]


def _inline_required_problems(where: str, node: dict[str, Any], skip: str | None) -> list[str]:
    properties = node.get("properties") or {}
    problems = []
    for prop in _inline_required(node, skip):
        if not _plain_enough(properties.get(prop)):
            problems.append(
                f"{where}: required property {prop!r} has a shape the guard step cannot re-check "
                "(it takes a $ref, a one-$ref allOf, a string, a boolean or an unconstrained schema)"
            )
    return problems


def guard_problems(schema: dict[str, Any]) -> list[str]:
    """Every place where the guard step would stop on this schema, one line each, in schema order."""
    problems: list[str] = []
    for name, definition in (schema.get("$defs") or {}).items():
        variants = _variants(definition)
        if variants is None:
            continue
        found = _catch_all(variants)
        if found is None:
            continue
        catch_index, discriminant, reserved = found
        problems += _inline_required_problems(f"{name} (the union's own properties)", definition, None)
        problems += _inline_required_problems(f"{name} (catch-all)", variants[catch_index], discriminant)
        for index, variant in enumerate(variants):
            if index == catch_index:
                continue
            if not isinstance(variant, dict):
                problems.append(f"{name}: variant {index} is not an object schema")
                continue
            tag_schema = (variant.get("properties") or {}).get(discriminant)
            tag = tag_schema.get("const") if isinstance(tag_schema, dict) else None
            untagged = isinstance(tag_schema, dict) and tag_schema.get("type") == "null" and tag is None
            label = _label(variant, tag, index)
            if tag_schema is not None and tag is None and not untagged:
                problems.append(
                    f"{name}: known variant {label!r} declares {discriminant!r} without a const tag "
                    "(or a null type, for the variant that carries no tag)"
                )
            if tag is not None and tag not in reserved:
                problems.append(
                    f"{name}: known variant tag {tag!r} is not reserved by the catch-all's not clause "
                    f"({', '.join(reserved)})"
                )
            if not (_ref_names(variant) or tag is not None or untagged or _inline_required(variant, discriminant)):
                problems.append(
                    f"{name}: known variant {label!r} has neither allOf $refs nor a const-tagged "
                    f"{discriminant!r} (a bare $ref gives the guard nothing to validate against)"
                )
            problems += _inline_required_problems(f"{name}.{label}", variant, discriminant)
    return problems
