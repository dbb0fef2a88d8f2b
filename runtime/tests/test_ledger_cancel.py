"""Cancellation is true at every interleaving the tests can name, and across ledgers that share a store.

Each store kind gets its own place: a fresh SQLite file, or a PostgreSQL schema of its own (so that no other test
sees these keys or the locks taken here). Messages go into a table of the same database, in the store's
transaction, so a rolled-back insert leaves nothing behind to count.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from acp_v2_schema.protocol import KnownErrorCode
from ledger_places import Counted, Place, place_factory  # noqa: F401  (a fixture)

from acp_v2_runtime.idempotency import Cancelled, KeyLedger, MemoryStore, SQLiteStore

PROMPT = [{"type": "text", "text": "hello"}]
BOUND = 30.0  # no attempt may wait longer than this here; the happy runs take milliseconds


async def answer(attempt: asyncio.Future) -> object:
    """The attempt's answer: a messageId, or the exception it raised; a test failure when it never comes."""
    try:
        return await asyncio.wait_for(attempt, BOUND)
    except TimeoutError:
        pytest.fail(f"an attempt waited more than {BOUND} s for its answer")
    except Exception as exc:
        return exc


def is_cancelled(outcome: object) -> bool:
    return isinstance(outcome, Cancelled) and outcome.code == int(KnownErrorCode.REQUEST_CANCELLED)


async def settle(condition, limit: float = BOUND) -> None:
    """Yield to the loop (and the store's threads) until `condition()` holds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + limit
    while not condition():
        if loop.time() > end:
            pytest.fail("the ledger never reached the state the test waits for")
        await asyncio.sleep(0.005)


@pytest.mark.parametrize("which", ["cancel", "cancel_session"])
def test_an_early_cancel_answers_and_leaves_the_key_usable(place_factory, which):  # noqa: F811
    """A cancel right after `submit`, before the ledger's task ran, answers -32800 and never hangs the key."""
    place: Place = place_factory()
    ledger = KeyLedger(place.store())
    sid = place.session()

    async def nothing_first() -> None:
        return None

    async def go():
        first = asyncio.ensure_future(
            ledger.submit(sid, "k", "a1", prompt=PROMPT, prepare=nothing_first, write=place.write)
        )
        await asyncio.sleep(0)  # submit registers the attempt; the ledger's own task has not run yet
        withdrawn = ledger.cancel("a1") if which == "cancel" else ledger.cancel_session(sid)
        outcome = await answer(first)
        again = await answer(asyncio.ensure_future(ledger.submit(sid, "k", "a2", prompt=PROMPT, write=place.write)))
        return withdrawn, outcome, again

    withdrawn, outcome, again = asyncio.run(go())
    assert withdrawn
    assert is_cancelled(outcome), outcome
    assert isinstance(again, str)
    assert place.messages() == 1


def test_a_cancel_on_a_waiting_ledger_withdraws_the_holders_prompt(place_factory):  # noqa: F811
    """Agent A holds the key before insertion; B waits on A's claim; a cancel on B answers both -32800 and A never
    inserts. Then the key is unused: a new attempt inserts once."""
    place: Place = place_factory()
    seen_by_b = Counted(place.store())
    a, b = KeyLedger(place.store(), owner="agent-a"), KeyLedger(seen_by_b, owner="agent-b")
    sid = place.session()
    release = held_now = None

    async def held() -> None:
        held_now.set()
        await release.wait()

    async def go():
        nonlocal release, held_now
        release, held_now = asyncio.Event(), asyncio.Event()
        on_a = asyncio.ensure_future(a.submit(sid, "k", "a1", prompt=PROMPT, prepare=held, write=place.write))
        await held_now.wait()  # A holds the key's claim
        on_b = asyncio.ensure_future(b.submit(sid, "k", "b1", prompt=PROMPT, write=place.write))
        await settle(lambda: seen_by_b.calls.get("claim", 0) >= 1)  # B found the key busy and waits in the store
        assert b.cancel("b1")
        answered_b = await answer(on_b)
        release.set()
        answered_a = await answer(on_a)
        later = await answer(asyncio.ensure_future(a.submit(sid, "k", "a2", prompt=PROMPT, write=place.write)))
        return answered_a, answered_b, later

    answered_a, answered_b, later = asyncio.run(go())
    assert is_cancelled(answered_b), answered_b
    assert is_cancelled(answered_a), answered_a
    assert isinstance(later, str)
    assert place.messages() == 1


def test_a_withdrawal_reaches_attempts_that_wait_on_a_third_ledger(place_factory):  # noqa: F811
    """Three ledgers: A holds, B and C wait; the cancel on B answers C's attempt -32800 as well."""
    place: Place = place_factory()
    views = [Counted(place.store()) for _ in "bc"]
    a = KeyLedger(place.store(), owner="agent-a")
    b, c = (KeyLedger(view, owner=f"agent-{name}") for view, name in zip(views, "bc", strict=True))
    sid = place.session()
    release = held_now = None

    async def held() -> None:
        held_now.set()
        await release.wait()

    async def go():
        nonlocal release, held_now
        release, held_now = asyncio.Event(), asyncio.Event()
        on_a = asyncio.ensure_future(a.submit(sid, "k", 1, prompt=PROMPT, prepare=held, write=place.write))
        await held_now.wait()
        on_b = asyncio.ensure_future(b.submit(sid, "k", 1, prompt=PROMPT, write=place.write))
        on_c = asyncio.ensure_future(c.submit(sid, "k", 1, prompt=PROMPT, write=place.write))
        await settle(lambda: all(view.calls.get("claim", 0) >= 1 for view in views))
        b.cancel(1)
        answered_b = await answer(on_b)  # once B has answered, the withdrawal is in the store
        release.set()
        return [await answer(on_a), answered_b, await answer(on_c)]

    outcomes = asyncio.run(go())
    assert all(is_cancelled(outcome) for outcome in outcomes), outcomes
    assert place.messages() == 0


def test_a_cancel_after_the_insert_is_answered_with_the_message(place_factory):  # noqa: F811
    """A withdrawal that reaches the store after the insert changes nothing: the waiting attempt gets the
    messageId the holder inserted."""
    place: Place = place_factory()
    a, b = KeyLedger(place.store(), owner="agent-a"), KeyLedger(place.store(), owner="agent-b")
    sid = place.session()

    async def go():
        inserted = await a.submit(sid, "k", 1, prompt=PROMPT, write=place.write)
        # B's attempt is cancelled before its task ran: the store shows the key recorded, so B answers with it.
        on_b = asyncio.ensure_future(b.submit(sid, "k", 1, prompt=PROMPT, prepare=_nothing, write=place.write))
        await asyncio.sleep(0)
        b.cancel(1)
        return inserted, await answer(on_b)

    inserted, on_b = asyncio.run(go())
    assert on_b == inserted
    assert place.messages() == 1


async def _nothing() -> None:
    return None


def test_a_cancel_of_a_held_prompt_is_answered_at_once_and_its_retry_inserts(place_factory):  # noqa: F811
    """The holder's own cancel: -32800 for every attempt, the claim given back, the next attempt inserts."""
    place: Place = place_factory()
    ledger = KeyLedger(place.store())
    sid = place.session()
    never = held_now = None

    async def held() -> None:
        held_now.set()
        await never.wait()

    async def go():
        nonlocal never, held_now
        never, held_now = asyncio.Event(), asyncio.Event()
        attempts = [
            asyncio.ensure_future(ledger.submit(sid, "k", i, prompt=PROMPT, prepare=held, write=place.write))
            for i in range(3)
        ]
        await held_now.wait()
        assert ledger.cancel(1)
        outcomes = [await answer(task) for task in attempts]
        later = await answer(asyncio.ensure_future(ledger.submit(sid, "k", 9, prompt=PROMPT, write=place.write)))
        return outcomes, later

    outcomes, later = asyncio.run(go())
    assert all(is_cancelled(outcome) for outcome in outcomes), outcomes
    assert isinstance(later, str)
    assert place.messages() == 1


def test_an_old_table_gains_the_withdrawal_count(tmp_path):
    """A key table made before withdrawals were counted is altered in place, its rows kept."""
    import sqlite3

    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE acp_idempotency_keys (session_id TEXT NOT NULL, key_digest BLOB NOT NULL, "
            "state TEXT NOT NULL, owner TEXT, lease_until REAL, fingerprint TEXT, message_id TEXT, "
            "PRIMARY KEY (session_id, key_digest)) WITHOUT ROWID"
        )
    store = SQLiteStore(path)
    ledger = KeyLedger(store)
    assert asyncio.run(ledger.submit("s", "k", 1)).inserted
    store.close()


def test_submit_says_whether_this_attempt_inserted():
    ledger = KeyLedger(MemoryStore())
    sid = f"s-{uuid.uuid4().hex}"

    async def go():
        first = await ledger.submit(sid, "k", 1, prompt=PROMPT)
        retry = await ledger.submit(sid, "k", 2, prompt=PROMPT)
        unkeyed = await ledger.submit(sid, None, 3, prompt=PROMPT, write=lambda _c, _m: None)
        return first, retry, unkeyed

    first, retry, unkeyed = asyncio.run(go())
    assert first.inserted and not retry.inserted and first == retry == retry.message_id
    assert type(first.message_id) is str
    assert unkeyed.inserted
