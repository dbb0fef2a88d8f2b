"""One JSON example per type for the type reference, checked against the type's schema before it is shown.

Real messages come first: the params and results of the spec's worked examples (spec/examples/) show the types
they are declared as. Every other type gets the smallest value its schema describes: the required fields, the
first option of a union, the first value of an enum. Each candidate is validated against the schema bundle, so
a page never shows an example that the schema would reject; a type with no valid candidate gets none.
"""

from __future__ import annotations

import json
from typing import Any

from ...check import schema_check
from ...model.spec import REF_PREFIX, Spec

_STRINGS_BY_FORMAT = {"uri": "https://example.com/", "date-time": "2026-01-01T12:00:00Z"}
_MAX_DEPTH = 8  # recursive types (content inside content) stop here


def type_examples(spec: Spec) -> dict[str, str]:
    """{type name: pretty JSON of a valid example}, for every type that has one."""
    defs = {t.name: t.schema for t in spec.types}
    bundle = schema_check.TypeBundle(defs)
    candidates: dict[str, list[Any]] = {name: [] for name in defs}
    for method in spec.methods:
        if method.example is None:
            continue
        for step in method.example.steps:
            message = step.message
            if "params" in message and method.params is not None and message.get("method") == method.name:
                candidates[method.params].append(message["params"])
            if "result" in message and method.result is not None:
                candidates[method.result].append(message["result"])
    out = {}
    for name, schema in defs.items():
        validator = bundle.validator(name)
        tries = [*candidates[name], *schema.get("examples", []), _sample(schema, defs, 0)]
        for value in tries:
            if value is not _NONE and validator.is_valid(value):
                out[name] = json.dumps(value, indent=2, ensure_ascii=False)
                break
    return out


class _Missing:
    """No value could be made (a `not`, an unsatisfiable pattern, too deep)."""


_NONE: Any = _Missing()


def _sample(schema: Any, defs: dict[str, Any], depth: int) -> Any:
    """The smallest value `schema` describes, or _NONE. The parts of a schema ($ref, allOf, the first usable
    union option, its own type and fields) are sampled separately and merged when they are objects."""
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return _NONE
    if schema.get("examples"):
        return schema["examples"][0]
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    parts = []
    if "$ref" in schema:
        parts.append(_sample(defs.get(schema["$ref"].removeprefix(REF_PREFIX)), defs, depth + 1))
    parts += [_sample(sub, defs, depth + 1) for sub in schema.get("allOf", [])]
    for keyword in ("oneOf", "anyOf"):
        if keyword in schema:
            options = [o for o in schema[keyword] if not (isinstance(o, dict) and o.get("type") == "null")]
            found = [v for v in (_sample(o, defs, depth + 1) for o in options or schema[keyword]) if v is not _NONE]
            parts.append(found[0] if found else _NONE)
    own = _own(schema, defs, depth)
    if own is not _NONE:
        parts.append(own)
    if not parts or any(p is _NONE for p in parts):
        return _NONE
    if all(isinstance(p, dict) for p in parts):
        merged: dict[str, Any] = {}
        for part in parts:
            merged.update(part)
        return merged
    return parts[-1]


def _own(schema: dict[str, Any], defs: dict[str, Any], depth: int) -> Any:
    """The value the schema's own `type` (and fields) describe, ignoring its $ref and combinators."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and "properties" in schema):
        return _object(schema, defs, depth)
    if kind == "array":
        item = _sample(schema.get("items", {"type": "string"}), defs, depth + 1)
        return [] if item is _NONE else [item] * max(1, int(schema.get("minItems", 1)))
    if kind == "string":
        text = _STRINGS_BY_FORMAT.get(schema.get("format", ""), "example")
        return text.ljust(int(schema.get("minLength", 0)), "x")
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return _NONE


def _object(schema: dict[str, Any], defs: dict[str, Any], depth: int) -> Any:
    properties = schema.get("properties", {})
    names = list(schema.get("required", []))
    if not names:  # show one field rather than an empty object, when there is one worth showing
        names = [n for n in properties if not n.startswith("_")][:1]
    value = {}
    for name in names:
        field = _sample(properties.get(name, {}), defs, depth + 1)
        if field is _NONE:
            if name in schema.get("required", []):
                return _NONE
            continue
        value[name] = field
    return value
