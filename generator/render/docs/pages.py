"""Docs pages under site/reference/: the retry table and one page per (method, kind) entry.

Each page starts with front matter naming the spec file it comes from (`edit_source`); the site's hook turns that
into the page's edit link, so "edit this page" opens the YAML, not the generated Markdown.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from ... import paths
from ...check.stability import UNSTABLE
from ...model import refinements, unions
from ...model.spec import DIRECTION_TITLES, REF_PREFIX, Example, Method, Spec, TypeDef
from ...read.published import UPSTREAM_PACKAGE, UPSTREAM_VERSION
from ..markers import markdown_header
from ..templates import METHOD_PAGE_TEMPLATE, TYPE_PAGE_TEMPLATE
from ..templates import render as render_template
from .flowchart import flowchart
from .type_examples import type_examples

CLASSES_SOURCE = "spec/retry-classes.yaml"
# Who answers whom in an example, for the arrow in each step's label.
COUNTERPART = {"client": "agent", "agent": "client", "proxy": "conductor", "conductor": "proxy"}


@dataclass(frozen=True)
class FieldRow:
    name: str
    type: str
    required: bool
    description: str
    unstable: bool = False  # only in schema.unstable.json (x-stability in the spec)
    source: str = ""  # for a field the type takes from another through `allOf`: a link to that type


@dataclass(frozen=True)
class TypeView:
    name: str
    description: str
    fields: tuple[FieldRow, ...]
    unstable: bool = False


@dataclass(frozen=True)
class StepView:
    number: int
    sender: str
    receiver: str
    note: str
    lost: bool
    json: str


def render_pages(spec: Spec, rendered: Mapping[str, str]) -> dict[str, str]:
    """Phase 2 entry point: the docs pages quote no generated code, so they need only the model."""
    del rendered
    return render(spec)


def render(spec: Spec) -> dict[str, str]:
    return {**render_method_pages(spec), **render_type_pages(spec), **render_differences_page(spec)}


def render_differences_page(spec: Spec) -> dict[str, str]:
    """The page of deliberate differences from the published schema, when the spec lists any."""
    return {paths.DIFFERENCES_PAGE: _differences_page(spec)} if spec.upstream_differences else {}


def render_type_pages(spec: Spec) -> dict[str, str]:
    """The page of each type family and their index (apart, because they read no method's prose)."""
    return _type_pages(spec, type_links(spec))


def render_method_pages(spec: Spec) -> dict[str, str]:
    """The retry table and the page of each method entry."""
    files = {paths.RETRY_TABLE_PAGE: _table_page(spec)}
    links = type_links(spec)
    for method in spec.methods:
        files[paths.method_page(method.slug)] = render_template(
            METHOD_PAGE_TEMPLATE,
            header=markdown_header(method.source),
            m=method,
            cls=spec.retry_class(method.retry_class),
            spec=spec,
            types=_types_of(spec, method, links),
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
    page = render_template(
        paths.RETRY_TABLE_PAGE + ".j2",
        header=markdown_header("spec/"),
        source=CLASSES_SOURCE,
        spec=spec,
        groups=groups,
        flowchart=flowchart(spec),
        requests=[m for m in spec.methods if m.kind == "request"],
        notifications=[m for m in spec.methods if m.kind == "notification"],
    )
    return with_sections(page)


_SECTION = re.compile(r"^## (.+?)(?: \{ #([\w-]+) \})?$", re.M)


def with_sections(page: str) -> str:
    """The page with a line of links to its `##` sections after its first paragraph: a page that gives its wide
    tables the whole width (no table of contents beside them) still lets a reader go straight to a section."""
    links = []
    for title, anchor in _SECTION.findall(page):
        slug = anchor or re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", title).strip().lower())
        links.append(f"[{title}](#{slug})")
    if not links:
        return page
    body = page.index("\n---\n", 4) + 5  # after the front matter, whose comments also start with "# "
    heading = page.index("\n# ", body - 1)
    intro_end = page.index("\n\n", page.index("\n\n", heading + 1) + 2)  # the first paragraph under the title
    return f"{page[:intro_end]}\n\nOn this page: {' · '.join(links)}{page[intro_end:]}"


def _differences_page(spec: Spec) -> str:
    source = "spec/upstream-differences.yaml"
    return render_template(
        paths.DIFFERENCES_PAGE + ".j2",
        header=markdown_header(source),
        source=source,
        upstream_package=UPSTREAM_PACKAGE,
        upstream_version=UPSTREAM_VERSION,
        differences=spec.upstream_differences,
        behaviours=spec.upstream_behaviours,
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


def _types_of(spec: Spec, method: Method, links: dict[str, str]) -> list[tuple[str, TypeView]]:
    out = []
    for title, name in (("Params", method.params), ("Result", method.result)):
        if name is not None:
            out.append((title, _view(spec.type_def(name), links, spec)))
    return out


def _view(t: TypeDef, links: dict[str, str], spec: Spec) -> TypeView:
    schema = t.schema
    required = set(schema.get("required", []))
    fields = [
        FieldRow(
            field,
            type_label(sub, links),
            field in required,
            sub.get("description", ""),
            field in t.unstable_properties,
        )
        for field, sub in schema.get("properties", {}).items()
    ]
    named = {f.name for f in fields}
    for row in _composed(schema, links, spec, frozenset({t.name})):
        if row.name not in named:
            named.add(row.name)
            fields.append(row)
    return TypeView(t.name, schema.get("description", ""), tuple(fields), t.stability == UNSTABLE)


def _composed(schema: dict[str, Any], links: dict[str, str], spec: Spec, seen: frozenset[str]) -> list[FieldRow]:
    """The fields a type takes from the types its `allOf` names (and they from theirs), each with a link to the type
    that declares it: a chunk variant of session/update gets `messageId` and `content` from ContentChunk."""
    names = {t.name for t in spec.types}
    rows: list[FieldRow] = []
    for part in schema.get("allOf") or []:
        ref = part.get("$ref") if isinstance(part, dict) else None
        name = ref.removeprefix(REF_PREFIX) if isinstance(ref, str) else None
        if name is None or name not in names or name in seen:
            continue
        base = spec.type_def(name)
        base_schema = base.schema
        source = type_label({"$ref": ref}, links)
        required = set(base_schema.get("required", []))
        tag = (base_schema.get("discriminator") or {}).get("propertyName")
        if isinstance(tag, str) and tag not in base_schema.get("properties", {}):
            # A union (StateUpdate): its tag is a field of every variant, so of the type that takes the union in.
            values = ", ".join(f'`"{value}"`' for value in (base_schema["discriminator"].get("mapping") or {}))
            branches = base_schema.get("oneOf") or base_schema.get("anyOf") or []
            variants = ", ".join(type_label(b, links) for b in branches if isinstance(b, dict))
            said = f"Names which variant of {source} this is; the other fields are the variant's ({variants})."
            rows.append(FieldRow(tag, values or "`string`", True, said, False, source))
        for field, sub in base_schema.get("properties", {}).items():
            rows.append(
                FieldRow(
                    field,
                    type_label(sub, links),
                    field in required,
                    sub.get("description", ""),
                    field in base.unstable_properties,
                    source,
                )
            )
        rows += _composed(base_schema, links, spec, seen | {name})
    return rows


# -- type reference: one page per type family (a file under spec/types/) --------------------------------------
@dataclass(frozen=True)
class TypeSection:
    name: str
    description: str
    shape: str
    fields: tuple[FieldRow, ...]
    used_by: tuple[str, ...]
    example: str | None
    unstable: bool = False


def type_links(spec: Spec) -> dict[str, str]:
    """Where each type is documented, as a link that works from any page one level under reference/."""
    return {t.name: f"../types/{_family(t.source)}.md#{t.name}" for t in spec.types}


def _family(source: str) -> str:
    return PurePosixPath(source).stem


def _type_pages(spec: Spec, links: dict[str, str]) -> dict[str, str]:
    if not spec.types:
        return {}
    users: dict[str, list[str]] = {}
    for m in spec.methods:
        for role, name in (("params", m.params), ("result", m.result)):
            if name is not None:
                users.setdefault(name, []).append(f"{role} of [`{m.name}`](../methods/{m.slug}.md)")
    examples = type_examples(spec)
    sections: dict[str, list[TypeSection]] = {}
    for t in sorted(spec.types, key=lambda t: (_family(t.source), t.name)):
        schema = t.schema
        view = _view(t, links, spec)
        section = TypeSection(
            t.name,
            view.description,
            _shape(schema, links),
            view.fields,
            tuple(users.get(t.name, ())),
            examples.get(t.name),
            view.unstable,
        )
        sections.setdefault(_family(t.source), []).append(section)
    families = [(f, sections[f.name]) for f in spec.families if f.name in sections]
    files = {}
    for family, found in families:
        files[paths.type_page(family.name)] = render_template(
            TYPE_PAGE_TEMPLATE, header=markdown_header(family.source), family=family, sections=found
        )
    files[paths.TYPES_INDEX_PAGE] = render_template(
        paths.TYPES_INDEX_PAGE + ".j2", header=markdown_header("spec/types/"), families=families
    )
    return files


def _shape(schema: dict[str, Any], links: dict[str, str]) -> str:
    """One line on what a value of the type looks like, for types that are not plain objects with fields."""
    refined = refinements.refined_by(schema)
    if refined is not None:
        return _refinement_shape(schema, refined, links)
    if "properties" in schema and not any(k in schema for k in ("oneOf", "anyOf")):
        # The field table describes the object; only a closed object needs a word more.
        return "Fields not listed here are not allowed." if schema.get("additionalProperties") is False else ""
    for keyword, word in (("oneOf", "Exactly one of"), ("anyOf", "One of")):
        if keyword in schema:
            options = ", ".join(type_label(o, links) for o in schema[keyword])
            tag = schema.get("discriminator", {}).get("propertyName")
            told = f", told apart by `{tag}`" if tag else ""
            return f"{word}: {options}{told}."
    constraints = []
    if "minLength" in schema or "maxLength" in schema:
        low, high = schema.get("minLength", 0), schema.get("maxLength")
        span = f"{low} to {high}" if high is not None else f"at least {low}"
        constraints.append(f"{span} characters (Unicode code points)")
    if "pattern" in schema:
        constraints.append(f"matching `{schema['pattern']}`")
    if "format" in schema:
        constraints.append(f"format `{schema['format']}`")
    for key, word in (("minimum", "at least"), ("maximum", "at most")):
        if key in schema:
            constraints.append(f"{word} {schema[key]}")
    label = type_label(schema, links)
    return f"{label}" + (f", {', '.join(constraints)}." if constraints else ".")


def _refinement_shape(schema: dict[str, Any], name: str, links: dict[str, str]) -> str:
    """What each value of the refining property means, for an object refined by it (generator/model/refinements.py)."""
    options = []
    for branch in schema["anyOf"]:
        prop = branch.get("properties", {}).get(name, {})
        if "const" in prop:
            extra = [type_label(part, links) for part in branch.get("allOf", [])]
            options.append(f'`"{prop["const"]}"`' + (f" (adds the fields of {', '.join(extra)})" if extra else ""))
        elif unions.is_catch_all(branch):
            options.append("any other string (a later version's or an extension's, kept as it is)")
        else:
            options.append("absent (or `null`)")
    return f"`{name}` is {', '.join(options[:-1])}, or {options[-1]}."


def type_label(schema: dict[str, Any], links: dict[str, str] | None = None) -> str:
    """A short, readable type: `SessionId`, `ContentBlock[]`, `IdempotencyKey | null`, `"text"`.

    With `links`, named types become links to their section of the type reference.
    """
    links = links or {}
    if "$ref" in schema:
        name = schema["$ref"].removeprefix(REF_PREFIX)
        return f"[`{name}`]({links[name]})" if name in links else f"`{name}`"
    if "const" in schema:
        return f'`"{schema["const"]}"`'
    composed = [part for part in schema.get("allOf") or [] if isinstance(part, dict)]
    if composed and "type" not in schema and not any(k in schema for k in ("anyOf", "oneOf", "properties")):
        # A reference written with a description or a default beside it (`allOf: [$ref]`) names its type.
        return " & ".join(type_label(part, links) for part in composed)
    for keyword in ("anyOf", "oneOf"):
        if keyword in schema:
            return " \\| ".join(type_label(option, links) for option in schema[keyword])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " \\| ".join(type_label({**schema, "type": k}, links) for k in kind)
    if kind == "array":
        items = schema.get("items", {})
        inner = type_label(items, links) if items else "`any`"
        suffix = f" (at least {schema['minItems']})" if schema.get("minItems") else ""
        return f"{inner}[]{suffix}"
    if "enum" in schema:
        return " \\| ".join(f'`"{v}"`' for v in schema["enum"])
    return f"`{kind}`" if kind else "`any`"
