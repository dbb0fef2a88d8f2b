"""The `x-deserialize-*` annotations stand where the published ACP v2 schema puts them (issue 25).

Upstream's def and property names are ours, except where our spec writes a union differently: a property that
upstream keeps on a union's own def is, in our spec, a property of each variant the union names, and carries the
annotation there. What the spec adds on purpose (spec/upstream-differences.yaml: a type defined here only, a property
only here) has nothing upstream to match, and is left out of the comparison.
"""

from __future__ import annotations

from typing import Any

from acp_v2_schema import load_schema

from generator.model import lenience
from tests.upstream.deliberate import deliberate


def _places(defs: dict[str, Any]) -> set[tuple[Any, ...]]:
    found = set()
    for name, node in defs.items():
        branches = [((), node)] + [
            ((word, i), branch) for word in ("anyOf", "oneOf", "allOf") for i, branch in enumerate(node.get(word, []))
        ]
        for at, branch in branches:
            if not isinstance(branch, dict):
                continue
            for prop, schema in (branch.get("properties") or {}).items():
                for key in lenience.KEYS:
                    if isinstance(schema, dict) and schema.get(key) is True:
                        found.add((name, *at, prop, key))
    return found


def test_every_upstream_annotation_has_its_place_in_ours(upstream):
    theirs = _places(upstream.schema["$defs"])
    ours_defs = load_schema(unstable=True)["$defs"]
    ours = _places(ours_defs)
    theirs_only = deliberate().theirs_only  # upstream's types we do without on purpose (listed, with a reason)
    missing = []
    for name, *rest in sorted(theirs, key=repr):
        if (name, *rest) in ours or name in theirs_only:
            continue
        variants = [o["$ref"].rsplit("/", 1)[-1] for o in ours_defs.get(name, {}).get("oneOf", []) if "$ref" in o]
        prop, key = rest[-2], rest[-1]
        holders = [v for v in variants if prop in ours_defs[v].get("properties", {})]
        if len(rest) != 2 or not holders or any((v, prop, key) not in ours for v in holders):
            missing.append((name, *rest))
    assert missing == []
    counts = {key: sum(1 for p in theirs if p[-1] == key) for key in lenience.KEYS}
    assert counts == {
        lenience.DEFAULT_ON_ERROR: 326,
        lenience.SKIP_INVALID_ITEMS: 28,
        lenience.DEFAULT_ON_NULL: 12,
    }


def test_ours_has_no_annotation_that_upstream_lacks(upstream):
    theirs = _places(upstream.schema["$defs"])
    theirs_props = {(p[0], p[-2], p[-1]) for p in theirs}
    ours_defs = load_schema(unstable=True)["$defs"]
    # a variant's property stands for the union's own property upstream
    union_of = {
        o["$ref"].rsplit("/", 1)[-1]: name
        for name, node in ours_defs.items()
        for o in node.get("oneOf", [])
        if "$ref" in o
    }
    ours_only = deliberate()
    extra = [
        p
        for p in _places(ours_defs)
        if p not in theirs
        and (union_of.get(p[0]), p[-2], p[-1]) not in theirs_props
        and p[0] not in ours_only.types
        and (p[0], p[-2]) not in ours_only.properties
    ]
    assert extra == []
