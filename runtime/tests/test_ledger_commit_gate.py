"""A COMMIT already sent when the ledger's bound passes is waited for, never answered -32603 while it may succeed.

An error answer to `session/prompt` must mean that nothing was inserted. Each test holds a transaction's COMMIT
until well past the bound, asserts that the attempt is still unanswered, then lets the COMMIT succeed (the answer
is the messageId, one message exists) or fail (the answer is the error, no message exists, the key stays unused).
SQLite's COMMIT is held by a connection that waits on an event; PostgreSQL's by a deferred constraint trigger that
waits for an advisory lock the test holds, so the server itself stalls during the COMMIT, after its guard passed.

Nothing is synchronised by sleeping: the test waits for the event that says the COMMIT began, then for the bound to
pass (a timer on the same loop set after the ledger's own, so it fires after it), then releases the COMMIT.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import types
import uuid
from typing import Any

import pytest
from ledger_places import MESSAGES, Place, place_factory  # noqa: F401  (a fixture)

from acp_v2_runtime import reference_agent
from acp_v2_runtime.idempotency import KeyLedger, SQLiteStore
from acp_v2_runtime.idempotency import postgres as postgres_store
from acp_v2_runtime.idempotency.keys import StoreUnavailable
from acp_v2_runtime.reference_agent import bounds

PROMPT = [{"type": "text", "text": "hello"}]
# The ledger's bound. The worker must send COMMIT within 0.6 of it (and on PostgreSQL reach the server's guard within
# 0.3 of it): milliseconds of work, so a loaded machine keeps a wide margin. The test waits this long once per case.
BOUND = 3.0
PAST_THE_BOUND = BOUND + 0.5  # waited for after the COMMIT began, so after the ledger's bound has passed
SAFETY = 60.0  # a held COMMIT goes on by itself after this, so that a failing test ends rather than hangs


def assert_the_outcome_was_waited_for(
    waited: bool, outcome: object, again: Any, commits: bool, error: type[BaseException]
) -> None:
    """The attempt was not answered while its COMMIT was held; then it got the COMMIT's outcome (the inserted
    messageId, or the COMMIT's own error), and a retry with the key got the same messageId or, after a failed
    COMMIT, inserted (the key was left unused)."""
    assert waited, f"answered while its COMMIT was under way: {outcome!r}"
    if commits:
        assert isinstance(outcome, str) and outcome.inserted, repr(outcome)  # type: ignore[attr-defined]
        assert again == outcome and not again.inserted
    else:
        assert isinstance(outcome, error), repr(outcome)
        assert again.inserted


class Hold:
    """Holds the next COMMIT of the thread that `arm()`s it: `reached` is set when it begins, and it waits for
    `release`; with `fail`, it then fails instead of committing. `ended` is set once that transaction is over."""

    def __init__(self) -> None:
        self.thread: int | None = None
        self.reached = threading.Event()
        self.release = threading.Event()
        self.ended = threading.Event()
        self.fail = False

    def arm(self) -> None:
        self.thread = threading.get_ident()

    def mine(self) -> bool:
        return self.thread == threading.get_ident()


class HeldConnection:
    """A SQLite connection whose armed COMMIT waits for the test (a slow disk, a checkpoint)."""

    def __init__(self, conn: sqlite3.Connection, hold: Hold) -> None:
        self._conn = conn
        self._hold = hold

    def execute(self, sql: str, *args: Any) -> Any:
        hold = self._hold
        if sql == "COMMIT" and hold.mine():
            hold.thread = None  # only this COMMIT
            hold.reached.set()
            hold.release.wait(SAFETY)
            try:
                if hold.fail:
                    raise sqlite3.OperationalError("disk I/O error (a test's)")  # the transaction stays open
                return self._conn.execute(sql, *args)
            finally:
                hold.ended.set()
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class HeldSQLiteStore(SQLiteStore):
    """A SQLite store whose connections hold the COMMIT that `hold` is armed for."""

    def __init__(self, path: Any, hold: Hold, **options: Any) -> None:
        self.hold = hold
        super().__init__(path, setup=lambda c: c.execute(MESSAGES), **options)

    def connection(self) -> Any:
        return HeldConnection(super().connection(), self.hold)


def held_writer(place: Place, hold: Hold) -> Any:
    """The place's `write`, arming the hold for the COMMIT of the transaction it writes in."""

    def write(conn: Any, message_id: str) -> None:
        hold.arm()
        place.write(conn, message_id)

    return write


async def unanswered_past_the_bound(attempt: asyncio.Future[Any], hold: Hold) -> bool:
    """Wait until the held COMMIT began, then past the bound; whether `attempt` is still unanswered then. The
    COMMIT is released whatever happens, so the worker thread ends."""
    try:
        assert await asyncio.to_thread(hold.reached.wait, SAFETY), "the COMMIT was never reached"
        # The ledger's timer was set when its call began, before the COMMIT did: this one, later, fires after it.
        await asyncio.wait({attempt}, timeout=PAST_THE_BOUND)
        return not attempt.done()
    finally:
        hold.release.set()


ON_SQLITE = pytest.mark.parametrize("place_factory", ["sqlite"], indirect=True)


@pytest.fixture
def sqlite_place(place_factory):  # noqa: F811
    return place_factory()


@ON_SQLITE
@pytest.mark.parametrize("with_prepare", [False, True])
@pytest.mark.parametrize("commits", [True, False], ids=["commit succeeds", "commit fails"])
def test_a_sqlite_commit_that_outlasts_the_bound_is_waited_for(sqlite_place, with_prepare, commits):
    hold = Hold()
    hold.fail = not commits
    store = HeldSQLiteStore(sqlite_place.where, hold, answer_timeout_seconds=BOUND)
    sqlite_place.opened.append(store)
    ledger = KeyLedger(store)
    sid = sqlite_place.session()
    write = held_writer(sqlite_place, hold)

    async def nothing() -> None:
        return None

    async def go():
        prepare = nothing if with_prepare else None
        attempt = asyncio.ensure_future(ledger.submit(sid, "k", 1, prompt=PROMPT, prepare=prepare, write=write))
        waited = await unanswered_past_the_bound(attempt, hold)
        outcome = await asyncio.gather(attempt, return_exceptions=True)
        again = await ledger.submit(sid, "k", 2, prompt=PROMPT, write=sqlite_place.write)
        return waited, outcome[0], again

    waited, outcome, again = asyncio.run(go())
    assert_the_outcome_was_waited_for(waited, outcome, again, commits, sqlite3.OperationalError)
    assert sqlite_place.messages() == 1


@ON_SQLITE
def test_a_reference_agent_write_whose_commit_outlasts_the_bound_is_waited_for(sqlite_place, monkeypatch):
    """The Agent's own bounded writes (`Agent.stored`, used on a database server) wait for a COMMIT sent before
    their bound passed. The write runs on a SQLite store with a held COMMIT: the gate belongs to the worker thread,
    whatever the store."""
    monkeypatch.setattr(bounds, "STORE_WAIT_SECONDS", BOUND)
    agent = types.SimpleNamespace(remote=True)  # `stored` reads only whether the database is a server

    def attempt_with(commits: bool) -> tuple[bool, object]:
        hold = Hold()
        hold.fail = not commits
        store = HeldSQLiteStore(sqlite_place.where, hold)
        sqlite_place.opened.append(store)

        def write() -> str:
            with store.transaction() as conn:
                hold.arm()
                sqlite_place.write(conn, "m")
            return "written"

        async def go():
            attempt = asyncio.ensure_future(reference_agent.Agent.stored(agent, write))
            waited = await unanswered_past_the_bound(attempt, hold)
            return waited, (await asyncio.gather(attempt, return_exceptions=True))[0]

        return asyncio.run(go())

    waited, outcome = attempt_with(commits=False)
    assert waited, f"answered while its COMMIT was under way: {outcome!r}"
    assert isinstance(outcome, sqlite3.OperationalError), repr(outcome)
    assert sqlite_place.messages() == 0
    waited, outcome = attempt_with(commits=True)
    assert waited, f"answered while its COMMIT was under way: {outcome!r}"
    assert outcome == "written"
    assert sqlite_place.messages() == 1


@ON_SQLITE
def test_a_write_that_has_not_reached_commit_at_the_bound_gets_32603_and_never_commits(sqlite_place):
    """The other side of the gate: the waiter gives up first, so the COMMIT that comes later is refused."""
    hold = Hold()
    store = HeldSQLiteStore(sqlite_place.where, hold, answer_timeout_seconds=BOUND)
    sqlite_place.opened.append(store)
    ledger = KeyLedger(store)
    sid = sqlite_place.session()
    ended = threading.Event()

    def slow_write(conn: Any, message_id: str) -> None:
        hold.reached.set()
        try:
            hold.release.wait(SAFETY)
            sqlite_place.write(conn, message_id)
        finally:
            ended.set()

    async def go():
        attempt = asyncio.ensure_future(ledger.submit(sid, "k", 1, prompt=PROMPT, write=slow_write))
        try:
            await asyncio.to_thread(hold.reached.wait, SAFETY)
            with contextlib.suppress(StoreUnavailable):
                await attempt
        finally:
            hold.release.set()
        await asyncio.to_thread(ended.wait, SAFETY)
        # The worker's transaction ends right after its write; the next store call on this ledger waits behind
        # SQLite's lock until it has, so the count below sees what that transaction left.
        again = await ledger.submit(sid, "k", 2, prompt=PROMPT, write=sqlite_place.write)
        return attempt.exception(), again

    failure, again = asyncio.run(go())
    assert isinstance(failure, StoreUnavailable), repr(failure)
    assert again.inserted
    assert sqlite_place.messages() == 1


@pytest.mark.parametrize("place_factory", ["postgres"], indirect=True)
@pytest.mark.parametrize("commits", [True, False], ids=["commit succeeds", "commit fails"])
def test_a_postgres_commit_that_stalls_on_the_server_past_the_bound_is_waited_for(
    place_factory,  # noqa: F811
    monkeypatch,
    commits,
):
    """The server's guard passes, then the server stalls while it commits (a deferred trigger waits for a lock the
    test holds): the ledger waits, and the answer is what the COMMIT did."""
    import psycopg

    place = place_factory()
    # Server timeouts longer than the hold, so that only the test decides how the COMMIT ends.
    store = place.store(statement_timeout_seconds=60, lock_timeout_seconds=60, answer_timeout_seconds=BOUND)
    ledger = KeyLedger(store)
    sid = place.session()
    lock = uuid.uuid4().int % (2**62)
    hold = Hold()
    passed = postgres_store.begin_commit

    def signalled() -> float | None:
        guard = passed()
        if hold.mine():
            hold.thread = None
            hold.reached.set()  # the gate says committing: the guarded COMMIT goes to the server next
        return guard

    monkeypatch.setattr(postgres_store, "begin_commit", signalled)
    with psycopg.connect(place.where, autocommit=True) as holder:
        holder.execute("CREATE TABLE ledger_test_hold (fail BOOLEAN NOT NULL)")
        holder.execute("INSERT INTO ledger_test_hold VALUES (%s)", (not commits,))
        holder.execute(
            "CREATE FUNCTION ledger_test_held() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            f"PERFORM pg_advisory_xact_lock({lock}); "
            "IF (SELECT fail FROM ledger_test_hold) THEN RAISE EXCEPTION 'the commit failed (a test''s)'; END IF; "
            "RETURN NULL; END $$"
        )
        holder.execute(
            "CREATE CONSTRAINT TRIGGER ledger_test_held AFTER INSERT ON ledger_test_messages "
            "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_test_held()"
        )
        holder.execute("SELECT pg_advisory_lock(%s)", (lock,))
        write = held_writer(place, hold)

        async def go():
            attempt = asyncio.ensure_future(ledger.submit(sid, "k", 1, prompt=PROMPT, write=write))
            try:
                waited = await unanswered_past_the_bound(attempt, hold)
            finally:
                holder.execute("SELECT pg_advisory_unlock(%s)", (lock,))
            outcome = (await asyncio.gather(attempt, return_exceptions=True))[0]
            holder.execute("UPDATE ledger_test_hold SET fail = false")
            again = await ledger.submit(sid, "k", 2, prompt=PROMPT, write=place.write)
            return waited, outcome, again

        waited, outcome, again = asyncio.run(go())
    assert_the_outcome_was_waited_for(waited, outcome, again, commits, psycopg.Error)
    assert commits or "commit failed" in str(outcome), repr(outcome)
    assert place.messages() == 1
