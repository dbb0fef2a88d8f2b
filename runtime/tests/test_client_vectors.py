"""The Client's resend helper against every retry-decision vector: it resends exactly when the table says so.

The helper keeps no list of codes or classes of its own; this test is what holds it to the generated table.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from acp_v2_schema.retry import POLICY, FailureKind
from agent_client import ROOT
from generator import paths

from acp_v2_runtime.client import ErrorResponse, NoResponse, NotSent, OutcomeUnknown, Resender, SendFailure

CASES = json.loads((ROOT / paths.DECISION_VECTORS).read_text(encoding="utf-8"))["cases"]
FAILURES = {FailureKind.NOT_SENT: NotSent, FailureKind.NO_RESPONSE: NoResponse}


def _helper_cases() -> list[dict[str, Any]]:
    """The cases the helper can meet: no variant (it sends whole messages), and a key exactly when the entry
    has a key parameter (the helper always attaches one then, and never otherwise)."""
    out = []
    for case in CASES:
        entry = POLICY.get((case["method"], case["kind"]))
        has_key = entry is not None and entry.key_param is not None
        # An error response always carries a code on the wire, so the vectors without one are for SDK functions.
        coded_without_code = case["failure"] == FailureKind.ERROR_RESPONSE.value and case["errorCode"] is None
        if case["variant"] is None and case["hasKey"] is has_key and not coded_without_code:
            out.append(case)
    return out


HELPER_CASES = _helper_cases()


def _failure(case: dict[str, Any]) -> SendFailure:
    kind = FailureKind(case["failure"])
    if kind in FAILURES:
        return FAILURES[kind]()
    return ErrorResponse(case["errorCode"], "from the vector")


def test_the_helper_meets_every_failure_kind_and_code():
    seen = {(c["failure"], c["errorCode"]) for c in HELPER_CASES}
    assert any(c["mayResend"] for c in HELPER_CASES) and not all(c["mayResend"] for c in HELPER_CASES)
    assert {c["failure"] for c in CASES} == {failure for failure, _ in seen}
    assert {c["errorCode"] for c in CASES} - {None} <= {code for _, code in seen}


def _case_id(case: dict[str, Any]) -> str:
    return f"{case['method']}-{case['kind']}-{case['failure']}-{case['errorCode']}-{case['allowDuplicates']}"


@pytest.mark.parametrize("case", HELPER_CASES, ids=_case_id)
def test_resender_resends_exactly_when_the_vector_says(case: dict[str, Any]) -> None:
    calls: list[int] = []
    outcomes: list[Any] = [_failure(case), {"ok": True}]

    async def send(method: str, params: dict[str, Any], request_id: int) -> Any:
        calls.append(request_id)
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    async def no_sleep(_seconds: float) -> None:
        return None

    helper = Resender(send, max_attempts=2, allow_duplicates=case["allowDuplicates"], sleep=no_sleep)
    params = {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]}

    async def run() -> Any:
        return await helper.request(case["method"], params, kind=case["kind"])

    if case["mayResend"]:
        assert asyncio.run(run()) == {"ok": True}
        assert len(calls) == 2
    else:
        with pytest.raises((SendFailure, OutcomeUnknown)):
            asyncio.run(run())
        assert len(calls) == 1
