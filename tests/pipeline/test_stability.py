"""Stability per type and property: the stable file leaves out what is unstable, and every output marks it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from generator import paths
from generator.diagnostics import SpecError
from generator.model import unions, upstream_form
from generator.model.spec import Spec
from generator.pipeline import load_spec
from generator.render.schema import stability as marks
from generator.render.schema.bundles import bundle
from tests.support import ROOT


@pytest.fixture(scope="module")
def spec() -> Spec:
    return load_spec(ROOT / "spec", ROOT)


def _refs(value: Any) -> set[str]:
    if isinstance(value, dict):
        found = {value["$ref"].rsplit("/", 1)[-1]} if isinstance(value.get("$ref"), str) else set()
        return found.union(*(_refs(v) for k, v in value.items() if k != "$ref"))
    if isinstance(value, list):
        return set().union(*(_refs(v) for v in value))
    return set()


def _descriptions(value: Any) -> list[str]:
    if isinstance(value, dict):
        own = [value["description"]] if isinstance(value.get("description"), str) else []
        return own + [d for v in value.values() for d in _descriptions(v)]
    if isinstance(value, list):
        return [d for v in value for d in _descriptions(v)]
    return []


def test_the_spec_marks_types_and_properties(spec: Spec) -> None:
    unstable = [t for t in spec.types if t.stability == "unstable"]
    with_props = [t for t in spec.types if t.unstable_properties]
    assert unstable and with_props
    for t in spec.types:
        assert "x-stability" not in t.schema_json, t.name  # the model holds it beside the schema
        for name in t.unstable_properties:
            assert name in t.schema["properties"], (t.name, name)


def test_the_stable_file_leaves_out_every_unstable_item(spec: Spec) -> None:
    defs = bundle(spec, unstable=False)["$defs"]
    for t in spec.types:
        if t.stability == "unstable":
            assert t.name not in defs
        elif t.name in defs:
            kept = defs[t.name].get("properties", {})
            for name in t.unstable_properties:
                assert name not in kept and name not in defs[t.name].get("required", []), (t.name, name)
    assert _refs(defs) <= set(defs), sorted(_refs(defs) - set(defs))  # nothing dangles
    assert not [d for d in _descriptions(defs) if d.startswith(marks.MARKER)]


def test_a_union_in_the_stable_file_has_only_stable_variants_and_its_catch_all_says_so(spec: Spec) -> None:
    stable_defs = bundle(spec, unstable=False)["$defs"]
    gone = marks.unstable_types(spec)
    checked = 0
    for t in spec.types:
        union = unions.tagged_union(t.schema, "#/$defs/")
        if union is None or t.name not in stable_defs:
            continue
        dropped = {value for value, target in union.variants if target in gone}
        kept = set(union.known) - dropped
        ours = stable_defs[t.name]
        assert set(ours["discriminator"]["mapping"]) == kept, t.name
        catch_all = next(b for b in ours["oneOf"] if unions.is_catch_all(b))
        excluded = {b["properties"][union.tag]["const"] for b in catch_all["not"]["anyOf"]}
        assert excluded == kept, t.name  # an unstable tag is an unknown tag to a stable reader
        checked += bool(dropped)
    assert checked >= 3  # StateUpdate, McpServer, SessionUpdate, ... lose variants


def test_the_unstable_file_marks_each_unstable_item_in_the_published_form(spec: Spec) -> None:
    defs = json.loads((ROOT / paths.SCHEMA_UNSTABLE).read_text(encoding="utf-8"))["$defs"]
    form = re.compile(re.escape(marks.MARKER) + r"\n\n[^\n]+\n\n\S")  # marker, a sentence, then the description
    inline = upstream_form.inline_types({t.name: t.schema for t in spec.types})
    for t in spec.types:
        if t.name in inline:  # written inside its union's branch in the published form (model/upstream_form.py)
            assert t.name not in defs
            continue
        described = defs[t.name].get("description", "")
        assert bool(form.match(described)) == (t.stability == "unstable"), t.name
        for name, prop in defs[t.name].get("properties", {}).items():
            marked = marks.is_marked(prop.get("description"))
            assert marked == (name in t.unstable_properties), (t.name, name)


def test_the_models_docstrings_mark_unstable_classes_and_fields(spec: Spec) -> None:
    from acp_v2_schema import models

    classes = 0
    for t in spec.types:
        cls = getattr(models, t.name, None)
        if not isinstance(cls, type) or not cls.__doc__:
            continue
        assert (marks.MARKER in cls.__doc__) == (t.stability == "unstable"), t.name
        classes += t.stability == "unstable"
    assert classes >= 30
    source = (ROOT / paths.PYTHON_MODELS / "capabilities.py").read_text(encoding="utf-8")
    field = re.search(r"\n    providers: [^\n]+\n    \"\"\"\n    ([^\n]+)\n", source)
    assert field is not None and field.group(1) == marks.MARKER  # a field's docstring too


def _sections(page: str) -> dict[str, str]:
    """A type page's sections by type name."""
    parts = re.split(r"^## `(\w+)` \{ #\w+ \}$", page, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_the_type_pages_say_which_types_and_fields_are_unstable(spec: Spec) -> None:
    sections: dict[str, str] = {}
    for family in spec.families:
        sections.update(_sections((ROOT / paths.type_page(family.name)).read_text(encoding="utf-8")))
    assert set(sections) == {t.name for t in spec.types}
    for t in spec.types:
        text = sections[t.name]
        assert ('!!! warning "Unstable"' in text) == (t.stability == "unstable"), t.name
        flagged = set(re.findall(r"^\| `([^`]+)` \(unstable\) \|", text, flags=re.M))
        assert flagged == set(t.unstable_properties), t.name


def test_a_method_page_marks_the_unstable_fields_of_its_types(spec: Spec) -> None:
    method = next(m for m in spec.methods if m.name == "session/new" and m.kind == "request")
    page = (ROOT / paths.method_page(method.slug)).read_text(encoding="utf-8")
    names = spec.type_def(method.params).unstable_properties
    assert names  # systemPrompt
    for name in names:
        assert f"| `{name}` (unstable) |" in page


def test_a_variant_takes_the_stability_of_the_type_it_selects(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "spec", tmp_path / "spec")
    method = tmp_path / "spec" / "methods" / "session-update.yaml"
    text = method.read_text(encoding="utf-8")
    at = text.index("- name: plan_removed\n    stability: unstable")
    method.write_text(text[:at] + text[at:].replace("unstable", "stable", 1), encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_spec(tmp_path / "spec", tmp_path)
    report = caught.value.report()
    line = text[:at].count("\n") + 2
    assert f"spec/methods/session-update.yaml:{line}:16: error[variant-stability-mismatch]:" in report, report
    assert "'PlanRemoved', is unstable" in report


def test_the_types_index_marks_the_unstable_types(spec: Spec) -> None:
    index = (ROOT / paths.TYPES_INDEX_PAGE).read_text(encoding="utf-8")
    marked = set(re.findall(r"\[`(\w+)`\]\([\w-]+\.md#\w+\) \(unstable\)", index))
    assert marked == marks.unstable_types(spec)


def test_a_variant_is_found_in_either_union_shape() -> None:
    from generator.check.stability import variant_target

    ref = {"$ref": "#/$defs/PlanRemoved"}
    inline = {
        "description": "A plan was removed.",
        "type": "object",
        "properties": {"sessionUpdate": {"type": "string", "const": "plan_removed"}},
        "required": ["sessionUpdate"],
        "allOf": [ref],
    }
    assert variant_target(ref) == variant_target(inline) == "PlanRemoved"
    hiding = {**inline, "properties": {"extra": {"$ref": "#/$defs/Other"}}}
    assert variant_target(hiding) is None  # a reference beside the variant's is not the variant's
    assert variant_target({"anyOf": [ref]}) is None
    union = {"anyOf": [inline, {"allOf": [{"$ref": "#/$defs/Kept"}]}], "discriminator": {"propertyName": "x"}}
    assert marks._without_variants(union, {"PlanRemoved"})["anyOf"] == [union["anyOf"][1]]
