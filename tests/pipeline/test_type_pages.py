"""The type reference pages: family names readers know, no filler text, and a JSON example per type that the
type's own schema accepts."""

from __future__ import annotations

import json
import re
from pathlib import Path

from jsonschema import Draft202012Validator

from generator import paths
from generator.pipeline import load_spec
from generator.render.docs.pages import render as render_docs
from tests.support import ROOT

SPEC = load_spec(ROOT / "spec", ROOT)
PAGES = {path: text for path, text in render_docs(SPEC).items() if "/types/" in path and not path.endswith("index.md")}
SECTION = re.compile(r"^## `(?P<name>[^`]+)` \{ #[^}]+ \}\n(?P<body>.*?)(?=^## |\Z)", re.S | re.M)
EXAMPLE = re.compile(r'```json title="Example"\n(.*?)\n```', re.S)


def _examples() -> dict[str, object]:
    found = {}
    for text in PAGES.values():
        for section in SECTION.finditer(text):
            example = EXAMPLE.search(section["body"])
            if example:
                found[section["name"]] = json.loads(example.group(1))
    return found


def test_families_carry_their_display_names() -> None:
    titles = {f.name: f.title for f in SPEC.families}
    assert titles["jsonrpc"] == "JSON-RPC" and titles["mcp"] == "MCP"
    for family in SPEC.families:
        text = PAGES[paths.type_page(family.name)]
        assert f'title: "{family.title} types"' in text
        assert f"\n# {family.title} types\n" in text


def test_no_filler_shape_lines() -> None:
    for path, text in PAGES.items():
        assert not re.search(r"^An object\.$", text, re.M), path


def test_every_shown_example_is_valid_for_its_type() -> None:
    bundle = {"$defs": {t.name: t.schema for t in SPEC.types}}
    examples = _examples()
    for name, value in examples.items():
        errors = list(Draft202012Validator({**bundle, "$ref": f"#/$defs/{name}"}).iter_errors(value))
        assert errors == [], (name, [e.message for e in errors])
    # Params and results come from the worked examples, so each of them has one; nearly every other type too.
    declared = {m.params for m in SPEC.methods} | {m.result for m in SPEC.methods}
    assert declared - {None} <= set(examples)
    assert len(examples) >= 0.95 * len(SPEC.types)


def _sections() -> dict[str, str]:
    return {s["name"]: s["body"] for text in PAGES.values() for s in SECTION.finditer(text)}


def _field_rows(body: str) -> dict[str, str]:
    """Each field row of a section's table, by field name (the first code span of its first cell)."""
    return {row.split("`")[1]: row for row in body.splitlines() if row.startswith("| `")}


def test_fields_a_type_takes_through_all_of_are_listed_with_where_they_come_from() -> None:
    sections = _sections()
    checked = 0
    for t in SPEC.types:
        schema = t.schema
        own = set(schema.get("properties", {}))
        for part in schema.get("allOf") or []:
            base = part.get("$ref", "").removeprefix("#/$defs/")
            if not base or not isinstance(SPEC.type_def(base).schema.get("properties"), dict):
                continue
            rows = _field_rows(sections[t.name])
            for field in set(SPEC.type_def(base).schema["properties"]) - own:
                assert field in rows, (t.name, field)
                assert f"(from [`{base}`](../types/" in rows[field] and f"#{base})" in rows[field], rows[field]
                checked += 1
    assert checked > 0


def test_a_field_that_names_its_type_beside_a_description_links_to_it() -> None:
    # `capabilities: {description, default, allOf: [$ref]}` shows the type it refers to, never `any`.
    sections = _sections()
    checked = 0
    for t in SPEC.types:
        for field, sub in t.schema.get("properties", {}).items():
            parts = sub.get("allOf") or []
            if len(parts) == 1 and "$ref" in parts[0] and not set(sub) & {"type", "anyOf", "oneOf", "properties"}:
                target = parts[0]["$ref"].removeprefix("#/$defs/")
                assert f"[`{target}`](" in _field_rows(sections[t.name])[field], (t.name, field)
                checked += 1
    assert checked > 0


def test_a_field_that_comes_through_allof_from_a_union_is_listed() -> None:
    """A type that takes a discriminated union in through `allOf` (SessionUpdateStateUpdate takes StateUpdate) gets
    the union's tag as a field of its own, on its page, with the tag's values."""
    unions = {t.name: t.schema for t in SPEC.types if (t.schema.get("discriminator") or {}).get("propertyName")}
    found = 0
    for t in SPEC.types:
        for part in t.schema.get("allOf") or []:
            name = str(part.get("$ref", "")).rsplit("/", 1)[-1] if isinstance(part, dict) else ""
            if name not in unions:
                continue
            tag = unions[name]["discriminator"]["propertyName"]
            if tag in unions[name].get("properties", {}):
                continue  # a field of the union's own, listed as any other
            page = (ROOT / paths.REFERENCE / "types" / f"{Path(t.source).stem}.md").read_text(encoding="utf-8")
            section = page.split(f"## `{t.name}`", 1)[1].split("\n## ", 1)[0]
            row = next(line for line in section.splitlines() if line.startswith(f"| `{tag}` "))
            assert all(f'`"{value}"`' in row for value in unions[name]["discriminator"]["mapping"]), row
            found += 1
    assert found, "no type takes a discriminated union in through allOf"
