"""The ledger's quick paths keep its rules: prompts without a key, one-step keyed inserts, unworked fingerprints."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import select
import threading

import pytest

from acp_v2_runtime.idempotency import KeyLedger, KeyReused, MemoryStore, key_digest, prompt_fingerprint
from acp_v2_runtime.idempotency.keys import Fingerprint, fingerprints_differ
from acp_v2_runtime.idempotency.store import INSERTED

PROMPT = [{"type": "text", "text": "hello"}, {"type": "resource_link", "uri": "file:///a.py", "name": "a.py"}]


def run(coro):
    return asyncio.run(coro)


def test_a_prompt_without_a_key_is_inserted_every_time(store_factory, session_id):
    inserted = []
    prepared = []
    ledger = KeyLedger(store_factory())

    async def prepare():
        prepared.append(True)

    async def go():
        write = lambda _c, m: inserted.append(m)  # noqa: E731 - one line
        first = await ledger.submit(session_id, None, 1, prompt=PROMPT, prepare=prepare, write=write)
        second = await ledger.submit(session_id, None, 2, prompt=PROMPT, write=write)
        return first, second

    first, second = run(go())
    assert first != second and inserted == [first, second] and prepared == [True]
    assert ledger.pending_count() == 0


def test_a_prompt_without_a_key_that_fails_to_write_raises(store_factory, session_id):
    ledger = KeyLedger(store_factory())

    def write(_conn, _message_id):
        raise RuntimeError("the message table refused the row")

    with pytest.raises(RuntimeError):
        run(ledger.submit(session_id, None, 1, prompt=PROMPT, write=write))


def test_a_failed_one_step_insert_answers_every_attempt_and_leaves_the_key_unused(store_factory, session_id):
    ledger = KeyLedger(store_factory())
    inserted = []

    def refuse(_conn, _message_id):
        raise RuntimeError("the message table refused the row")

    async def go():
        results = await asyncio.gather(
            *(ledger.submit(session_id, "k", i, prompt=PROMPT, write=refuse) for i in range(3)),
            return_exceptions=True,
        )
        assert all(isinstance(r, RuntimeError) for r in results)
        return await ledger.submit(session_id, "k", 9, prompt=PROMPT, write=lambda _c, m: inserted.append(m))

    message_id = run(go())
    assert inserted == [message_id]
    assert run(ledger.lookup(session_id, "k")) == message_id


def test_a_key_reused_with_another_prompt_is_refused_after_a_one_step_insert(store_factory, session_id):
    ledger = KeyLedger(store_factory())

    async def go():
        first = await ledger.submit(session_id, "k", 1, prompt=PROMPT)
        again = await ledger.submit(session_id, "k", 2, prompt=json.loads(json.dumps(PROMPT)))  # equal, not same
        with pytest.raises(KeyReused):
            await ledger.submit(session_id, "k", 3, prompt=[{"type": "text", "text": "other"}])
        return first, again

    first, again = run(go())
    assert first == again


def test_cancelling_the_first_attempt_during_a_threaded_insert_still_answers_the_others(store_factory, session_id):
    store = store_factory()
    if isinstance(store, MemoryStore):
        pytest.skip("the memory store answers inline: there is no store call to wait on")
    ledger = KeyLedger(store)
    entered, release = threading.Event(), threading.Event()
    inserted = []

    def slow_write(_conn, message_id):
        entered.set()
        release.wait(10)
        inserted.append(message_id)

    async def go():
        first = asyncio.create_task(ledger.submit(session_id, "k", 1, prompt=PROMPT, write=slow_write))
        await asyncio.get_running_loop().run_in_executor(None, entered.wait, 10)
        second = asyncio.create_task(ledger.submit(session_id, "k", 2, prompt=PROMPT, write=slow_write))
        await asyncio.sleep(0.01)
        assert not ledger.cancel(2)  # the message may be in already: no attempt can withdraw it
        first.cancel()
        release.set()
        return await asyncio.gather(first, second, return_exceptions=True)

    first, second = run(go())
    assert isinstance(first, asyncio.CancelledError)
    assert inserted == [second]


def test_fingerprints_are_worked_out_when_compared():
    lazy = Fingerprint(PROMPT)
    assert lazy.value == prompt_fingerprint(PROMPT)
    assert not fingerprints_differ(lazy, Fingerprint(json.loads(json.dumps(PROMPT))))
    assert not fingerprints_differ(lazy, prompt_fingerprint(PROMPT))
    assert fingerprints_differ(lazy, Fingerprint([{"type": "text", "text": "other"}]))
    assert not fingerprints_differ(lazy, None) and not fingerprints_differ(None, lazy)
    assert "hello" not in repr(Fingerprint(PROMPT))


def test_digests_and_fingerprints_keep_their_form():
    """Stores written by earlier versions hold these values; a retry must still find and match them."""
    assert key_digest("k") == hashlib.sha256(b"k").hexdigest()
    assert key_digest("\ud800") == hashlib.sha256("\ud800".encode("utf-8", "surrogatepass")).hexdigest()
    canonical = json.dumps(PROMPT, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert prompt_fingerprint(PROMPT) == hashlib.sha256(canonical.encode("ascii")).hexdigest()
    unicode_prompt = [{"type": "text", "text": "héllo 😀", "b": 1, "a": [True, None, 1.5]}]
    canonical = json.dumps(unicode_prompt, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert prompt_fingerprint(unicode_prompt) == hashlib.sha256(canonical.encode("ascii")).hexdigest()


def test_numbers_count_by_value_in_the_prompt_digest():
    """`1.0`, `1e0` and `1` are one JSON number: a retry that spells it otherwise is the same prompt. Prompts without
    a whole-number float keep the digest they always had (the test above)."""
    whole = [{"type": "text", "text": "n", "_meta": {"a": 1, "b": [100, -0.0], "c": 10**20}}]
    spelled = [{"type": "text", "text": "n", "_meta": {"c": 1e20, "b": [1e2, 0], "a": 1.0}}]
    assert prompt_fingerprint(whole) == prompt_fingerprint(spelled)
    assert prompt_fingerprint([{"n": 1.5}]) != prompt_fingerprint([{"n": 1}])
    assert prompt_fingerprint([{"n": "1.0"}]) != prompt_fingerprint([{"n": "1"}])  # text is not a number


def test_a_retry_spelling_a_number_otherwise_joins_the_first_attempt(store_factory, session_id):
    ledger = KeyLedger(store_factory())

    async def go():
        first = await ledger.submit(session_id, "k", 1, prompt=[{"type": "text", "text": "n", "_meta": {"n": 2}}])
        again = await ledger.submit(session_id, "k", 2, prompt=[{"type": "text", "text": "n", "_meta": {"n": 2.0}}])
        return first, again

    first, again = run(go())
    assert first == again


@pytest.mark.parametrize("threaded", [True, False])
def test_attempts_share_one_insertion_with_store_calls_in_a_thread_or_inline(store_factory, session_id, threaded):
    inserted = []
    ledger = KeyLedger(store_factory(), threaded=threaded)
    other = KeyLedger(store_factory(), threaded=threaded)  # another process, as far as the store can tell

    async def go():
        write = lambda _c, m: inserted.append(m)  # noqa: E731 - one line
        attempts = [ledger.submit(session_id, "k", i, prompt=PROMPT, write=write) for i in range(16)]
        attempts += [other.submit(session_id, "k", 100 + i, prompt=PROMPT, write=write) for i in range(16)]
        return await asyncio.gather(*attempts)

    ids = run(go())
    assert len(set(ids)) == 1 and inserted == [ids[0]]


def test_claim_record_on_a_recorded_key_gives_back_the_row_and_writes_nothing(store_factory, session_id):
    """The store's one-step call, on every store: the second call for a key finds the first one's row."""
    store = store_factory()
    ledger = KeyLedger(store)  # what the store is given of a prompt depends on the store: the ledger knows
    stored = ledger._stored(PROMPT)
    digest = key_digest("k")
    written = []
    write = lambda _c, m: written.append(m)  # noqa: E731 - one line
    assert store.claim_record(session_id, digest, "msg_1", stored, write).state == "claimed"
    again = store.claim_record(session_id, digest, "msg_2", stored, write)
    assert (again.state, again.message_id, written) == ("recorded", "msg_1", ["msg_1"])
    assert not ledger._differ(ledger._fingerprint(PROMPT, stored), again.fingerprint)
    assert store.lookup(session_id, digest) == "msg_1"


def test_the_postgresql_store_prepares_its_statement_again_on_a_new_connection(pg_dsn, session_id):
    from acp_v2_runtime.idempotency.postgres import PostgresStore

    store = PostgresStore(pg_dsn)
    try:
        first = store.claim_record(session_id, key_digest("a"), "msg_a", None, None)
        store.close()  # the next call opens a new connection, where nothing is prepared yet
        second = store.claim_record(session_id, key_digest("b"), "msg_b", None, None)
        assert first.state == second.state == "claimed"
        assert store.claim_record(session_id, key_digest("a"), "msg_c", None, None).message_id == "msg_a"
    finally:
        store.close()


def test_the_postgresql_store_replaces_a_connection_the_server_ended(pg_dsn, session_id):
    """After a server restart every idle connection is dead; the next call opens a new one instead of failing."""
    import psycopg

    from acp_v2_runtime.idempotency.postgres import PostgresStore

    store = PostgresStore(pg_dsn)
    try:
        assert store.claim_record(session_id, key_digest("a"), "msg_a", None, None).state == "claimed"
        backend = store.connection().info.backend_pid
        socket = store.connection().pgconn.socket
        with psycopg.connect(pg_dsn, autocommit=True) as admin:  # what a restart does to this one connection
            assert admin.execute("SELECT pg_terminate_backend(%s)", (backend,)).fetchone() == (True,)
        # The farewell reaches the socket a moment after the backend ends; the end of the stream may come later
        # still (under load it had not when the next call began), so only the farewell is waited for.
        assert select.select([socket], [], [], 30)[0]
        assert store.claim_record(session_id, key_digest("b"), "msg_b", None, None).state == "claimed"
        assert store.connection().info.backend_pid != backend
    finally:
        store.close()


def test_postgresql_transactions_roll_back_on_errors_and_nest_as_savepoints(pg_dsn, session_id):
    import psycopg

    from acp_v2_runtime.idempotency.postgres import PostgresStore

    store = PostgresStore(pg_dsn, setup=lambda c: c.execute("CREATE TABLE IF NOT EXISTS test_tx (s TEXT, m TEXT)"))
    try:

        def nested(conn, message_id):  # a write that opens a transaction of its own gets a savepoint
            with conn.transaction():
                conn.execute("INSERT INTO test_tx VALUES (%s, %s)", (session_id, message_id))

        def swallowed(conn, message_id):  # a write that hides its own failure must not commit half of it
            conn.execute("INSERT INTO test_tx VALUES (%s, %s)", (session_id, message_id))
            with contextlib.suppress(psycopg.errors.DivisionByZero):
                conn.execute("SELECT 1 / 0")

        assert store.claim_record(session_id, key_digest("a"), "msg_a", None, nested) is INSERTED
        with pytest.raises(psycopg.errors.InFailedSqlTransaction):
            store.claim_record(session_id, key_digest("b"), "msg_b", None, swallowed)
        with pytest.raises(ZeroDivisionError), store.transaction() as conn:
            conn.execute("INSERT INTO test_tx VALUES (%s, 'msg_c')", (session_id,))
            raise ZeroDivisionError
        store.insert("msg_d", nested)
        rows = store.connection().execute("SELECT m FROM test_tx WHERE s = %s ORDER BY m", (session_id,)).fetchall()
        assert [r[0] for r in rows] == ["msg_a", "msg_d"]
        assert store.lookup(session_id, key_digest("b")) is None  # the failed write left the key unused
        assert store.claim_record(session_id, key_digest("b"), "msg_e", None, None) is INSERTED
    finally:
        store.close()


def test_a_lease_renewal_that_fails_once_is_tried_again(session_id):
    """A store that fails one renewal of a claim's lease (a database locked or full for a moment) must not end the
    renewals, or the lease would run out under a prompt still being prepared; the prompt still goes in."""
    store = MemoryStore()
    store.lease_seconds = 0.03  # renewed every 0.01 s while `prepare` waits
    renewals: list[int] = []
    renew = store.renew

    def renew_failing_once(*args):
        renewals.append(1)
        if len(renewals) == 1:
            raise RuntimeError("the store is unavailable")
        return renew(*args)

    store.renew = renew_failing_once  # type: ignore[method-assign]
    ledger = KeyLedger(store)

    async def go():
        async def prepare():
            await asyncio.sleep(0.2)

        return await ledger.submit(session_id, "k", 1, prompt=PROMPT, prepare=prepare)

    assert run(go())
    assert len(renewals) > 2, renewals


def test_a_cancel_that_arrives_during_a_store_call_is_kept_when_the_bound_then_passes(session_id):
    """A caller cancelled while it waits for a stalled store call must end cancelled, not with StoreUnavailable
    once the bound passes: a lease heartbeat cancelled that way had caught the error, and went on renewing its
    claim after the attempt was answered -32603, so another Agent waited on the key for good."""
    ledger = KeyLedger(MemoryStore(), threaded=True, store_timeout_seconds=0.2)
    stalled = threading.Event()

    async def go() -> None:
        call = asyncio.get_running_loop().create_task(ledger._call(stalled.wait))
        await asyncio.sleep(0)  # the call is now waiting for its worker thread, which waits for `stalled`
        call.cancel()
        try:
            with pytest.raises(asyncio.CancelledError):
                await call  # ends once the bound has passed, the worker still stalled
        finally:
            stalled.set()

    run(go())
