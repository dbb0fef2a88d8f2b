"""IdleStateUpdate in its published form: stop reasons refine the object, and any other stop reason is kept.

The JSON Schema matches the published one (the audit compares them); these tests pin what it and the flat model
(generator/model/refinements.py) accept, on messages an Agent sends.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from generator.model import refinements
from generator.render.schema.bundles import bundle
from tests.support import ROOT

ERROR = {"code": -32603, "message": "the model provider failed"}


@pytest.fixture(scope="module")
def idle_schema() -> Draft202012Validator:
    from generator.pipeline import load_spec

    document = bundle(load_spec(ROOT / "spec", ROOT), unstable=True)
    return Draft202012Validator({"$defs": document["$defs"], "$ref": "#/$defs/IdleStateUpdate"})


def _idle(**fields: Any) -> dict[str, Any]:
    return {"state": "idle", **fields}


ACCEPTED = [
    _idle(),
    _idle(stopReason=None),
    _idle(stopReason="end_turn"),
    _idle(stopReason="cancelled", background=[]),
    _idle(stopReason="error", error=ERROR),
    _idle(stopReason="error", error=None),
    _idle(stopReason="error"),
    _idle(stopReason="_acme_paused", paused={"until": "later"}),  # an extension's stop reason keeps its fields
    _idle(stopReason="budget_exhausted"),  # a later ACP version's stop reason
]
REJECTED = [
    _idle(stopReason=5),
    _idle(stopReason="error", error="it broke"),
    _idle(stopReason="error", error={"message": "no code"}),
]


@pytest.mark.parametrize("message", ACCEPTED, ids=json.dumps)
def test_schema_and_model_accept(idle_schema: Draft202012Validator, message: dict[str, Any]) -> None:
    from acp_v2_schema import models

    assert idle_schema.is_valid(message)
    parsed = models.IdleStateUpdate.model_validate_json(json.dumps(message))
    assert parsed.model_dump(mode="json", by_alias=True, exclude_unset=True) == message


@pytest.mark.parametrize("message", REJECTED, ids=json.dumps)
def test_schema_and_model_reject(idle_schema: Draft202012Validator, message: dict[str, Any]) -> None:
    from acp_v2_schema import models
    from pydantic import ValidationError

    assert not idle_schema.is_valid(message)
    with pytest.raises(ValidationError):  # strictly, as the schema says
        models.IdleStateUpdate.__pydantic_validator__.validate_json(json.dumps(message))
    # ACP marks stopReason and the error's error default-on-error: the models drop the bad value and say so
    parsed = models.IdleStateUpdate.model_validate_json(json.dumps(message))
    assert [s.rule for s in parsed.model_salvaged] == ["default-on-error"]


def test_the_error_of_an_error_stop_is_typed() -> None:
    from acp_v2_schema import models
    from pydantic import TypeAdapter

    raw = {"sessionUpdate": "state_update", **_idle(stopReason="error", error=ERROR)}
    update = TypeAdapter(models.SessionUpdate).validate_python(raw)
    assert isinstance(update, models.IdleStateUpdate)
    assert update.stop_reason == "error"
    assert isinstance(update.error, models.Error) and update.error.code == ERROR["code"]


def test_the_catch_all_is_derived_from_the_branches() -> None:
    schema = {
        "type": "object",
        "properties": {"kind": {"type": ["string", "null"]}},
        refinements.REFINED_BY: "kind",
        "anyOf": [
            {"properties": {"kind": {"const": "a"}}, "required": ["kind"]},
            {"properties": {"kind": {"const": "b"}}, "required": ["kind"]},
            {"title": "none", "properties": {"kind": {"type": "null"}}},
        ],
    }
    opened = refinements.opened(schema)
    titles = [b.get("title") for b in opened["anyOf"]]
    assert titles == [None, None, "other", "none"]  # after the last fixed value, before the none branch
    other = opened["anyOf"][2]
    assert [b["properties"]["kind"]["const"] for b in other["not"]["anyOf"]] == ["a", "b"]
    assert refinements.opened(opened) == opened  # applied twice, one catch-all


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        ({refinements.REFINED_BY: "nope"}, "must name one of the type's own properties"),
        ({"anyOf": [{"properties": {"kind": {"type": "null"}}}]}, "needs an anyOf with branches that fix"),
    ],
)
def test_problems(patch: dict[str, Any], expected: str) -> None:
    schema = {"properties": {"kind": {}}, refinements.REFINED_BY: "kind", "anyOf": [], **patch}
    assert expected in (refinements.problem(schema) or "")
    assert refinements.problem({"properties": {}}) is None
