"""The ledger's rules (DESIGN.md section 4), on each store."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from acp_v2_schema.retry import IDEMPOTENCY_KEY_MAX_LENGTH

from acp_v2_runtime.idempotency import (
    Cancelled,
    InvalidKey,
    KeyLedger,
    KeyReused,
    derive_message_id,
    key_digest,
    validate_key,
)

PROMPT = [{"type": "text", "text": "hello"}]


def run(coro):
    return asyncio.run(coro)


def test_validate_key_counts_code_points_and_never_coerces():
    assert validate_key(None) is None
    longest = "😀" * IDEMPOTENCY_KEY_MAX_LENGTH  # the spec's bound, as the generated package carries it
    assert validate_key(longest) == longest
    for bad in ["", "k" + longest, "😀" + longest, 7, 1.5, True, False, [], ["k"], {}, {"k": "v"}]:
        with pytest.raises(InvalidKey) as caught:
            validate_key(bad)
        assert caught.value.code == -32602


def test_errors_and_reprs_never_show_the_key(store_factory, session_id):
    key = f"secret-{uuid.uuid4()}"
    ledger = KeyLedger(store_factory())

    async def go():
        await ledger.submit(session_id, key, 1, prompt=PROMPT)
        with pytest.raises(KeyReused) as caught:
            await ledger.submit(session_id, key, 2, prompt=[{"type": "text", "text": "other"}])
        return caught.value

    error = run(go())
    assert key not in str(error) and key not in repr(ledger) and key not in repr(ledger.store)
    with pytest.raises(InvalidKey) as bad:
        validate_key(key * 20)
    assert key not in str(bad.value)


def test_concurrent_attempts_share_one_insertion(store_factory, session_id):
    inserted = []
    ledger = KeyLedger(store_factory())

    async def go():
        attempts = [
            ledger.submit(session_id, "k1", i, prompt=PROMPT, write=lambda _c, m: inserted.append(m)) for i in range(64)
        ]
        return await asyncio.gather(*attempts)

    ids = run(go())
    assert len(set(ids)) == 1 and inserted == [ids[0]]


def test_recorded_key_answers_later_attempts_and_other_ledgers(store_factory, session_id):
    inserted = []

    async def go():
        first = await KeyLedger(store_factory()).submit(session_id, "k", 1, write=lambda _c, m: inserted.append(m))
        # A second ledger over the same storage stands for another process or a restarted Agent.
        again = await KeyLedger(store_factory()).submit(session_id, "k", 2, write=lambda _c, m: inserted.append(m))
        return first, again

    first, again = run(go())
    assert first == again and inserted == [first]


def test_error_leaves_the_key_unused(store_factory, session_id):
    inserted = []
    ledger = KeyLedger(store_factory())

    async def fail():
        raise RuntimeError("a hook refused the prompt")

    async def go():
        results = await asyncio.gather(
            ledger.submit(session_id, "k", 1, prepare=fail), ledger.submit(session_id, "k", 2), return_exceptions=True
        )
        assert all(isinstance(r, RuntimeError) for r in results)  # every pending attempt gets the same outcome
        return await ledger.submit(session_id, "k", 3, write=lambda _c, m: inserted.append(m))

    message_id = run(go())
    assert inserted == [message_id]


def test_cancelling_one_attempt_answers_all_with_32800(store_factory, session_id):
    ledger = KeyLedger(store_factory())
    gate = asyncio.Event

    async def go():
        held = gate()

        async def hold():
            await held.wait()

        tasks = [asyncio.create_task(ledger.submit(session_id, "k", i, prepare=hold)) for i in range(3)]
        await asyncio.sleep(0.05)
        assert ledger.cancel(1)
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert all(isinstance(r, Cancelled) and r.code == -32800 for r in results)
        assert ledger.pending_count() == 0
        return await ledger.submit(session_id, "k", 9)

    assert run(go())  # the key stayed unused, so a later attempt inserts


def test_session_cancel_withdraws_only_that_session(store_factory, session_id):
    ledger = KeyLedger(store_factory())

    async def go():
        held = asyncio.Event()

        async def hold():
            await held.wait()

        here = asyncio.create_task(ledger.submit(session_id, "k", 1, prepare=hold))
        there = asyncio.create_task(ledger.submit(session_id + "-other", "k", 2, prepare=hold))
        await asyncio.sleep(0.05)
        assert ledger.cancel_session(session_id) == 1
        held.set()
        return await asyncio.gather(here, there, return_exceptions=True)

    here, there = run(go())
    assert isinstance(here, Cancelled) and isinstance(there, str)


def test_same_key_in_another_session_is_a_new_submission(store_factory, session_id):
    ledger = KeyLedger(store_factory())

    async def go():
        return await ledger.submit(session_id, "k", 1), await ledger.submit(session_id + "-b", "k", 2)

    a, b = run(go())
    assert a != b


def test_derived_message_ids(store_factory, session_id):
    ledger = KeyLedger(store_factory(), derive_message_ids=True)
    message_id = run(ledger.submit(session_id, "k", 1))
    assert message_id == derive_message_id(session_id, "k") == str(uuid.UUID(message_id))
    assert derive_message_id(session_id, "k") != derive_message_id(session_id + "k", "")


def test_expired_claim_is_taken_over(store_factory, session_id):
    """An owner that died after claiming blocks the key only until its lease runs out."""
    dead = store_factory(lease=0.3)
    filed = "k" if getattr(dead, "keeps_keys", False) else key_digest("k")  # what the ledger files the row under
    assert dead.claim(session_id, filed, "dead-owner", None).state == "claimed"
    inserted = []
    ledger = KeyLedger(store_factory(lease=0.3))
    message_id = run(ledger.submit(session_id, "k", 1, write=lambda _c, m: inserted.append(m)))
    assert inserted == [message_id]
    # The dead owner cannot record any more: its claim was taken over and the key is recorded.
    late = dead.record(session_id, filed, "dead-owner", "msg_late", lambda _c, _m: inserted.append("late"))
    assert not late.inserted and late.message_id == message_id and inserted == [message_id]
