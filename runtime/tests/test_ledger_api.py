"""What an Agent or Client author reads off the helpers: `submit`'s result, `to_error()`, and when `Resender`
lets go of a pending prompt."""

from __future__ import annotations

import asyncio

import pytest
from acp_v2_schema.models import InvalidParamsErrorData
from acp_v2_schema.protocol import SESSION_PROMPT, KnownErrorCode
from acp_v2_schema.reader import KEY_PARAMS

from acp_v2_runtime.client import ErrorResponse, NoResponse, PendingPrompts, Resender
from acp_v2_runtime.idempotency import Cancelled, InvalidKey, KeyLedger, KeyReused, MemoryStore, validate_key
from acp_v2_runtime.idempotency.keys import KEY_REUSED, MALFORMED_KEY

PROMPT = [{"type": "text", "text": "hi"}]


def test_key_errors_carry_the_specs_invalid_params_data():
    with pytest.raises(InvalidKey) as bad:
        validate_key("")
    reused = KeyReused()
    reasons = InvalidParamsErrorData.model_fields["reason"].examples
    for error, reason in ((bad.value, MALFORMED_KEY), (reused, KEY_REUSED)):
        body = error.to_error()
        assert body["code"] == int(KnownErrorCode.INVALID_PARAMS)
        assert body["data"] == {"param": KEY_PARAMS[SESSION_PROMPT], "reason": reason}
        assert reason in reasons
        InvalidParamsErrorData.model_validate(body["data"])
    assert "data" not in Cancelled().to_error()
    assert Cancelled().to_error()["code"] == int(KnownErrorCode.REQUEST_CANCELLED)


def test_submit_result_is_the_message_id_and_says_who_inserted():
    ledger = KeyLedger(MemoryStore())

    async def go():
        both = await asyncio.gather(
            ledger.submit("s", "k", 1, prompt=PROMPT, prepare=_nothing),
            ledger.submit("s", "k", 2, prompt=PROMPT),
        )
        later = await ledger.submit("s", "k", 3, prompt=PROMPT)
        return both, later

    (first, joined), later = asyncio.run(go())
    assert first == joined == later
    assert [first.inserted, joined.inserted, later.inserted] == [True, False, False]
    assert str(first) == first.message_id


async def _nothing() -> None:
    return None


class Script:
    def __init__(self, *outcomes):
        self.outcomes = list(outcomes)

    async def __call__(self, method, params, request_id):
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


async def _no_sleep(_seconds):
    return None


def test_a_final_error_response_drops_the_pending_prompt():
    """Every attempt answered with a resendable error, the last one included: nothing was inserted, so the prompt
    leaves PendingPrompts (resend_pending would only repeat it)."""
    internal = int(KnownErrorCode.INTERNAL_ERROR)
    pending = PendingPrompts()
    send = Script(*(ErrorResponse(internal, "Internal error") for _ in range(3)))
    resender = Resender(send, pending=pending, max_attempts=3, sleep=_no_sleep)
    with pytest.raises(ErrorResponse):
        asyncio.run(resender.request(SESSION_PROMPT, {"sessionId": "s", "prompt": PROMPT}))
    assert len(pending) == 0


def test_a_lost_answer_keeps_the_prompt_pending_even_after_a_final_error():
    internal = int(KnownErrorCode.INTERNAL_ERROR)
    pending = PendingPrompts()
    send = Script(NoResponse(), ErrorResponse(internal, "Internal error"))
    resender = Resender(send, pending=pending, max_attempts=2, sleep=_no_sleep)
    with pytest.raises(Exception, match="outcome unknown"):
        asyncio.run(resender.request(SESSION_PROMPT, {"sessionId": "s", "prompt": PROMPT}))
    assert len(pending) == 1
