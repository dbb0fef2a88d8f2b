"""ACP's lenient-parsing annotations: which properties a receiver salvages instead of refusing the whole message.

The published ACP v2 schema marks properties with three annotations, which its SDKs honour when they read a message:

- `x-deserialize-default-on-error`: a value that fails validation is dropped, and the property takes its default
  (it is then omitted; a required array takes `[]`, as upstream's SDKs do);
- `x-deserialize-skip-invalid-items`: an array item that fails validation is skipped, and the good items are kept;
- `x-deserialize-default-on-null`: an explicit `null` is taken as the property's default (omitted).

They are spec data, written on the properties of spec/types/*.yaml as upstream places them, emitted in both
schema files unchanged, and honoured by the generated pydantic models (generator/render/python/lenient_rules.py). This
module checks where they stand and reads them for the model.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .spec import Lenience

DEFAULT_ON_ERROR = "x-deserialize-default-on-error"
SKIP_INVALID_ITEMS = "x-deserialize-skip-invalid-items"
DEFAULT_ON_NULL = "x-deserialize-default-on-null"
KEYS = (DEFAULT_ON_ERROR, SKIP_INVALID_ITEMS, DEFAULT_ON_NULL)

_BRANCHES = ("anyOf", "oneOf", "allOf")


def _objects(schema: dict[str, Any]) -> Iterator[tuple[tuple[str, int] | tuple[()], dict[str, Any]]]:
    """The type's own object schema and its inline branches, each with where it is."""
    yield (), schema
    for word in _BRANCHES:
        for index, branch in enumerate(schema.get(word) or []):
            if isinstance(branch, dict):
                yield (word, index), branch


def _accepts_null(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind) or schema.get("const", 0) is None:
        return True
    return any(_accepts_null(option) for word in ("anyOf", "oneOf") for option in schema.get(word) or [])


def _is_array(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    return kind == "array" or (isinstance(kind, list) and "array" in kind) or "items" in schema


def problems(schema: Any) -> list[tuple[tuple[Any, ...], str]]:
    """(data path within the type, message) for each annotation that is misplaced or cannot do what it says."""
    found: list[tuple[tuple[Any, ...], str]] = []
    if not isinstance(schema, dict):
        return found
    placed: set[int] = set()
    for branch, node in _objects(schema):
        required = node.get("required") if isinstance(node.get("required"), list) else []
        properties = node.get("properties")
        if not isinstance(properties, dict):
            continue
        for name, prop in properties.items():
            if not isinstance(prop, dict):
                continue
            placed.add(id(prop))
            at = (*branch, "properties", name)
            for key in KEYS:
                if key in prop and prop[key] is not True:
                    found.append(((*at, key), f"{key} takes the value true, or is left out"))
            if prop.get(SKIP_INVALID_ITEMS) is True and not _is_array(prop):
                found.append(((*at, SKIP_INVALID_ITEMS), f"{SKIP_INVALID_ITEMS} belongs on an array property"))
            if prop.get(DEFAULT_ON_ERROR) is True and name in required and not _is_array(prop):
                message = (
                    f"{DEFAULT_ON_ERROR} on the required property {name!r} leaves nothing to fall back on: only an"
                    " optional property (dropped) or a required array (taking []) has a default"
                )
                found.append(((*at, DEFAULT_ON_ERROR), message))
            if prop.get(DEFAULT_ON_NULL) is True:
                if name in required and "default" not in prop:
                    message = f"{DEFAULT_ON_NULL} on the required property {name!r}, which has no default to take"
                    found.append(((*at, DEFAULT_ON_NULL), message))
                elif _accepts_null(prop):
                    message = f"{DEFAULT_ON_NULL} on {name!r}, which accepts null already: the annotation does nothing"
                    found.append(((*at, DEFAULT_ON_NULL), message))
    for at, node in _annotated(schema, ()):
        if id(node) not in placed:
            keys = ", ".join(k for k in KEYS if k in node)
            found.append((at, f"{keys} belongs on a property of an object type (under `properties`), not here"))
    return found


def _annotated(value: Any, path: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:
    """Every schema node carrying an annotation, with its path."""
    if isinstance(value, dict):
        if any(key in value for key in KEYS):
            yield path, value
        for key, item in value.items():
            if isinstance(item, (dict, list)):  # a leaf carries no annotation: no call for each
                yield from _annotated(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, (dict, list)):
                yield from _annotated(item, (*path, index))


def lenience(schema: dict[str, Any]) -> tuple[Lenience, ...]:
    """The annotated properties of a type (one whose annotations passed `problems`), in schema order."""
    out = []
    for branch, node in _objects(schema):
        required = set(node.get("required") or [])
        for name, prop in (node.get("properties") or {}).items():
            if isinstance(prop, dict) and any(prop.get(key) is True for key in KEYS):
                out.append(
                    Lenience(
                        name,
                        branch,
                        prop.get(DEFAULT_ON_ERROR) is True,
                        prop.get(SKIP_INVALID_ITEMS) is True,
                        prop.get(DEFAULT_ON_NULL) is True,
                        name in required,
                    )
                )
    return tuple(out)
