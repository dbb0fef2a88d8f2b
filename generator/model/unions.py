"""Open tagged unions: ACP v2 keeps every tagged union open, and this module owns what that means in the schema.

A union is written in the spec as `oneOf` of `$ref` variants with a `discriminator` (OpenAPI's keyword: the tag
property and a mapping from each tag value to its variant). ACP receivers must accept tag values they do not know
(a newer ACP version's variants, or `_`-prefixed extensions), so the model adds one catch-all branch to every such
union: an object whose tag is any string other than the known ones, with every other field allowed. The branch is
derived from the mapping, never written by hand, so a variant added to the mapping is excluded from it at once.
The published ACP schema spells the branch the same way (a `not` over the known tags).
"""

from __future__ import annotations

from typing import Any, NamedTuple

CATCH_ALL_TITLE = "other"
FALLBACK_PREFIX = "Other"  # generated code names a union's fallback variant Other<Union>, after the branch's title


def fallback_name(union_name: str) -> str:
    """The name of a union's fallback variant in generated code: `SessionUpdate` -> `OtherSessionUpdate`.

    Not `Unknown...`: ACP has variants of that name (`UnknownStateUpdate`, the state `unknown`).
    """
    return FALLBACK_PREFIX + union_name


class TaggedUnion(NamedTuple):
    """The tag property of a union and its variants: tag value -> type name, in spec order."""

    tag: str
    variants: tuple[tuple[str, str], ...]

    @property
    def known(self) -> tuple[str, ...]:
        """The tag values that select a known variant."""
        return tuple(value for value, _ in self.variants)


def tagged_union(schema: Any, ref_prefix: str) -> TaggedUnion | None:
    """The union a type schema defines, or None when it is not a discriminated `oneOf`."""
    if not isinstance(schema, dict) or not isinstance(schema.get("oneOf"), list):
        return None
    discriminator = schema.get("discriminator")
    if not isinstance(discriminator, dict) or not isinstance(discriminator.get("propertyName"), str):
        return None
    mapping = discriminator.get("mapping")
    if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
        return None
    variants = tuple((str(value), target.removeprefix(ref_prefix)) for value, target in mapping.items())
    return TaggedUnion(discriminator["propertyName"], variants)


def is_catch_all(branch: Any) -> bool:
    """Whether a `oneOf` branch is the catch-all this module adds."""
    return isinstance(branch, dict) and branch.get("title") == CATCH_ALL_TITLE and "not" in branch


UNKNOWN_REQUIRES = "x-unknownRequires"  # in a discriminator: the properties an unknown variant must still carry


def unknown_requires(
    schema: dict[str, Any], union: TaggedUnion, defs: dict[str, Any], ref_prefix: str
) -> dict[str, Any]:
    """The properties the catch-all requires besides the tag, by name, with their schemas taken from the variants.

    The spec lists them (`x-unknownRequires` in the discriminator) because which fields a future variant keeps is a
    protocol decision: a command's `name` and `description`, an auth method's `methodId`. Each must be a property of
    some variant; names that are not are left out.
    """
    names = [n for n in schema["discriminator"].get(UNKNOWN_REQUIRES) or [] if isinstance(n, str)]
    seen: dict[str, list[Any]] = {n: [] for n in names}
    for _, type_name in union.variants:
        properties = properties_of(defs.get(type_name), defs, ref_prefix)
        for n in names:
            if n in properties:
                seen[n].append(properties[n])
    # A property whose schema differs between variants (a config option's `value`) may hold anything in a variant
    # nobody knows yet.
    return {
        n: (found[0] if all(_bare(f) == _bare(found[0]) for f in found) else {}) for n, found in seen.items() if found
    }


def _bare(schema: Any) -> Any:
    """A schema without its descriptions, for comparing what two schemas accept."""
    if isinstance(schema, dict):
        return {k: _bare(v) for k, v in schema.items() if k != "description"}
    if isinstance(schema, list):
        return [_bare(v) for v in schema]
    return schema


def properties_of(schema: Any, defs: dict[str, Any], ref_prefix: str, depth: int = 0) -> dict[str, Any]:
    """The properties of an object schema, those of its `allOf` references included."""
    if not isinstance(schema, dict) or depth > 8:  # deeper allOf chains do not occur; a cycle must not loop
        return {}
    properties = dict(schema["properties"]) if isinstance(schema.get("properties"), dict) else {}
    for part in schema.get("allOf") or []:
        if isinstance(part, dict) and isinstance(part.get("$ref"), str):
            part = defs.get(part["$ref"].removeprefix(ref_prefix))
        properties = {**properties_of(part, defs, ref_prefix, depth + 1), **properties}
    return properties


def catch_all(union: TaggedUnion, common: dict[str, Any] | None = None) -> dict[str, Any]:
    """The branch that accepts any tag value the union does not know, keeping every field.

    `common` holds the properties an unknown variant must still carry (see `unknown_requires`).
    """
    common = common or {}

    def fixed(value: str) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {union.tag: {"type": "string", "const": value}},
            "required": [union.tag],
        }

    return {
        "title": CATCH_ALL_TITLE,
        "description": (
            f"A variant this version does not know: a `{union.tag}` value from a later ACP version, or one starting"
            " with `_` (an implementation's extension). Receivers keep it as it is (every field) when they store,"
            " replay or forward it, and otherwise ignore it or show it generically."
        ),
        "type": "object",
        "properties": {
            union.tag: {
                "description": (
                    f"A `{union.tag}` value this version does not know: a later ACP version's, or one starting with"
                    " `_` (an extension)."
                ),
                "type": "string",
            },
            **common,
        },
        "required": [union.tag, *common],
        "not": {"anyOf": [fixed(value) for value in union.known]},
        "additionalProperties": True,
    }


def opened(schema: dict[str, Any], defs: dict[str, Any], ref_prefix: str) -> dict[str, Any]:
    """`schema` with the catch-all branch last, when it is a tagged union without one; otherwise unchanged.

    `defs` holds every type's schema by name, to find what the variants have in common.
    """
    union = tagged_union(schema, ref_prefix)
    if union is None or any(is_catch_all(b) for b in schema["oneOf"]):
        return schema
    return {**schema, "oneOf": [*schema["oneOf"], catch_all(union, unknown_requires(schema, union, defs, ref_prefix))]}


def closed(schema: Any) -> Any:
    """`schema` (any JSON value) without catch-all branches anywhere: the form code generators take as input."""
    if isinstance(schema, dict):
        # leaves are kept as they are without a call each: most values of a schema are strings and numbers
        out = {k: closed(v) if isinstance(v, (dict, list)) else v for k, v in schema.items()}
        if isinstance(out.get("oneOf"), list):
            out["oneOf"] = [b for b in out["oneOf"] if not is_catch_all(b)]
        return out
    if isinstance(schema, list):
        return [closed(item) if isinstance(item, (dict, list)) else item for item in schema]
    return schema
