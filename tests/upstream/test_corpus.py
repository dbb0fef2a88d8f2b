"""Real upstream traffic is the judge: every v2 message the ACP authors published gets the verdict it must.

The corpus lives beside the project (`../shared/upstream-examples/`, read at test time, never copied in). Each
record carries `version`, `kind`, `method` and `expect`; see that folder's README.
"""

from __future__ import annotations

import json
import os
from functools import cache
from typing import Any

import pytest
from acp_v2_schema import load_policy, load_schema, models
from acp_v2_schema.reader import Invalid, MessageReader
from jsonschema import Draft202012Validator
from pydantic import TypeAdapter

from tests.support import ROOT

CORPUS = ROOT.parent / "shared" / "upstream-examples"
DROPPED_V1_KINDS = {"tool_call", "plan", "current_mode_update", "message_update"}


def _records() -> list[dict[str, Any]]:
    if not CORPUS.is_dir():
        if os.environ.get("CI"):
            raise RuntimeError(f"the upstream corpus is missing: {CORPUS}")
        return []
    return [json.loads(line) for path in sorted(CORPUS.glob("*.jsonl")) for line in path.read_text().splitlines()]


RECORDS = _records()
V2_VALID = [r for r in RECORDS if r["version"] == "v2" and r["expect"] == "valid"]
V2_INVALID = [r for r in RECORDS if r["version"] == "v2" and r["expect"] == "invalid"]
pytestmark = pytest.mark.skipif(not RECORDS, reason="../shared/upstream-examples is not here")


@cache
def _entries() -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["method"], e["kind"]): e for e in load_policy()["methods"]}


@cache
def _schema_validator(type_name: str) -> Draft202012Validator:
    return Draft202012Validator({"$defs": load_schema(unstable=True)["$defs"], "$ref": f"#/$defs/{type_name}"})


def _part(record: dict[str, Any]) -> tuple[str | None, Any]:
    """The type name and the value a record's message carries (params, result or error)."""
    message, kind, method = record["message"], record["kind"], record["method"]
    if kind == "error":
        return "Error", message["error"]
    if method.startswith("_"):
        return None, None
    if kind == "response":
        return _entries()[(method, "request")]["result"], message["result"]
    entry = _entries().get((method, kind))
    return (entry["params"] if entry else None), message.get("params", {})


def _validator_problems(record: dict[str, Any], *, strict: bool = False) -> list[str]:
    """What the generated reader (which the validator command runs on) finds wrong with a record's message; with
    `strict`, each value the lenient rules salvaged too (the validator's --strict)."""
    reader = MessageReader()
    message = record["message"]
    if record["kind"] in ("response", "error"):  # the request it answers came earlier in the page
        reader.expect(message.get("id"), record["method"])
    found = []
    for m in reader.read_line(json.dumps(message)):
        if isinstance(m, Invalid):
            found += m.problems
        elif strict:
            payload = getattr(m, "params", None) or getattr(m, "result", None) or getattr(m, "error", None)
            found += [str(s) for s in getattr(payload, "model_salvaged", ())]
    return found


@pytest.mark.parametrize("record", V2_VALID, ids=[r["id"] for r in V2_VALID])
def test_valid_v2_messages_are_accepted_and_round_trip(record):
    assert _validator_problems(record, strict=True) == []  # accepted as it is: nothing salvaged
    type_name, value = _part(record)
    if type_name is None:
        return
    errors = [e.message for e in _schema_validator(type_name).iter_errors(value)]
    assert errors == [], errors
    adapter = TypeAdapter(getattr(models, type_name))
    parsed = adapter.validate_json(json.dumps(value))
    assert adapter.dump_python(parsed, mode="json", by_alias=True, exclude_unset=True) == value
    # the lenient validator (models/_salvage.py) reads it the same way, losing nothing
    from acp_v2_schema.models import _salvage

    leniently = _salvage.validate(getattr(models, type_name), value, strict=True)
    assert adapter.dump_python(leniently, mode="json", by_alias=True, exclude_unset=True) == value
    assert getattr(leniently, "model_salvaged", ()) == ()


@pytest.mark.parametrize("record", V2_INVALID, ids=[r["id"] for r in V2_INVALID])
def test_invalid_v2_messages_are_rejected(record):
    # Rejected, or (as upstream's SDKs do) accepted only by salvaging: then the validator warns, and --strict fails.
    assert _validator_problems(record, strict=True) != []
    type_name, value = _part(record)
    assert type_name is not None
    assert list(_schema_validator(type_name).iter_errors(value)) != []


def test_the_corpus_is_the_size_the_readme_gives():
    assert (len(V2_VALID), len(V2_INVALID)) == (129, 17)


def test_session_update_kinds_that_v2_dropped_parse_as_unknown_variants():
    updates = [
        r["message"]["params"]["update"]
        for r in RECORDS
        if r["method"] == "session/update"
        and isinstance(r["message"].get("params"), dict)
        and isinstance(r["message"]["params"].get("update"), dict)
        and r["message"]["params"]["update"].get("sessionUpdate") in DROPPED_V1_KINDS
    ]
    assert {u["sessionUpdate"] for u in updates} == DROPPED_V1_KINDS
    adapter = TypeAdapter(models.SessionUpdate)
    for update in updates:
        parsed = adapter.validate_python(update)
        assert type(parsed).__name__ == "OtherSessionUpdate"
        assert adapter.dump_python(parsed, mode="json", by_alias=True, exclude_unset=True) == update


def test_unknown_and_extension_values_parse_into_fallbacks_everywhere():
    cases = [
        (models.SessionUpdate, {"sessionUpdate": "_acme_widget", "data": {"deep": [1, {"x": None}]}}),
        (models.ContentBlock, {"type": "_acme_block", "payload": "p"}),
        (models.SessionUpdate, {"sessionUpdate": "state_update", "state": "_acme_paused", "since": 3}),
    ]
    for model, value in cases:
        adapter = TypeAdapter(model)
        parsed = adapter.validate_python(value)
        assert type(parsed).__name__.startswith("Other") or "StateUpdate" in type(parsed).__name__
        assert adapter.dump_python(parsed, mode="json", by_alias=True, exclude_unset=True) == value
    with pytest.raises(ValueError):  # a known variant without its content is still an error
        TypeAdapter(models.SessionUpdate).validate_python({"sessionUpdate": "agent_message_chunk"})


def test_the_unknown_state_is_a_known_variant_and_other_states_fall_back():
    """ACP names a state `unknown`; the fallback of an open union must never take its place."""
    states = TypeAdapter(models.StateUpdate)
    updates = TypeAdapter(models.SessionUpdate)
    assert type(states.validate_python({"state": "unknown"})).__name__ == "UnknownStateUpdate"
    assert type(states.validate_python({"state": "_acme_paused"})).__name__ == "OtherStateUpdate"
    inner = updates.validate_python({"sessionUpdate": "state_update", "state": "_acme_paused", "since": 3})
    assert type(inner).__name__ == "OtherSessionUpdateStateUpdate"
    assert isinstance(inner, models.OtherStateUpdate)
    with pytest.raises(ValueError):  # a known state with a malformed field is still an error
        updates.validate_python({"sessionUpdate": "state_update", "state": "idle", "stopReason": 5})
