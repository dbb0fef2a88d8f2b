"""The Client's resend helper and pending-prompt store."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from acp_v2_runtime.client import (
    ErrorResponse,
    NoResponse,
    NotSent,
    OutcomeUnknown,
    PendingPrompts,
    Resender,
    new_idempotency_key,
)

PARAMS = {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}]}


class Script:
    """A fake transport: each call pops the next outcome (an exception to raise or a result to return)."""

    def __init__(self, *outcomes):
        self.outcomes = list(outcomes)
        self.calls: list[tuple[str, dict, int]] = []

    async def __call__(self, method, params, request_id):
        self.calls.append((method, dict(params), request_id))
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome


async def no_sleep(_seconds):
    return None


def test_new_key_is_a_random_uuid4():
    key = new_idempotency_key()
    assert uuid.UUID(key).version == 4 and key != new_idempotency_key()


def test_prompt_gets_one_key_reused_on_every_attempt_with_new_ids(tmp_path):
    send = Script(NoResponse(), NotSent(), {"messageId": "m1"})
    pending = PendingPrompts(tmp_path / "pending.json")
    result = asyncio.run(Resender(send, pending=pending, sleep=no_sleep).request("session/prompt", PARAMS))
    assert result == {"messageId": "m1"}
    keys = {params["idempotencyKey"] for _m, params, _i in send.calls}
    ids = [i for _m, _p, i in send.calls]
    assert len(keys) == 1 and len(set(ids)) == 3 and len(pending) == 0


def test_callers_key_is_kept():
    send = Script({"messageId": "m1"})
    asyncio.run(Resender(send, sleep=no_sleep).request("session/prompt", {**PARAMS, "idempotencyKey": "mine"}))
    assert send.calls[0][1]["idempotencyKey"] == "mine"


def _requests_never_resent() -> list[str]:
    """The requests whose class never resends after no response, read from the policy (the spec's call)."""
    from acp_v2_schema import load_policy

    policy = load_policy()
    never = {c["name"] for c in policy["classes"] if c["decisions"]["no-response"] == "never"}
    return sorted({r["method"] for r in policy["methods"] if r["kind"] == "request" and r["class"] in never})


@pytest.mark.parametrize("method", _requests_never_resent())
def test_unsafe_request_is_not_resent_after_no_response(method):
    send = Script(NoResponse())
    with pytest.raises(OutcomeUnknown):
        asyncio.run(Resender(send, sleep=no_sleep).request(method, {}))
    assert len(send.calls) == 1


def test_duplicating_request_needs_consent():
    with pytest.raises(OutcomeUnknown):
        asyncio.run(Resender(Script(NoResponse()), sleep=no_sleep).request("session/new", {}))
    send = Script(NoResponse(), {"sessionId": "s2"})
    resender = Resender(send, allow_duplicates=True, sleep=no_sleep)
    assert asyncio.run(resender.request("session/new", {})) == {"sessionId": "s2"}


def test_error_response_is_final_and_clears_the_pending_prompt():
    send = Script(ErrorResponse(-32602, "Invalid params"))
    resender = Resender(send, sleep=no_sleep)
    with pytest.raises(ErrorResponse):
        asyncio.run(resender.request("session/prompt", PARAMS))
    assert len(resender.pending) == 0


def test_outcome_unknown_keeps_the_prompt_for_resend_after_restart(tmp_path):
    path = tmp_path / "pending.json"
    delays = []

    async def record_sleep(seconds):
        delays.append(seconds)

    first = Resender(Script(*[NoResponse()] * 3), pending=PendingPrompts(path), max_attempts=3, sleep=record_sleep)
    with pytest.raises(OutcomeUnknown):
        asyncio.run(first.request("session/prompt", PARAMS))
    assert len(delays) == 2 and all(0 <= d <= first.max_delay for d in delays)
    # A new process reads the same file and resends with the same key.
    send = Script({"messageId": "m1"})
    again = Resender(send, pending=PendingPrompts(path), sleep=no_sleep)
    (key,) = [p.key for p in again.pending]
    assert asyncio.run(again.resend_pending()) == {key: {"messageId": "m1"}}
    assert send.calls[0][1]["idempotencyKey"] == key and len(PendingPrompts(path)) == 0


def test_stale_pending_prompts_are_left_for_the_user(tmp_path):
    pending = PendingPrompts(tmp_path / "p.json")
    pending.add("k", "session/prompt", PARAMS)
    send = Script()
    outcomes = asyncio.run(Resender(send, pending=pending).resend_pending(max_age_seconds=-1))
    assert outcomes == {"k": None} and send.calls == [] and len(pending) == 1


def test_resend_pending_defaults_to_the_age_the_spec_recommends(tmp_path):
    from acp_v2_schema.retry import PENDING_PROMPT_MAX_AGE_SECONDS

    from acp_v2_runtime.client import PendingPrompt

    pending = PendingPrompts(tmp_path / "p.json")
    pending.add("young", "session/prompt", {**PARAMS, "idempotencyKey": "young"})
    # An item older than the recommended age, as a store read back after a long pause would hold it.
    old = time.time() - PENDING_PROMPT_MAX_AGE_SECONDS - 60
    pending._items["old"] = PendingPrompt("old", "session/prompt", {**PARAMS, "idempotencyKey": "old"}, old)
    send = Script({"messageId": "m1"})
    outcomes = asyncio.run(Resender(send, pending=pending, sleep=no_sleep).resend_pending())
    assert outcomes == {"old": None, "young": {"messageId": "m1"}}
    assert [p.key for p in pending] == ["old"]  # left for the user
    everything = asyncio.run(
        Resender(Script({"messageId": "m2"}), pending=pending).resend_pending(max_age_seconds=None)
    )
    assert everything == {"old": {"messageId": "m2"}}


def test_unsent_prompt_stays_pending_for_the_reconnect():
    resender = Resender(Script(NotSent(), NotSent()), max_attempts=2, sleep=no_sleep)
    with pytest.raises(NotSent):
        asyncio.run(resender.request("session/prompt", PARAMS))
    assert len(resender.pending) == 1
