"""`idempotencyKey` under the generated JSON Schema and the generated pydantic models: the two must agree.

Lengths are Unicode code points, as JSON Schema counts them: as many emoji as the spec's maximum is a valid key. The
bounds are the spec's (tests.support.key_rules), so a changed bound is tested at the new bound.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from acp_v2_schema import load_schema
from acp_v2_schema.models import PromptRequest
from acp_v2_schema.models._open_unions import error_paths
from jsonschema import Draft202012Validator
from pydantic import ValidationError

from tests.support import key_rules

OMIT = object()
RULES = key_rules()
MIN, MAX = RULES.min_length, RULES.max_length or 0
VALID = {
    "shortest": "k" * MIN,
    "uuid": str(uuid.UUID(int=0x0B4F9C587A1E4D3B9F622C8E51D7A0C4)),
    "longest ascii": "a" * MAX,
    "longest emoji": "\N{GRINNING FACE}" * MAX,
    "longest mixed non-ascii": ("é中\N{PILE OF POO}" * MAX)[:MAX],
    "whitespace only": " " * max(MIN, 3),
    "upper case": "ABC-key",
}
INVALID = {
    "empty": "",
    "one over the longest ascii": "a" * (MAX + 1),
    "one over the longest emoji": "\N{GRINNING FACE}" * (MAX + 1),
    "integer": 42,
    "float": 4.2,
    "boolean": True,
    "array": ["k"],
    "object": {"key": "k"},
}


def _params(key: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"sessionId": "sess_1", "prompt": [{"type": "text", "text": "hello"}]}
    if key is not OMIT:
        params["idempotencyKey"] = key
    return params


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    bundle = load_schema()
    schema = {"$schema": bundle["$schema"], "$defs": bundle["$defs"], "$ref": "#/$defs/PromptRequest"}
    return Draft202012Validator(schema)


def _schema_errors(validator: Draft202012Validator, params: dict[str, Any]) -> list[str]:
    return [".".join(map(str, e.absolute_path)) for e in validator.iter_errors(params)]


def _model_errors(params: dict[str, Any]) -> list[str]:
    try:
        PromptRequest.model_validate_json(json.dumps(params))
    except ValidationError as exc:
        return [".".join(map(str, e["loc"])) for e in exc.errors()]
    return []


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_keys_are_accepted_by_both(name: str, validator: Draft202012Validator) -> None:
    params = _params(VALID[name])
    assert _schema_errors(validator, params) == []
    assert _model_errors(params) == []
    assert PromptRequest.model_validate(params).idempotency_key == VALID[name]


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_keys_are_rejected_by_both_naming_the_field(name: str, validator: Draft202012Validator) -> None:
    params = _params(INVALID[name])
    schema_errors = _schema_errors(validator, params)
    model_errors = _model_errors(params)
    assert schema_errors and all(path.startswith("idempotencyKey") for path in schema_errors)
    assert model_errors and all(path.startswith("idempotencyKey") for path in model_errors)


def test_null_and_omitted_mean_the_same(validator: Draft202012Validator) -> None:
    omitted, null = _params(OMIT), _params(None)
    assert _schema_errors(validator, omitted) == _schema_errors(validator, null) == []
    a, b = PromptRequest.model_validate(omitted), PromptRequest.model_validate(null)
    assert a == b and a.idempotency_key is None
    # what serialization emits: the wire form leaves an absent key out
    assert "idempotencyKey" not in a.model_dump(by_alias=True, exclude_none=True)


def test_keys_differing_only_in_case_stay_distinct() -> None:
    lower = PromptRequest.model_validate(_params("key-a"))
    upper = PromptRequest.model_validate(_params("KEY-A"))
    assert lower.idempotency_key != upper.idempotency_key


def test_wire_names_are_camel_case_and_attributes_snake_case() -> None:
    request = PromptRequest.model_validate(_params("k"))
    dumped = request.model_dump(by_alias=True, exclude_none=True)
    assert dumped["sessionId"] == request.session_id == "sess_1"
    assert dumped["idempotencyKey"] == "k"


def test_content_blocks_are_an_open_discriminated_union() -> None:
    params = _params("k")
    params["prompt"] = [
        {"type": "text", "text": "look"},
        {"type": "resource", "resource": {"uri": "file:///a.py", "text": "print(1)"}},
        {"type": "resource_link", "uri": "file:///b.py", "name": "b.py"},
    ]
    request = PromptRequest.model_validate(params)
    assert [type(b).__name__ for b in request.prompt] == ["TextContent", "EmbeddedResource", "ResourceLink"]
    # A block type this version does not know is kept whole; a malformed known block is still an error.
    params["prompt"] = [{"type": "video", "data": "..."}]
    block = PromptRequest.model_validate(params).prompt[0]
    assert type(block).__name__ == "OtherContentBlock"
    assert block.model_dump(by_alias=True, exclude_unset=True) == {"type": "video", "data": "..."}
    params["prompt"] = [{"type": "text"}]
    with pytest.raises(ValidationError) as info:
        PromptRequest.model_validate(params)
    # pydantic reports both branches of the open union; readers show only the known variant's own errors.
    assert [loc[-1] for loc, _ in error_paths(info.value.errors())] == ["text"]


def test_an_empty_prompt_is_rejected(validator: Draft202012Validator) -> None:
    params = _params(OMIT)
    params["prompt"] = []
    assert _schema_errors(validator, params) == ["prompt"]
    assert _model_errors(params) == ["prompt"]
