"""JSON Schema bundles: schema.json (stable entries) and schema.unstable.json (all entries)."""

from __future__ import annotations

from typing import Any

from ... import paths
from ...check import schema_check
from ...model import envelopes, upstream_form
from ...model.spec import REF_PREFIX, Method, Spec
from ..markers import json_text
from . import stability

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
STABLE_PATH = paths.SCHEMA_STABLE
UNSTABLE_PATH = paths.SCHEMA_UNSTABLE


def bundle(spec: Spec, *, unstable: bool) -> dict[str, Any]:
    """One self-contained JSON Schema whose `$defs` hold the spec's types.

    The stable bundle leaves out unstable types, properties and variants (render/schema/stability.py), and types that
    only unstable entries reach. Each method's params and result types carry `x-method`, `x-side` and
    `x-retry-class`, so a consumer can go from a type to its retry rules.
    """
    methods = spec.methods if unstable else spec.stable_methods()
    # Envelope members in ACP's declared order (each envelope's `order`), not in the model's name order.
    # (Only types whose text names an envelope are parsed for it.)
    methods = envelopes.ranked(methods, (t.schema for t in spec.types if envelopes.ENVELOPE in t.schema_json))
    # Envelopes list the types of the methods in this bundle only (the model holds them for every method).
    # An envelope that carries nothing here (the proxy's, in the stable bundle) is left out, as ACP does.
    defs = {
        t.name: envelopes.expand(t.schema, methods, REF_PREFIX)
        for t in spec.types
        if (declared := envelopes.envelope_of(t.schema)) is None or envelopes.carried(declared, methods)
    }
    # Unstable types, properties and variants: marked in the unstable bundle, left out of the stable one.
    defs = stability.with_markers(spec, defs) if unstable else stability.stable_only(spec, defs)
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
    # Types that no method names directly (IdempotencyKey, Error, RetryClass…, the envelopes) belong to both bundles.
    # Envelopes are left out of the reachability walk here: they reach every method's types.
    plain = {t.name: t.schema for t in spec.types if envelopes.envelope_of(t.schema) is None}
    standalone = everything - _reachable(plain, used_anywhere)
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
            elif isinstance(item, (dict, list)):  # leaves hold no $ref: no call for each
                found.extend(_refs(item))
        return found
    if isinstance(value, list):
        return [r for item in value if isinstance(item, (dict, list)) for r in _refs(item)]
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
    return {STABLE_PATH: bundle_text(spec, unstable=False), UNSTABLE_PATH: bundle_text(spec, unstable=True)}


# The last bundle texts made, by model object (not by its hash: hashing a model reads every field, which the
# incremental run's trace would count as reads, and costs more than the lookup saves).
_MADE: list[tuple[Spec, bool, str]] = []


def bundle_text(spec: Spec, *, unstable: bool) -> str:
    """A bundle as written, in the shape ACP publishes (model/upstream_form.py), checked first (never emit a
    schema that is not one).

    Made once per model: the Python package ships the same two files, and writing JSON with an indent runs in
    pure Python (the C encoder only writes compact JSON).
    """
    for made, made_unstable, text in _MADE:
        if made is spec and made_unstable == unstable:
            return text
    document = upstream_form.published(bundle(spec, unstable=unstable))
    check_bundle(document)
    text = json_text(document)
    _MADE.append((spec, unstable, text))
    del _MADE[:-4]
    return text


def check_bundle(document: dict[str, Any]) -> None:
    """Raise unless `document` is a valid JSON Schema.

    The check is generator/check/schema_check.py's, as at loading (compiled, so the whole bundle costs a few
    milliseconds): a type the spec passed in passes here too, unless rendering (envelopes, marks) broke it.
    """
    error = schema_check.best_error(document)
    if error is not None:
        from jsonschema.exceptions import SchemaError

        raise SchemaError.create_from(error)
