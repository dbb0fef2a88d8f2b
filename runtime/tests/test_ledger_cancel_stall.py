"""A cancel cuts the keyed prompt's store call under way off at its commit gate, unless its COMMIT was sent (issue 41,
item 3): an insert whose COMMIT was not sent is withdrawn, -32800 at once whether the store answers or not; one whose
COMMIT was sent gets that COMMIT's outcome; a claim call under way no longer holds the cancel's answer up.

Before, a cancel during an insert was refused (on a frozen server the attempt got -32603 after the bound), and a
cancel during a claim call waited for that call's whole bound before the withdrawal's own call even began (on a
frozen server: -32603 after two bounds). The answer to a cancel during a claim call is still the withdrawal's own
store call (-32800, the messageId, or -32603 on a stalled store): only the store can tell whether another Agent has
inserted the message or is inserting it, so -32800 without it could be untrue (test_ledger_model's invariant 3).

Stalls are deterministic: a SQLite store whose calls wait on an event (the test knows when a call is under way from
another event), and the private PostgreSQL cluster frozen with SIGSTOP (pg_cluster.py), with a store that signals
when its claim call has begun. Nothing is synchronised by sleeping; the one wall-clock bound is the answer's, under
a second from the cancel (it takes milliseconds), against a store bound of several seconds.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from ledger_places import MESSAGES, Place, _postgres_place, _sqlite_place
from test_ledger_commit_gate import SAFETY, HeldSQLiteStore, Hold, held_writer

from acp_v2_runtime.idempotency import Cancelled, KeyLedger, SQLiteStore
from acp_v2_runtime.idempotency.keys import StoreUnavailable
from acp_v2_runtime.idempotency.postgres import PostgresStore
from acp_v2_runtime.idempotency.sql import TABLE

PROMPT = [{"type": "text", "text": "hello"}]
BOUND = 3.0  # the ledger's bound for one store call
AT_ONCE = 1.0  # the cancel's answer, measured from the cancel (milliseconds of work; a loaded machine has slack)
ONE_BOUND = 1.5 * BOUND  # an answer that waited for one store bound, not two (the old code's, 2 * BOUND at least)


class Stall:
    """While `go` is clear, the store calls named in `calls` wait at their start (before any transaction); `entered`
    is set when one does (the call under way is then known), `left` once that call has ended."""

    def __init__(self, *calls: str) -> None:
        self.calls = set(calls)
        self.go = threading.Event()
        self.go.set()
        self.entered = threading.Event()
        self.left = threading.Event()

    def wait(self, call: str) -> None:
        if self.go.is_set() or call not in self.calls:
            return
        self.entered.set()
        try:
            self.go.wait(SAFETY)
        finally:
            self.left.set()


class StalledSQLiteStore(SQLiteStore):
    """A SQLite store whose calls stall while the test says so (a store that stopped answering)."""

    def __init__(self, path: Any, stall: Stall, **options: Any) -> None:
        self.stall = stall
        super().__init__(path, setup=lambda c: c.execute(MESSAGES), **options)

    def claim(self, *args: Any) -> Any:
        self.stall.wait("claim")
        return super().claim(*args)

    def withdraw(self, *args: Any) -> Any:
        self.stall.wait("withdraw")
        return super().withdraw(*args)


@pytest.fixture
def sqlite_place(tmp_path) -> Iterator[Place]:
    place = _sqlite_place(tmp_path / "ledger.db")
    yield place
    place.close()


async def answered_in(attempt: asyncio.Future[Any], started: float) -> tuple[object, float]:
    """The attempt's outcome and how long after `started` it came (the wait is only a safety net)."""
    done, _ = await asyncio.wait({attempt}, timeout=SAFETY)
    assert done, "the cancelled attempt was never answered"
    outcome = (await asyncio.gather(attempt, return_exceptions=True))[0]
    return outcome, time.monotonic() - started


async def settled(ledger: KeyLedger) -> None:
    """Wait until the ledger's withdrawals in the background are over (in the store, or given up)."""
    while ledger._withdrawals:
        await asyncio.wait(set(ledger._withdrawals), timeout=SAFETY)


def withdrawals(place: Place, session_id: str) -> int:
    """The key's withdrawal count in the store (0 without a row)."""
    with sqlite3.connect(place.where) as conn:
        row = conn.execute(f"SELECT withdrawals FROM {TABLE} WHERE session_id = ?", (session_id,)).fetchone()
    return row[0] if row else 0


async def never() -> None:
    await asyncio.Event().wait()  # a held prompt never released: only the cancel ends it


@pytest.mark.parametrize("stalled", [("claim",), ("claim", "withdraw")], ids=["claim stalls", "store stalls"])
def test_a_cancel_during_a_stalled_claim_waits_for_the_withdrawal_only(sqlite_place, stalled):
    """The claim call of a held prompt stalls and the cancel cuts it off: the answer is the withdrawal's, -32800 at
    once when the store takes it, -32603 after one bound (not two) when the store is stalled too; a joined attempt
    gets the same. Once the store answers again the cut-off claim has committed nothing and the key is unused."""
    stall = Stall(*stalled)
    store = StalledSQLiteStore(sqlite_place.where, stall, answer_timeout_seconds=BOUND)
    sqlite_place.opened.append(store)
    ledger = KeyLedger(store)
    sid = sqlite_place.session()

    async def go():
        stall.go.clear()
        submitted = ledger.submit(sid, "k", 1, prompt=PROMPT, prepare=never, write=sqlite_place.write)
        first = asyncio.ensure_future(submitted)
        assert await asyncio.to_thread(stall.entered.wait, SAFETY), "the claim call never began"
        joined = asyncio.ensure_future(ledger.submit(sid, "k", 2, prompt=PROMPT, write=sqlite_place.write))
        await asyncio.sleep(0)  # one loop step: the second attempt joins the first (it makes no store call)
        try:
            started = time.monotonic()
            assert ledger.cancel(1)
            outcome, took = await answered_in(first, started)
            other, _ = await answered_in(joined, started)
        finally:
            stall.go.set()
        assert await asyncio.to_thread(stall.left.wait, SAFETY)
        await settled(ledger)
        return outcome, took, other

    outcome, took, other = asyncio.run(go())
    if "withdraw" in stalled:
        assert isinstance(outcome, StoreUnavailable), repr(outcome)
        assert took < ONE_BOUND, f"answered after {took:.2f} s: more than one store bound"
    else:
        assert isinstance(outcome, Cancelled), repr(outcome)
        assert took < AT_ONCE, f"the cancel was answered after {took:.2f} s"
        assert withdrawals(sqlite_place, sid) == 1  # in the store, for other Agents
    assert type(other) is type(outcome), repr(other)
    assert sqlite_place.messages() == 0
    # The key is unused: another Agent's attempt inserts it, once.
    elsewhere = KeyLedger(sqlite_place.store(answer_timeout_seconds=BOUND))
    again = asyncio.run(elsewhere.submit(sid, "k", 3, prompt=PROMPT, write=sqlite_place.write))
    assert again.inserted
    assert sqlite_place.messages() == 1


def test_a_cancel_during_an_insert_that_has_not_reached_commit_is_answered_at_once(sqlite_place):
    """The held prompt is released and its insert stalls inside the transaction, before COMMIT: the cancel cuts it
    off at the gate, -32800 comes at once (the claim is still ours, so nobody else can insert meanwhile), and the
    transaction, once it goes on, is refused at COMMIT."""
    store = StalledSQLiteStore(sqlite_place.where, Stall(), answer_timeout_seconds=BOUND)
    sqlite_place.opened.append(store)
    ledger = KeyLedger(store)
    sid = sqlite_place.session()
    writing, go, written = threading.Event(), threading.Event(), threading.Event()

    def slow_write(conn: Any, message_id: str) -> None:
        writing.set()
        try:
            go.wait(SAFETY)
            sqlite_place.write(conn, message_id)
        finally:
            written.set()

    async def go_on():
        released = asyncio.Event()

        async def prepare() -> None:
            await released.wait()

        first = asyncio.ensure_future(ledger.submit(sid, "k", 1, prompt=PROMPT, prepare=prepare, write=slow_write))
        released.set()
        try:
            assert await asyncio.to_thread(writing.wait, SAFETY), "the insert never began"
            started = time.monotonic()
            taken = ledger.cancel(1)
            outcome, took = await answered_in(first, started) if taken else (None, 0.0)
        finally:
            go.set()
        assert await asyncio.to_thread(written.wait, SAFETY)
        await settled(ledger)
        return taken, outcome, took

    taken, outcome, took = asyncio.run(go_on())
    assert taken, "the cancel of an insert whose COMMIT was not sent was refused"
    assert isinstance(outcome, Cancelled), repr(outcome)
    assert took < AT_ONCE, f"the cancel was answered after {took:.2f} s"
    # The next store call waits behind SQLite's lock until the cut-off transaction has rolled back.
    elsewhere = KeyLedger(sqlite_place.store(answer_timeout_seconds=BOUND))
    assert asyncio.run(elsewhere.lookup(sid, "k")) is None
    assert sqlite_place.messages() == 0
    again = asyncio.run(elsewhere.submit(sid, "k", 2, prompt=PROMPT, write=sqlite_place.write))
    assert again.inserted
    assert sqlite_place.messages() == 1


def test_a_cancel_after_the_commit_was_sent_gets_the_message(sqlite_place):
    """The insert's COMMIT is under way (held after it passed the gate) when the cancel comes: the cancel is refused,
    and the attempt and a joined one get the messageId once the COMMIT succeeds."""
    hold = Hold()
    store = HeldSQLiteStore(sqlite_place.where, hold, answer_timeout_seconds=BOUND)
    sqlite_place.opened.append(store)
    ledger = KeyLedger(store)
    sid = sqlite_place.session()
    write = held_writer(sqlite_place, hold)

    async def go():
        released = asyncio.Event()

        async def prepare() -> None:
            await released.wait()

        first = asyncio.ensure_future(ledger.submit(sid, "k", 1, prompt=PROMPT, prepare=prepare, write=write))
        joined = asyncio.ensure_future(ledger.submit(sid, "k", 2, prompt=PROMPT, write=write))
        released.set()
        try:
            assert await asyncio.to_thread(hold.reached.wait, SAFETY), "the COMMIT was never reached"
            refused = (ledger.cancel(1), ledger.cancel(2))
        finally:
            hold.release.set()
        return refused, *(await asyncio.gather(first, joined, return_exceptions=True))

    refused, outcome, other = asyncio.run(go())
    assert refused == (False, False)
    assert isinstance(outcome, str) and outcome.inserted, repr(outcome)  # type: ignore[attr-defined]
    assert other == outcome
    assert sqlite_place.messages() == 1


# -- PostgreSQL, the server frozen (SIGSTOP): the private cluster, never the server other tests share ----------------


class SignallingPostgresStore(PostgresStore):
    """A PostgreSQL store that says when a record call (the insert) has begun and when it has ended."""

    def __init__(self, dsn: str, **options: Any) -> None:
        self.recording, self.recorded = threading.Event(), threading.Event()
        super().__init__(dsn, setup=lambda c: c.execute(MESSAGES), **options)

    def record(self, *args: Any) -> Any:
        self.recording.set()
        try:
            return super().record(*args)
        finally:
            self.recorded.set()


@pytest.fixture
def frozen_place() -> Iterator[tuple[Any, Place]]:
    from pg_cluster import shared_cluster

    cluster = shared_cluster()
    place, drop = _postgres_place(cluster.url())
    try:
        yield cluster, place
    finally:
        cluster.thaw()  # whatever a failed test left behind
        place.close()
        drop()


PG_OPTIONS = {"connect_timeout_seconds": 2, "statement_timeout_seconds": 2, "answer_timeout_seconds": BOUND}


def test_frozen_server_a_cancel_during_the_insert_is_answered_at_once_and_nothing_is_inserted(frozen_place):
    """A held prompt holds its claim, the server freezes, the prompt is released and its insert waits on the frozen
    server: the cancel is answered -32800 at once; after the thaw the insert's transaction is refused at COMMIT,
    and a retry inserts the key once."""
    cluster, place = frozen_place
    store = SignallingPostgresStore(place.where, **PG_OPTIONS)
    place.opened.append(store)
    ledger = KeyLedger(store)
    sid = place.session()

    async def go():
        released, holding = asyncio.Event(), asyncio.Event()

        async def prepare() -> None:
            holding.set()  # the claim is in the store
            await released.wait()

        first = asyncio.ensure_future(ledger.submit(sid, "k", 1, prompt=PROMPT, prepare=prepare, write=place.write))
        await holding.wait()
        cluster.freeze()
        try:
            released.set()
            assert await asyncio.to_thread(store.recording.wait, SAFETY), "the insert never began"
            started = time.monotonic()
            assert ledger.cancel(1)
            outcome, took = await answered_in(first, started)
        finally:
            cluster.thaw()
        assert await asyncio.to_thread(store.recorded.wait, SAFETY)
        await settled(ledger)
        messages = place.messages()
        # A retry on this Agent inserts the key, once.
        again = await ledger.submit(sid, "k", 2, prompt=PROMPT, write=place.write)
        return outcome, took, messages, again

    outcome, took, messages, again = asyncio.run(go())
    assert isinstance(outcome, Cancelled), repr(outcome)
    assert took < AT_ONCE, f"the cancel was answered after {took:.2f} s"
    assert messages == 0, "-32800, then the message was inserted"
    assert again.inserted
    assert place.message_ids() == {"?": [again]}


def test_frozen_server_a_reference_agents_released_prompt_cancelled_in_its_insert_gets_32800_at_once(
    frozen_place, monkeypatch
):
    """End to end: reference Agents on one database, a held keyed prompt claimed, the server frozen, the prompt
    released (its insert waits on the server) and cancelled with `$/cancel_request`. The cancel used to be refused
    (-32603 after the store's bound); now -32800 at once, and after the thaw the key is unused on every Agent."""
    import test_multi_agent_pg as multi
    from test_multi_agent_pg import INITIALIZE, RELEASE, Agent, _held, new_session, prompt, user_messages

    monkeypatch.setattr(multi, "LEASE", "30")  # the claim stays surely ours while the server is frozen
    cluster, _ = frozen_place
    schema = f"t_{uuid.uuid4().hex[:12]}"
    url = _agent_url(cluster, schema)

    async def scenario() -> tuple[dict[str, Any], float, dict[str, Any]]:
        a, b = await asyncio.gather(Agent.start("A", url), Agent.start("B", url))
        try:
            session_id = await new_session([a, b])
            key = f"k-{uuid.uuid4()}"
            held = await _held(a, session_id, key, "cancelled")
            rid = next(r for r, f in a.answers.items() if f is held)
            cluster.freeze()
            try:
                a.notify(RELEASE, {"sessionId": session_id})
                # Lines are handled in order, and the released prompt starts its insert before the next line is
                # served: once A answers this (no store needed), the insert waits on the frozen server.
                assert "result" in await a.call("initialize", INITIALIZE)
                assert not held.done(), held.result()
                started = time.monotonic()
                a.notify("$/cancel_request", {"requestId": rid})
                answer = await asyncio.wait_for(held, SAFETY)
                took = time.monotonic() - started
            finally:
                cluster.thaw()
            # A retry on A starts once A's withdrawal is in the store; it inserts the key, once, on any Agent.
            again = await a.call("session/prompt", prompt(session_id, key, "cancelled"))
            assert user_messages(url, session_id) == {"cancelled": [again["result"]["messageId"]]}
            return answer, took, again
        finally:
            for agent in (a, b):
                await agent.close()

    try:
        answer, took, again = asyncio.run(scenario())
    finally:
        _drop_schema(cluster, schema)
    assert answer.get("error", {}).get("code") == -32800, answer
    assert took < AT_ONCE, f"the cancel was answered after {took:.2f} s"
    assert "result" in again, again


def _agent_url(cluster: Any, schema: str) -> str:
    from urllib.parse import quote

    import psycopg

    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return cluster.url(options=quote(f"-c search_path={schema}", safe=""))


def _drop_schema(cluster: Any, schema: str) -> None:
    import psycopg

    with psycopg.connect(cluster.url(), autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")
