"""JSON Schema bundles: schema.json (stable entries) and schema.unstable.json (all entries)."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator

from .. import paths
from ..model import Method, Spec
from ..semantics import REF_PREFIX
from .markers import json_text

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
STABLE_PATH = paths.SCHEMA_STABLE
UNSTABLE_PATH = paths.SCHEMA_UNSTABLE


def bundle(spec: Spec, *, unstable: bool) -> dict[str, Any]:
    """One self-contained JSON Schema whose `$defs` hold the spec's types.

    The stable bundle leaves out types that only unstable entries reach. Each method's params and result types
    carry `x-method`, `x-side` and `x-retry-class`, so a consumer can go from a type to its retry rules.
    """
    methods = spec.methods if unstable else spec.stable_methods()
    defs = {t.name: t.schema for t in spec.types}
    keep = _reachable(defs, _roots(spec, methods, unstable))
    out = {name: defs[name] for name in sorted(keep)}
    for method in methods:
        for name in (method.params, method.result):
            if name is not None:
                _mark(out[name], method)
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "ACP v2 retry layer" + (" (stable and unstable)" if unstable else " (stable)"),
        "description": "Types of the Agent Client Protocol v2 that retry decisions and idempotency keys rest on.",
        "$defs": out,
    }


def _roots(spec: Spec, methods: tuple[Method, ...], unstable: bool) -> set[str]:
    used_anywhere = {n for m in spec.methods for n in (m.params, m.result) if n}
    used_here = {n for m in methods for n in (m.params, m.result) if n}
    everything = {t.name for t in spec.types}
    # Types that no method names directly (IdempotencyKey, Error, RetryClass…) belong to both bundles.
    standalone = everything - _reachable({t.name: t.schema for t in spec.types}, used_anywhere)
    return everything if unstable else used_here | standalone


def _reachable(defs: dict[str, Any], roots: set[str]) -> set[str]:
    seen: set[str] = set()
    todo = sorted(roots)
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen.add(name)
        todo.extend(_refs(defs[name]))
    return seen


def _refs(value: Any) -> list[str]:
    if isinstance(value, dict):
        found = []
        for key, item in value.items():
            if key == "$ref" and isinstance(item, str):
                found.append(item.removeprefix(REF_PREFIX))
            else:
                found.extend(_refs(item))
        return found
    if isinstance(value, list):
        return [r for item in value for r in _refs(item)]
    return []


def _mark(schema: dict[str, Any], method: Method) -> None:
    marks = {"x-method": method.name, "x-side": method.side, "x-retry-class": method.retry_class}
    for key, value in marks.items():
        if key in schema and schema[key] != value:
            # one type used by several entries: list every value, sorted, so output stays stable
            values = schema[key] if isinstance(schema[key], list) else [schema[key]]
            schema[key] = sorted({*values, value})
        else:
            schema[key] = value


def render(spec: Spec) -> dict[str, str]:
    files = {}
    for path, unstable in ((STABLE_PATH, False), (UNSTABLE_PATH, True)):
        document = bundle(spec, unstable=unstable)
        Draft202012Validator.check_schema(document)  # never emit a schema that is not one
        files[path] = json_text(document)
    return files
