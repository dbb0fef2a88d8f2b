"""How the type rules read one schema node: without annotations, with its nullability and references made plain,
as a set of constant values, or as a set of JSON types. Pure functions, shared by the walk in schemas.py."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..read.loader import DataPath
from .change import Where

TEXTS = ("description", "title")
ANNOTATIONS = frozenset({*TEXTS, "examples", "$comment", "deprecated", "readOnly", "writeOnly", "discriminator"})
UNIONS = ("oneOf", "anyOf")


@dataclass(frozen=True)
class Node:
    """A schema with where it is written, on one side."""

    schema: Any
    file: str
    path: DataPath

    def at(self, *steps: str | int, key: bool = False) -> Where:
        return Where(self.file, (*self.path, *steps), key)

    def child(self, schema: Any, *steps: str | int) -> Node:
        return Node(schema, self.file, (*self.path, *steps))


MISSING = object()
Values = tuple[dict[Any, tuple[str | int, ...]], bool]
Tagged = tuple[str, dict[Any, "Node"], bool]


def view(node: Node) -> tuple[Node, bool]:
    """The node without annotations, a lone allOf wrapper, or the null it also accepts; and whether it did."""
    nullable = False
    while isinstance(node.schema, dict):
        schema = strip(node.schema)
        if set(schema) == {"allOf"} and isinstance(schema["allOf"], list) and len(schema["allOf"]) == 1:
            node = node.child(schema["allOf"][0], "allOf", 0)
            continue
        kinds = schema.get("type")
        if isinstance(kinds, list) and "null" in kinds and len(kinds) > 1:
            nullable = True
            rest = [k for k in kinds if k != "null"]
            node = Node({**node.schema, "type": rest[0] if len(rest) == 1 else rest}, node.file, node.path)
            continue
        union = next((k for k in UNIONS if k in schema), None)
        if union and set(schema) == {union} and isinstance(schema[union], list) and len(schema[union]) == 2:
            nulls = [i for i, o in enumerate(schema[union]) if strip(o) == {"type": "null"}]
            if len(nulls) == 1:
                nullable = True
                other = 1 - nulls[0]
                node = node.child(schema[union][other], union, other)
                continue
        if union and set(schema) == {union} and isinstance(schema[union], list) and len(schema[union]) > 2:
            # A null branch beside several others (ACP writes an error's id as Number | Str | null): the null is
            # the nullability, the rest stays a union.
            kept = [o for o in schema[union] if strip(o) != {"type": "null"}]
            if len(kept) == len(schema[union]) - 1:
                nullable = True
                node = Node({**node.schema, union: kept}, node.file, node.path)
                continue
        if isinstance(schema.get("enum"), list) and None in schema["enum"] and len(schema["enum"]) > 1:
            nullable = True
            node = Node({**node.schema, "enum": [v for v in schema["enum"] if v is not None]}, node.file, node.path)
            continue
        break
    return node, nullable


def strip(node: Any) -> Any:
    """A schema without its annotations (one level)."""
    if not isinstance(node, dict):
        return node
    return {k: v for k, v in node.items() if k not in ANNOTATIONS and not k.startswith("x-")}


def strip_deep(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: strip_deep(v) for k, v in strip(node).items()}
    if isinstance(node, list):
        return [strip_deep(v) for v in node]
    return node


def ref_name(node: Any) -> str | None:
    """The type a schema is a pure reference to (annotations aside), else None."""
    if isinstance(node, dict):
        stripped = strip(node)
        if set(stripped) == {"$ref"} and isinstance(stripped["$ref"], str):
            return stripped["$ref"].rsplit("/", 1)[-1]
    return None


def is_open(value: Any) -> bool:
    return value is None or value is True or (isinstance(value, dict) and not strip(value))


def value_set(schema: dict[str, Any]) -> Values | None:
    """A fixed set of values (`enum`, or a union of constants), with the steps to each value; open when a
    catch-all branch (a bare type) accepts values beyond the set."""
    schema = strip(schema)
    if isinstance(schema.get("enum"), list):
        return {_hashable(v): ("enum", i) for i, v in enumerate(schema["enum"])}, False
    union = next((k for k in UNIONS if k in schema), None)
    if union is None or not isinstance(schema[union], list) or not schema[union]:
        return None
    values: dict[Any, tuple[str | int, ...]] = {}
    is_open = False
    for i, branch in enumerate(schema[union]):
        branch = strip(branch) if isinstance(branch, dict) else None
        if branch is None:
            return None
        if "const" in branch and set(branch) <= {"const", "type"}:
            values[_hashable(branch["const"])] = (union, i)
        elif set(branch) == {"type"} and branch["type"] != "null":
            is_open = True
        else:
            return None
    return (values, is_open) if values else None


def _hashable(value: Any) -> Any:
    return json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else value


def _unwrap(schema: Any) -> Any:
    """Without annotations and lone allOf wrappers (how published schemas annotate a $ref)."""
    while isinstance(schema, dict):
        stripped = strip(schema)
        if set(stripped) == {"allOf"} and isinstance(stripped["allOf"], list) and len(stripped["allOf"]) == 1:
            schema = stripped["allOf"][0]
            continue
        return stripped
    return schema


def signature(schema: Any) -> str:
    schema = _unwrap(schema)
    name = ref_name(schema)
    return f"ref:{name}" if name is not None else json.dumps(strip_deep(schema), sort_keys=True)


def branch_label(schema: Any) -> str:
    schema = _unwrap(schema)
    name = ref_name(schema)
    if name is not None:
        return name
    text = json.dumps(strip_deep(schema), sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def show(value: Any) -> str:
    if value is MISSING:
        return "(none)"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


def type_set(value: Any) -> frozenset[str] | None:
    """The JSON types a `type` keyword allows (None: any type)."""
    if value is None:
        return None
    return frozenset(value if isinstance(value, list) else [value])


def accepts(wide: frozenset[str] | None, narrow: frozenset[str] | None) -> bool:
    """Whether every value of the `narrow` types is also one of the `wide` types."""
    if wide is None:
        return True
    if narrow is None:
        return False
    return all(t in wide or (t == "integer" and "number" in wide) for t in narrow)


def types_text(value: Any) -> str:
    if value is None:
        return "any"
    return " | ".join(value) if isinstance(value, list) else str(value)
