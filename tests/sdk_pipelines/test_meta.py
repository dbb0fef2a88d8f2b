"""The method-name files beside each schema file, as both SDKs' generators read them (tests/sdk_pipelines/meta.py).

The npm package ships no meta files, so the control is the published SDK's own schema index, generated from
upstream's meta files: its method maps must meet the same rule against the published schema.
"""

from __future__ import annotations

import json

import pytest

from tests.sdk_pipelines import meta
from tests.sdk_pipelines.conftest import SDK_INDEX, Source

PAIRS = {"schema.json": "meta.json", "schema.unstable.json": "meta.unstable.json"}


@pytest.mark.parametrize("schema_file", sorted(SDK_INDEX))
def test_published_sdk_index_lists_the_methods_the_schema_marks(schema_file: str, sources: dict[str, Source]) -> None:
    published = sources["published"]
    emitted = meta.emitted_meta((published.directory / f"sdk-index-{schema_file}.js").read_text(encoding="utf-8"))
    assert emitted.get(meta.SIDES["agent"]), "no AGENT_METHODS read from the published SDK's index"
    assert meta.meta_problems(emitted, published.schema(schema_file)) == []


@pytest.mark.parametrize("schema_file", sorted(PAIRS))
def test_ours_ships_the_meta_file_beside_each_schema(schema_file: str, sources: dict[str, Source]) -> None:
    ours = sources["ours"]
    meta_file = ours.directory / PAIRS[schema_file]
    assert meta_file.is_file(), f"{meta_file} does not exist"
    assert meta.meta_problems(json.loads(meta_file.read_text(encoding="utf-8")), ours.schema(schema_file)) == []


def test_derived_meta_meets_the_rule() -> None:
    schema = {"$defs": {"A": {"x-method": "a/b", "x-side": "both"}, "C": {"x-method": "$/c", "x-side": "protocol"}}}
    derived = meta.derived_meta(schema)
    assert meta.meta_problems(derived, schema) == []
    assert derived[meta.SIDES["protocol"]] == {"c": "$/c"}
    assert meta.meta_problems({**derived, "clientMethods": {}}, schema) == ["clientMethods lacks a/b"]
