"""Hypothesis strategies that draw JSON instances from a JSON Schema 2020-12 bundle (`$defs` plus `$ref`s).

hypothesis-jsonschema does not run with the Hypothesis version this project pins, and building its strategies
for the larger ACP types takes tens of seconds each, so these are written for the subset of JSON Schema that the
published ACP schema and our spec use: type, const, enum, anyOf/oneOf/allOf, not, properties/required,
additionalProperties, items, length and range bounds, and the uri and date-time formats. A draw is a candidate:
the caller keeps only those its source schema accepts (a catch-all branch may draw a known tag, say), and counts
what it keeps.
"""

from __future__ import annotations

import string
from typing import Any

from hypothesis import strategies as st

_ANNOTATIONS = {"description", "title", "examples", "default", "$comment", "discriminator", "deprecated"}
_KEY_CHARS = string.ascii_letters + string.digits + "_"
_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_URIS = st.sampled_from(
    [
        "file:///home/dev/project/main.py",
        "https://example.com/docs/page?q=1#top",
        "http://localhost:8080/mcp",
        "urn:example:resource:42",
        "data:text/plain;base64,aGVsbG8=",
    ]
)
_DATE_TIMES = st.sampled_from(["2026-11-29T18:40:00Z", "2025-01-02T03:04:05.678+02:00", "1999-12-31T23:59:59-05:00"])
_INT_BOUNDS = {
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
}


def _json(depth: int = 2) -> st.SearchStrategy[Any]:
    scalars = st.none() | st.booleans() | st.integers(-1000, 1000) | _TEXT
    if depth == 0:
        return scalars
    inner = _json(depth - 1)
    return scalars | st.lists(inner, max_size=2) | st.dictionaries(st.text(_KEY_CHARS, max_size=6), inner, max_size=2)


class Drawer:
    """Turns the named definitions of one bundle into strategies, following `$ref`s lazily."""

    def __init__(self, defs: dict[str, Any], *, max_depth: int = 40) -> None:
        self.defs = defs
        self.max_depth = max_depth

    def named(self, name: str) -> st.SearchStrategy[Any]:
        return self.schema(self.defs[name], 0)

    def schema(self, node: Any, depth: int) -> st.SearchStrategy[Any]:
        if node is True or node == {}:
            return _json(1)
        if node is False:
            return st.nothing()
        node = {k: v for k, v in node.items() if k not in _ANNOTATIONS and not k.startswith("x-")}
        if depth > self.max_depth:  # keep recursive shapes finite: the smallest value the schema may allow
            return self._minimal(node)
        if "$ref" in node:
            target = self.defs[node["$ref"].rsplit("/", 1)[-1]]
            rest = {k: v for k, v in node.items() if k != "$ref"}
            if rest:
                return self.schema({"allOf": [target, rest]}, depth + 1)
            return st.deferred(lambda: self.schema(target, depth + 1))
        if "const" in node:
            return st.just(node["const"])
        if "enum" in node:
            return st.sampled_from(node["enum"])
        for key in ("anyOf", "oneOf"):
            if key in node:
                rest = {k: v for k, v in node.items() if k not in (key, "not")}
                branches = [self._merge(rest, b) if rest else b for b in node[key]]
                return st.one_of([self.schema(b, depth + 1) for b in branches])
        if "allOf" in node:
            merged = {k: v for k, v in node.items() if k != "allOf"}
            for part in node["allOf"]:
                merged = self._merge(merged, self._resolve(part))
            return self.schema(merged, depth + 1)
        kind = node.get("type")
        if isinstance(kind, list):
            return st.one_of([self.schema({**node, "type": k}, depth) for k in kind])
        return self._typed(kind, node, depth)

    def _typed(self, kind: str | None, node: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
        if kind == "null":
            return st.none()
        if kind == "boolean":
            return st.booleans()
        if kind == "integer":
            low, high = _INT_BOUNDS.get(node.get("format", ""), (-(2**53), 2**53))
            low = max(low, node.get("minimum", low))
            high = min(high, node.get("maximum", high))
            return st.integers(low, high)
        if kind == "number":
            return st.floats(
                node.get("minimum"), node.get("maximum"), allow_nan=False, allow_infinity=False
            ) | st.integers(int(node.get("minimum", -1000)), int(node.get("maximum", 1000)))
        if kind == "string":
            fmt = node.get("format")
            if fmt == "uri":
                return _URIS
            if fmt == "date-time":
                return _DATE_TIMES
            if fmt == "regex":
                return st.sampled_from(["^[a-z]+$", ".*", "\\d{3}"])
            return st.text(
                alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)),
                min_size=node.get("minLength", 0),
                max_size=max(node.get("minLength", 0), min(node.get("maxLength", 12), 12)),
            )
        if kind == "array":
            items = self.schema(node.get("items", True), depth + 1)
            low = node.get("minItems", 0)
            return st.lists(items, min_size=low, max_size=max(low, min(node.get("maxItems", 3), 3)))
        if kind == "object" or "properties" in node:
            return self._object(node, depth)
        return _json(1)

    def _object(self, node: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
        props = node.get("properties", {})
        required = set(node.get("required", []))
        fixed = {k: self.schema(v, depth + 1) for k, v in props.items() if k in required}
        optional = {k: self.schema(v, depth + 1) for k, v in props.items() if k not in required}
        for name in required - set(props):  # required by a branch without a schema of its own
            fixed[name] = _json(1)
        extra_schema = node.get("additionalProperties", True)
        body = st.fixed_dictionaries(fixed, optional=optional)
        if extra_schema is False:
            return body
        extra_values = _json(1) if extra_schema is True else self.schema(extra_schema, depth + 1)
        extras = st.dictionaries(
            st.text(_KEY_CHARS, min_size=1, max_size=8).map(lambda k: "x" + k).filter(lambda k: k not in props),
            extra_values,
            max_size=2 if extra_schema is not True else 1,
        )
        return st.tuples(body, extras).map(lambda pair: {**pair[1], **pair[0]})

    def _resolve(self, node: Any) -> Any:
        while isinstance(node, dict) and set(node) - _ANNOTATIONS == {"$ref"}:
            node = self.defs[node["$ref"].rsplit("/", 1)[-1]]
        return node

    def _merge(self, a: dict[str, Any], b: Any) -> dict[str, Any]:
        """Both schemas at once, for the object shapes ACP uses (properties and required are combined)."""
        b = self._resolve(b)
        if not isinstance(b, dict):
            return a
        out = dict(a)
        for key, value in b.items():
            if key == "properties":
                out["properties"] = {**out.get("properties", {}), **value}
            elif key == "required":
                out["required"] = sorted({*out.get("required", []), *value})
            elif key in ("anyOf", "oneOf") and key in out:
                out["allOf"] = [*out.get("allOf", []), {key: value}]
            else:
                out.setdefault(key, value)
        return out

    def _minimal(self, node: dict[str, Any]) -> st.SearchStrategy[Any]:
        kind = node.get("type")
        if isinstance(kind, list):
            kind = "null" if "null" in kind else kind[0]
        if "$ref" in node:
            return self._minimal(self._resolve(node))
        simple = {"null": None, "boolean": False, "integer": node.get("minimum", 0), "number": 0, "array": []}
        if kind in simple:
            return st.just(simple[kind])
        if kind == "string":
            return st.just("s" * node.get("minLength", 0))
        return st.just({})
