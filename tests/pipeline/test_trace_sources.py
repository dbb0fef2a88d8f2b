"""Trace sources: a bad one is reported with positions; fixture-sized specs get none."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator import conformance
from generator.diagnostics import SpecError
from generator.pipeline import load_spec
from generator.render import traces
from tests.support import ROOT, make_project


def test_bad_trace_source_gets_every_diagnostic_with_a_position(tmp_path: Path):
    source = tmp_path / "bad.yaml"
    source.write_text(
        "traces:\n"
        "  - id: t\n"
        "    title: T\n"
        "    origin: somewhere\n"
        "    keyDependent: true\n"
        "    summary: s\n"
        "    steps:\n"
        "      - connect: A\n"
        "      - send: {conn: A, as: r1, method: no/such, params: {}}\n"
        "      - expect: {request: r9}\n"
        "      - teleport: A\n",
        encoding="utf-8",
    )
    spec = load_spec(ROOT / "spec", ROOT)
    with pytest.raises(SpecError) as caught:
        conformance.traces_document([source], spec, tmp_path)
    found = {d.code: d.location.line for d in caught.value.diagnostics}
    assert found == {
        "trace-origin": 4,
        "unknown-method": 9,
        "unknown-request": 10,
        "step-kind": 11,
        "step-undocumented": 1,  # the file has no `stepKinds` describing the vocabulary
    }


def test_fixture_sized_specs_get_no_traces(tmp_path: Path):
    root = make_project(tmp_path, "minimal")
    assert traces.render(load_spec(root / "spec", root)) == {}
