"""A stalled store gets bounded answers: -32603 with the key unused, -32800 at once for a held prompt's cancel, and
nothing inserted late or twice once the store is back.

Stalls are made without stopping any server: another connection holds SQLite's write lock, or an exclusive lock
on the key table of a PostgreSQL schema that only this test uses; a `write` that sleeps inside the transaction
stands in for a server that stops answering.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from typing import Any

import pytest
from ledger_places import MESSAGES, Place, place_factory  # noqa: F401  (a fixture)

from acp_v2_runtime.idempotency import Cancelled, KeyLedger
from acp_v2_runtime.idempotency.calls import commit_deadline
from acp_v2_runtime.idempotency.keys import StoreUnavailable
from acp_v2_runtime.idempotency.postgres import PostgresStore
from acp_v2_runtime.idempotency.sql import TABLE

PROMPT = [{"type": "text", "text": "hello"}]
SHORT = {"busy_timeout_seconds": 0.5, "statement_timeout_seconds": 0.5}
SHORT_PG = {"connect_timeout_seconds": 2, "statement_timeout_seconds": 0.5, "lock_timeout_seconds": 0.5}
SLACK = 10  # a busy 2-core machine: an answer due within the bound may take this many times longer


def short(place: Place) -> dict:
    return SHORT if place.kind == "sqlite" else SHORT_PG


@contextlib.contextmanager
def stalled(place: Place):
    """Hold the lock every store transaction needs, from another connection, until the block ends."""
    if place.kind == "sqlite":
        conn = sqlite3.connect(place.where, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.execute("ROLLBACK")
            conn.close()
        return
    import psycopg

    with psycopg.connect(place.where) as conn:
        conn.execute(f"LOCK TABLE {TABLE} IN ACCESS EXCLUSIVE MODE")
        try:
            yield
        finally:
            conn.rollback()


@pytest.fixture
def sql_place(place_factory):  # noqa: F811
    place = place_factory()
    if place.kind == "memory":
        pytest.skip("the memory store has no lock another process could hold")
    return place


@pytest.mark.parametrize("with_prepare", [False, True])
def test_a_keyed_prompt_on_a_stalled_store_gets_32603_in_bounded_time_and_the_key_stays_unused(sql_place, with_prepare):
    store = sql_place.store(**short(sql_place))
    ledger = KeyLedger(store)
    sid = sql_place.session()

    async def nothing() -> None:
        return None

    async def go():
        prepare = nothing if with_prepare else None
        with stalled(sql_place):
            started = time.monotonic()
            try:
                await ledger.submit(sid, "k", 1, prompt=PROMPT, prepare=prepare, write=sql_place.write)
            except Exception as exc:
                failure = exc
            else:
                pytest.fail("a stalled store answered as if the message were in")
            took = time.monotonic() - started
        again = await ledger.submit(sid, "k", 2, prompt=PROMPT, write=sql_place.write)
        return failure, took, again

    failure, took, again = asyncio.run(go())
    assert not isinstance(failure, Cancelled)
    assert took < store.answer_timeout_seconds * SLACK, took
    assert again.inserted  # the key was left unused
    assert sql_place.messages() == 1


def test_a_held_prompts_cancel_is_answered_at_once_on_a_stalled_store(sql_place):
    store = sql_place.store(**short(sql_place))
    ledger = KeyLedger(store)
    sid = sql_place.session()
    held_now = never = None

    async def held() -> None:
        held_now.set()
        await never.wait()

    async def go():
        nonlocal held_now, never
        held_now, never = asyncio.Event(), asyncio.Event()
        attempt = asyncio.ensure_future(ledger.submit(sid, "k", 1, prompt=PROMPT, prepare=held, write=sql_place.write))
        await held_now.wait()
        with stalled(sql_place):
            started = time.monotonic()
            assert ledger.cancel(1)
            with contextlib.suppress(Exception):
                await attempt
            took = time.monotonic() - started
            outcome = attempt.exception()
        await asyncio.sleep(store.answer_timeout_seconds)  # the withdrawal gets through once the lock is gone
        again = await ledger.submit(sid, "k", 2, prompt=PROMPT, write=sql_place.write)
        return outcome, took, again

    outcome, took, again = asyncio.run(go())
    assert isinstance(outcome, Cancelled)
    assert took < store.answer_timeout_seconds  # before any store timeout could have fired
    assert again.inserted
    assert sql_place.messages() == 1


def test_a_store_that_stops_answering_mid_insert_commits_nothing_late(sql_place):
    """The ledger stops waiting after its bound and answers -32603; the transaction, still running, must not
    commit once it ends (its write sleeps past the bound, as a frozen server would)."""
    store = sql_place.store(**short(sql_place), answer_timeout_seconds=1.0)
    ledger = KeyLedger(store)
    sid = sql_place.session()

    def slow_write(conn, message_id):
        time.sleep(2.0)
        sql_place.write(conn, message_id)

    async def go():
        started = time.monotonic()
        try:
            await ledger.submit(sid, "k", 1, prompt=PROMPT, write=slow_write)
        except StoreUnavailable as exc:
            failure = exc
        took = time.monotonic() - started
        await asyncio.sleep(2.5)  # the abandoned transaction ends meanwhile
        again = await ledger.submit(sid, "k", 2, prompt=PROMPT, write=sql_place.write)
        return failure, took, again

    failure, took, again = asyncio.run(go())
    assert failure.to_error()["code"] == failure.code
    assert took < 1.0 * SLACK
    assert again.inserted
    assert sql_place.messages() == 1


def test_the_server_refuses_a_commit_that_comes_too_late(place_factory):  # noqa: F811
    place = place_factory()
    if place.kind != "postgres":
        pytest.skip("only a server checks the time at COMMIT")
    store = place.store()
    late = pytest.raises(Exception, match="outlived")
    with commit_deadline(time.monotonic() + 60, 0.2, 1.0), late, store.transaction() as conn:
        conn.execute("SELECT pg_sleep(0.5)")
        place.write(conn, "late")
    assert place.messages() == 0
    with commit_deadline(time.monotonic() + 60, 30.0, 60.0), store.transaction() as conn:
        place.write(conn, "in time")
    assert place.messages() == 1


def test_the_loop_stays_free_while_a_store_call_waits(sql_place):
    """Store calls wait in worker threads: other work on the event loop goes on during a stall."""
    store = sql_place.store(**short(sql_place))
    ledger = KeyLedger(store)
    sid = sql_place.session()

    async def go():
        with stalled(sql_place):
            attempt = asyncio.ensure_future(ledger.submit(sid, "k", 1, prompt=PROMPT, write=sql_place.write))
            started = time.monotonic()
            await asyncio.sleep(0.01)
            beat = time.monotonic() - started
            with contextlib.suppress(Exception):
                await attempt
        return beat

    assert asyncio.run(go()) < 0.45  # well before the lock timeout ends the stalled call


class FreezingProxy:
    """A TCP relay to the PostgreSQL server that can stop passing bytes, as a frozen server would look (its
    kernel still accepts what is sent), without stopping the server other tests share."""

    def __init__(self, host: str, port: int) -> None:
        import socket
        import threading

        self.target = (host, port)
        self.frozen = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[Any] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading

        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            self.sockets += [client, server]
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: Any, sink: Any) -> None:
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                data = b""
            while data and self.frozen.is_set():
                time.sleep(0.01)
            try:
                if not data:
                    sink.close()
                    return
                sink.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        self.listener.close()
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.close()


def test_a_frozen_server_gets_bounded_answers_and_commits_nothing_late(place_factory):  # noqa: F811
    """The server stops answering (a relay holds every byte) while a keyed prompt is inserted and while a held one
    is cancelled: -32603 within the ledger's bound, -32800 at once for the held one, and after the thaw nothing
    of the abandoned transaction is committed and the key inserts once."""
    import psycopg

    place = place_factory()
    if place.kind != "postgres":
        pytest.skip("a server store")
    info = psycopg.conninfo.conninfo_to_dict(place.where)
    proxy = FreezingProxy(str(info.get("host", "127.0.0.1")), int(info.get("port", 5432)))
    relayed = psycopg.conninfo.make_conninfo(place.where, host="127.0.0.1", port=proxy.port)
    # The ledger's bound under libpq's connect timeout (whole seconds, at least 2): a worker thread that has to
    # connect through the frozen relay would otherwise race the bound with psycopg's ConnectionTimeout.
    store = PostgresStore(relayed, setup=lambda c: c.execute(MESSAGES), **SHORT_PG, answer_timeout_seconds=1.0)
    ledger = KeyLedger(store)
    sid = place.session()
    held_now = never = None

    async def held() -> None:
        held_now.set()
        await never.wait()

    async def go():
        nonlocal held_now, never
        held_now, never = asyncio.Event(), asyncio.Event()
        holding = asyncio.ensure_future(ledger.submit(sid, "h", 1, prompt=PROMPT, prepare=held, write=place.write))
        await held_now.wait()
        proxy.frozen.set()
        failure: BaseException | None = None
        try:
            started = time.monotonic()
            cancel_taken = ledger.cancel(1)
            with contextlib.suppress(Cancelled):
                await holding
            cancelled_in = time.monotonic() - started
            started = time.monotonic()
            try:
                await ledger.submit(sid, "k", 2, prompt=PROMPT, write=place.write)
            except Exception as exc:  # checked below: StoreUnavailable is what the bound must give
                failure = exc
            answered_in = time.monotonic() - started
            await asyncio.sleep(3.0)  # the freeze outlasts the bound
        finally:
            # Thawed whatever happened above: a store thread still waiting on the relay would otherwise hold the
            # event loop's shutdown (it waits for its executor) for good, and the test would hang, not fail.
            proxy.frozen.clear()
        assert cancel_taken
        await asyncio.sleep(3.0)  # the abandoned transaction ends meanwhile, refused at COMMIT
        again = await ledger.submit(sid, "k", 3, prompt=PROMPT, write=place.write)
        return holding.exception(), cancelled_in, failure, answered_in, again

    try:
        outcome, cancelled_in, failure, answered_in, again = asyncio.run(go())
    finally:
        store.close()
        proxy.close()
    assert isinstance(outcome, Cancelled) and cancelled_in < 2.0
    assert isinstance(failure, StoreUnavailable), repr(failure)
    assert failure.code == StoreUnavailable(1).code and answered_in < 2.0 * SLACK
    assert again.inserted
    assert place.messages() == 1
