"""The generated Python module (`acp_v2_schema.retry`) and models against the shared conformance vectors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from acp_v2_schema import load_schema, retry
from acp_v2_schema.models import PromptRequest
from jsonschema import Draft202012Validator
from pydantic import ValidationError

from tests.sdk.agreement import comparison_mismatches, decision_mismatches, key_mismatches


def _answer(value: Any) -> dict[str, Any]:
    problem = retry.idempotency_key_problem(value)
    try:
        returned = retry.validate_idempotency_key(value)
    except retry.InvalidIdempotencyKey as exc:
        assert exc.problem is problem, "the exception and the problem function disagree"
        assert isinstance(exc, ValueError)
    else:
        assert problem is None and returned is value
    assert retry.is_valid_idempotency_key(value) is (problem is None)
    return {"held": True, "valid": problem is None, "reason": None if problem is None else problem.value}


def test_key_validator_passes_every_vector(key_vectors: dict[str, Any]) -> None:
    answers = [_answer(v["value"]) for v in key_vectors["vectors"]]
    assert key_mismatches(answers, key_vectors["vectors"]) == []


def test_limits_and_reasons_match_the_vectors(key_vectors: dict[str, Any]) -> None:
    assert key_vectors["minLength"] == retry.IDEMPOTENCY_KEY_MIN_LENGTH
    assert key_vectors["maxLength"] == retry.IDEMPOTENCY_KEY_MAX_LENGTH
    assert [p.value for p in retry.KeyProblem] == list(key_vectors["reasons"])


def test_keys_compare_by_code_points(key_vectors: dict[str, Any]) -> None:
    answers = [c["a"] == c["b"] for c in key_vectors["comparisons"]]
    assert comparison_mismatches(answers, key_vectors["comparisons"]) == []


def test_may_resend_passes_every_case(decision_cases: list[dict[str, Any]]) -> None:
    answers = [
        retry.may_resend(
            c["method"],
            c["kind"],
            c["failure"],
            c["hasKey"],
            error_code=c["errorCode"],
            variant=c["variant"],
            allow_duplicates=c["allowDuplicates"],
        )
        for c in decision_cases
    ]
    assert decision_mismatches(answers, decision_cases) == []


def _params(key: Any) -> dict[str, Any]:
    return {"sessionId": "sess_1", "prompt": [{"type": "text", "text": "hi"}], "idempotencyKey": key}


def _pydantic_accepts(params: dict[str, Any]) -> bool:
    try:
        PromptRequest.model_validate(params)
    except ValidationError:
        return False
    return True


@pytest.fixture(scope="module")
def schema_validator() -> Draft202012Validator:
    bundle = load_schema()
    schema = {"$schema": bundle["$schema"], "$defs": bundle["$defs"], "$ref": "#/$defs/PromptRequest"}
    return Draft202012Validator(schema)


def test_param_outcomes_match_the_models_and_the_schema(
    key_vectors: dict[str, Any], schema_validator: Draft202012Validator
) -> None:
    """`param` says whether PromptRequest accepts the value; the schema agrees except on lone surrogates."""
    wrong = []
    for v in key_vectors["vectors"]:
        accepted = v["param"] in ("key", "no-key")
        params = _params(v["value"])
        if _pydantic_accepts(params) is not accepted:
            wrong.append(f"{v['name']}: pydantic")
        # JSON Schema cannot say "well-formed Unicode": it counts a lone surrogate as a code point like any other
        # (the decision recorded in the vectors file), so for those the schema looks at the length alone.
        schema_accepts = accepted or (v.get("wellFormed") is False and v["reason"] == "lone-surrogate")
        if schema_validator.is_valid(params) is not schema_accepts:
            wrong.append(f"{v['name']}: jsonschema")
        if v["param"] == "no-key":
            assert v["value"] is None
    assert wrong == []


def test_lone_surrogates_cannot_travel_as_utf8_json(key_vectors: dict[str, Any]) -> None:
    """Why the vectors reject them: such a value has no UTF-8 encoding, and pydantic's JSON parser refuses it."""
    for v in key_vectors["vectors"]:
        if v.get("wellFormed") is False:
            text = json.dumps(_params(v["value"]))  # ASCII escapes, as a sender could write them
            with pytest.raises(UnicodeEncodeError):
                v["value"].encode("utf-8")
            with pytest.raises(ValidationError):
                PromptRequest.model_validate_json(text)
