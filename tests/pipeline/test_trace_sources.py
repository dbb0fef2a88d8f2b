"""Trace sources: a bad one is reported with positions; fixture-sized specs get none."""

from __future__ import annotations

from pathlib import Path

from generator.check import conformance
from generator.pipeline import load_spec
from generator.read.loader import parse_document
from generator.render.sdk import traces
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
        "      - teleport: A\n"
        "      - noSecondRound: {conn: A, session: s1, request: r8}\n",
        encoding="utf-8",
    )
    spec = load_spec(ROOT / "spec", ROOT)
    diagnostics: list = []
    doc = parse_document(source, source.name, source.read_bytes(), diagnostics)
    assert doc is not None and not diagnostics
    _, problems = conformance.traces_document([doc], {m.name for m in spec.methods})
    found = sorted((d.code, d.location.line) for d in problems)
    assert found == [
        ("step-kind", 11),
        ("step-undocumented", 1),  # the file has no `stepKinds` describing the vocabulary
        ("trace-origin", 4),
        ("unknown-method", 9),
        ("unknown-request", 10),
        ("unknown-request", 12),  # a retry's second round watched for a request never sent
    ]


def test_fixture_sized_specs_get_no_traces(tmp_path: Path):
    root = make_project(tmp_path, "minimal")
    assert traces.render(load_spec(root / "spec", root)) == {}


def test_trace_must_list_what_it_needs_of_the_agent(tmp_path: Path):
    source = tmp_path / "needs.yaml"
    source.write_text(
        "handshake: {metaKey: k/conformance, request: r, result: r}\n"
        "needs:\n"
        "  holdInsert: {from: handshake, description: d}\n"
        "  storedSessions: {from: handshake, description: d}\n"
        "  replay: {from: protocol, description: d}\n"
        "traces:\n"
        "  - id: t\n"
        "    title: T\n"
        "    origin: added\n"
        "    keyDependent: true\n"
        "    summary: s\n"
        "    needs: [teleport]\n"
        "    steps:\n"
        "      - connect: A\n"
        "      - newSession: {conn: A, as: s1}\n"
        "      - send: {conn: A, as: r1, method: session/prompt, params: {sessionId: $s1, prompt: [],"
        " _meta: {k/conformance: {holdInsert: true}}}}\n"
        "      - disconnect: A\n"
        "      - connect: B\n"
        "      - history: {conn: B, session: s1, userMessages: 0}\n",
        encoding="utf-8",
    )
    spec = load_spec(ROOT / "spec", ROOT)
    diagnostics: list = []
    doc = parse_document(source, source.name, source.read_bytes(), diagnostics)
    assert doc is not None and not diagnostics
    _, problems = conformance.traces_document([doc], {m.name for m in spec.methods})
    found = sorted((d.code, d.location.line) for d in problems if d.code != "step-undocumented")
    assert found == [("undeclared-need", 16), ("undeclared-need", 18), ("undeclared-need", 19), ("unknown-need", 12)]
    messages = " ".join(d.message for d in problems)
    for name in ("holdInsert", "storedSessions", "replay", "teleport"):
        assert f"`{name}`" in messages
