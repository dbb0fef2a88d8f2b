"""Docs pages under site/reference/: the retry table and one page per (method, kind) entry.

Each page starts with front matter naming the spec file it comes from (`edit_source`); the site's hook turns that
into the page's edit link, so "edit this page" opens the YAML, not the generated Markdown.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..model import DIRECTION_TITLES, Example, Method, Spec
from ..semantics import REF_PREFIX
from .markers import markdown_header
from .templates import render as render_template

REFERENCE = "site/reference"
CLASSES_SOURCE = "spec/retry-classes.yaml"
# Who answers whom in an example, for the arrow in each step's label.
COUNTERPART = {"client": "agent", "agent": "client", "proxy": "conductor", "conductor": "proxy"}


@dataclass(frozen=True)
class FieldRow:
    name: str
    type: str
    required: bool
    description: str


@dataclass(frozen=True)
class TypeView:
    name: str
    description: str
    fields: tuple[FieldRow, ...]


@dataclass(frozen=True)
class StepView:
    number: int
    sender: str
    receiver: str
    note: str
    lost: bool
    json: str


def render(spec: Spec) -> dict[str, str]:
    files = {f"{REFERENCE}/retry-classes.md": _table_page(spec)}
    names = [m.name for m in spec.methods]
    for method in spec.methods:
        files[f"{REFERENCE}/methods/{method.slug}.md"] = render_template(
            "method.md.j2",
            header=markdown_header(method.source),
            m=method,
            cls=spec.retry_class(method.retry_class),
            spec=spec,
            twin=names.count(method.name) > 1,
            types=_types_of(spec, method),
            steps=_steps(method.example),
        )
    return files


def _table_page(spec: Spec) -> str:
    groups = [
        (f"{DIRECTION_TITLES[d]} requests", [m for m in spec.methods if m.kind == "request" and m.direction == d])
        for d in DIRECTION_TITLES
    ]
    groups = [(title, rows) for title, rows in groups if rows]
    groups.append(("Notifications", [m for m in spec.methods if m.kind == "notification"]))
    return render_template(
        "retry-classes.md.j2",
        header=markdown_header("spec/"),
        source=CLASSES_SOURCE,
        spec=spec,
        groups=groups,
        requests=[m for m in spec.methods if m.kind == "request"],
        notifications=[m for m in spec.methods if m.kind == "notification"],
    )


def _steps(example: Example | None) -> list[StepView]:
    if example is None:
        return []
    return [
        StepView(
            i,
            step.sender.capitalize(),
            COUNTERPART[step.sender].capitalize(),
            step.note,
            step.lost,
            json.dumps(step.message, indent=2, ensure_ascii=False),
        )
        for i, step in enumerate(example.steps, start=1)
    ]


def _types_of(spec: Spec, method: Method) -> list[tuple[str, TypeView]]:
    out = []
    for title, name in (("Params", method.params), ("Result", method.result)):
        if name is not None:
            out.append((title, _view(spec.type_def(name).schema, name)))
    return out


def _view(schema: dict[str, Any], name: str) -> TypeView:
    required = set(schema.get("required", []))
    fields = tuple(
        FieldRow(field, type_label(sub), field in required, sub.get("description", ""))
        for field, sub in schema.get("properties", {}).items()
    )
    return TypeView(name, schema.get("description", ""), fields)


def type_label(schema: dict[str, Any]) -> str:
    """A short, readable type: `SessionId`, `ContentBlock[]`, `IdempotencyKey | null`, `"text"`."""
    if "$ref" in schema:
        return f"`{schema['$ref'].removeprefix(REF_PREFIX)}`"
    if "const" in schema:
        return f'`"{schema["const"]}"`'
    for keyword in ("anyOf", "oneOf"):
        if keyword in schema:
            return " \\| ".join(type_label(option) for option in schema[keyword])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " \\| ".join(type_label({**schema, "type": k}) for k in kind)
    if kind == "array":
        items = schema.get("items", {})
        inner = type_label(items) if items else "`any`"
        suffix = f" (at least {schema['minItems']})" if schema.get("minItems") else ""
        return f"{inner}[]{suffix}"
    if "enum" in schema:
        return " \\| ".join(f'`"{v}"`' for v in schema["enum"])
    return f"`{kind}`" if kind else "`any`"
