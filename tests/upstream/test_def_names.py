"""The audit compares def names: ours as we publish them against the pinned published schema's."""

from __future__ import annotations

from generator import audit, def_names
from generator.pipeline import load_spec
from tests.support import ROOT

from .conftest import Upstream

SPEC = load_spec(ROOT / "spec", ROOT)


def test_every_published_def_name_is_ours_and_ours_add_only_listed_ones(upstream: Upstream) -> None:
    found = def_names.differences(SPEC, upstream.schema)
    assert [d.line() for d in found if d.what == "only there"] == []
    listed = {item.difference for item in audit.listed_in(SPEC)}
    assert found and all(d.line() in listed for d in found)


def test_a_def_only_one_side_has_is_reported(upstream: Upstream) -> None:
    schema = upstream.schema
    schema["$defs"]["PlantedType"] = {"type": "string"}
    del schema["$defs"]["TextContent"]
    lines = {d.line() for d in audit.compare(SPEC, schema)}
    assert {"def PlantedType: only there", "def TextContent: only here"} <= lines
