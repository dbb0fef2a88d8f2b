"""The published schemas have ACP's own shapes (generator/model/upstream_form.py) and accept what the internal form
accepts: the SDKs' code generators read the shapes, validators read the rules."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from generator.model import unions, upstream_form
from generator.model.spec import REF_PREFIX
from generator.pipeline import load_spec
from generator.render.schema import bundles as schema
from tests.support import ROOT

SPEC = load_spec(ROOT / "spec", ROOT)
INTERNAL = schema.bundle(SPEC, unstable=True)
PUBLISHED = json.loads(schema.bundle_text(SPEC, unstable=True))
CORPUS = ROOT.parent / "shared" / "upstream-examples"


def _walk(node: Any, path: str = ""):
    if isinstance(node, dict):
        yield path, node
        for key, item in node.items():
            yield from _walk(item, f"{path}/{key}")
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _walk(item, f"{path}/{index}")


UNIONS = {
    name: union
    for name, definition in INTERNAL["$defs"].items()
    if (union := unions.tagged_union(definition, REF_PREFIX)) is not None
}


def test_the_spec_has_tagged_unions_and_inline_variants():
    assert len(UNIONS) > 10
    assert upstream_form.inline_types(INTERNAL["$defs"]), "no union lists x-inline variants"


@pytest.mark.parametrize("name", sorted(UNIONS))
def test_each_tagged_union_is_an_anyof_of_const_tagged_branches_then_the_catch_all(name):
    union = UNIONS[name]
    published = PUBLISHED["$defs"][name]
    assert "oneOf" not in published and "discriminator" not in published
    branches = published["anyOf"]
    assert unions.is_catch_all(branches[-1]) and branches[-1]["title"] == unions.CATCH_ALL_TITLE
    known = branches[:-1]
    assert [b["properties"][union.tag] for b in known] == [{"type": "string", "const": v} for v in union.known]
    inline = upstream_form.inline_types(INTERNAL["$defs"])
    for branch, (_, type_name) in zip(known, union.variants, strict=True):
        assert branch["type"] == "object" and branch["required"][0] == union.tag
        if type_name in inline:
            assert type_name not in PUBLISHED["$defs"]
        else:
            # a named variant: its fields are its type's, which no longer carries the tag
            assert branch["allOf"] == [{"$ref": REF_PREFIX + type_name}]
            variant = PUBLISHED["$defs"][type_name]
            assert union.tag not in variant.get("properties", {}) and union.tag not in variant.get("required", [])


def test_def_names_are_the_internal_ones_less_the_inline_variants():
    inline = upstream_form.inline_types(INTERNAL["$defs"])
    assert set(PUBLISHED["$defs"]) == set(INTERNAL["$defs"]) - inline


def test_no_reference_has_siblings_and_no_union_branch_is_a_bare_reference():
    for path, node in _walk(PUBLISHED):
        if "$ref" in node:
            assert set(node) == {"$ref"}, path
        for key in ("anyOf", "oneOf"):
            branches = node.get(key) or []
            if len(branches) == 2 and {"type": "null"} in branches:
                continue
            assert not any(isinstance(b, dict) and set(b) == {"$ref"} for b in branches), f"{path}/{key}"


def test_a_union_of_inline_variants_writes_their_shared_fields_once():
    """Every union whose variants are all written inline: the fields its variants share (same schema in each) sit
    once on the union, required where every variant requires them, and each known branch keeps only its own."""
    checked = []
    for name, union in UNIONS.items():
        tags = {value for value, _ in union.variants}
        if set(upstream_form.inline_tags(INTERNAL["$defs"][name])) != tags:
            continue
        variants = {value: INTERNAL["$defs"][type_name] for value, type_name in union.variants}
        fields = [v.get("properties", {}) for v in variants.values()]
        shared = {f for f in set(fields[0]).intersection(*fields[1:]) if all(p[f] == fields[0][f] for p in fields)}
        shared.discard(union.tag)
        required = set.intersection(*(set(v.get("required", [])) for v in variants.values())) & shared
        published = PUBLISHED["$defs"][name]
        assert shared <= set(published["properties"]), name
        assert set(published.get("required", [])) == required, name
        for branch in published["anyOf"]:
            value = branch["properties"][union.tag].get("const")
            if value in variants:  # a known variant; the fallback branch is checked by the open-union tests
                own = set(variants[value].get("properties", {})) - shared
                assert set(branch["properties"]) == own, f"{name}: {value}"
        checked.append((name, set(fields[0]) - shared - {union.tag}))
    assert any(own for _, own in checked), "no union of inline variants with fields of their own was checked"


def test_the_rewrite_does_not_change_the_internal_bundle():
    before = json.dumps(INTERNAL, sort_keys=True)
    upstream_form.published(INTERNAL)
    assert json.dumps(INTERNAL, sort_keys=True) == before


# -- same verdicts ------------------------------------------------------------------------------------------------
@cache
def _validator(document_name: str, type_name: str) -> Draft202012Validator:
    document = INTERNAL if document_name == "internal" else PUBLISHED
    return Draft202012Validator({"$defs": document["$defs"], "$ref": REF_PREFIX + type_name})


def _values() -> list[tuple[str, Any]]:
    """(type, value) pairs: every params or result of the upstream corpus, and variations of each (a tag changed
    to an unknown or another known value, a property removed), so that both verdicts occur."""
    if not CORPUS.is_dir():
        return []
    entries = {(m.name, m.kind): m for m in SPEC.methods}
    found: list[tuple[str, Any]] = []
    for path in sorted(CORPUS.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record["version"] != "v2" or record["method"].startswith("_"):
                continue
            message, kind = record["message"], record["kind"]
            if kind == "response" and (record["method"], "request") in entries:
                found.append((entries[(record["method"], "request")].result, message.get("result")))
            elif kind in ("request", "notification") and (record["method"], kind) in entries:
                found.append((entries[(record["method"], kind)].params, message.get("params", {})))
    out = []
    for type_name, value in found:
        if type_name is None:
            continue
        out.append((type_name, value))
        for variant in _variations(value):
            out.append((type_name, variant))
    return out


def _variations(value: Any) -> list[Any]:
    out = []
    for path, node in _walk(value):
        for key in list(node):
            out.append(_replaced(value, path, {k: v for k, v in node.items() if k != key}))
            if isinstance(node[key], str):
                for other in ("_vendor", "text", "agent_message_chunk", "id", "accept", "move"):
                    out.append(_replaced(value, path, {**node, key: other}))
    return out


def _replaced(value: Any, path: str, new: Any) -> Any:
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    *parents, last = path.strip("/").split("/")
    node = copy
    for step in parents:
        node = node[int(step)] if isinstance(node, list) else node[step]
    node[int(last) if isinstance(node, list) else last] = new
    return copy


VALUES = _values()


@pytest.mark.skipif(not VALUES, reason="../shared/upstream-examples is not here")
def test_the_published_form_gives_every_message_the_internal_forms_verdict():
    verdicts = {True: 0, False: 0}
    for type_name, value in VALUES:
        internal = _validator("internal", type_name).is_valid(value)
        published = _validator("published", type_name).is_valid(value)
        assert internal == published, (type_name, json.dumps(value)[:400])
        verdicts[internal] += 1
    assert verdicts[True] > 100 and verdicts[False] > 100, verdicts


def test_defs_come_in_acps_order_a_variant_s_type_after_what_it_reaches():
    """The Python SDK's pipeline inserts code after classes it expects to follow others, which holds in ACP's order
    (each def where first referenced from the envelopes; a variant's type after the defs it reaches)."""
    order = list(PUBLISHED["$defs"])
    assert order[0] == "AgentRequest" and order[1] == "RequestId"
    # a variant's type follows the defs it reaches (TextContent reaches Annotations), a plain reference precedes
    assert order.index("Annotations") < order.index("TextContent")
    assert order.index("ContentBlock") < order.index("TextContent")
    assert set(order) == set(PUBLISHED["$defs"]) and len(order) == len(set(order))


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/upstream-examples is not here")
def test_the_root_takes_every_valid_upstream_message_and_is_acps_title():
    assert PUBLISHED["title"] == upstream_form.ACP_TITLE
    assert [b["title"] for b in PUBLISHED["anyOf"]] == ["Agent", "Client", "ProtocolLevel", "Proxy"]
    root = Draft202012Validator(PUBLISHED)
    checked = 0
    for path in sorted(CORPUS.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record["version"] == "v2" and record["expect"] == "valid":
                assert root.is_valid(record["message"]), record["id"]
                checked += 1
    assert checked == 129
    assert not root.is_valid({"id": 1, "method": "initialize", "params": {}})  # no jsonrpc
