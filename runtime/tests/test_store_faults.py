"""Faults on the SQL stores themselves: a process killed after its claim or after its insertion."""

from __future__ import annotations

import asyncio
import multiprocessing
import signal
import sqlite3
import uuid

import pytest
import workers

from acp_v2_runtime.idempotency import KeyLedger


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path) -> tuple[str, str]:
    if request.param == "sqlite":
        return "sqlite", str(tmp_path / "ledger.db")
    return "postgres", request.getfixturevalue("pg_dsn")


def messages(kind: str, where: str, session_id: str) -> list[str]:
    if kind == "sqlite":
        with sqlite3.connect(where) as conn:
            rows = conn.execute("SELECT message_id FROM test_messages WHERE session_id = ?", (session_id,))
            return [r[0] for r in rows.fetchall()]
    import psycopg

    with psycopg.connect(where) as conn:
        rows = conn.execute("SELECT message_id FROM test_messages WHERE session_id = %s", (session_id,))
        return [r[0] for r in rows.fetchall()]


def killed(kind: str, where: str, session_id: str, point: str) -> None:
    workers.make_store(kind, where).close()
    proc = multiprocessing.get_context("spawn").Process(
        target=workers.crash, args=(kind, where, session_id, "k1", point, 0.5)
    )
    proc.start()
    proc.join(60)
    assert proc.exitcode == -signal.SIGKILL


def retry(kind: str, where: str, session_id: str) -> str:
    store = workers.make_store(kind, where, lease=0.5)
    try:
        write = lambda conn, mid: workers.insert_message(conn, session_id, mid)  # noqa: E731 - one line
        return asyncio.run(KeyLedger(store).submit(session_id, "k1", 2, write=write))
    finally:
        store.close()


def test_killed_after_insertion_the_retry_gets_the_original(where):
    kind, place = where
    session_id = f"sess_{uuid.uuid4().hex}"
    killed(kind, place, session_id, "insert")
    (original,) = messages(kind, place, session_id)
    assert retry(kind, place, session_id) == original
    assert messages(kind, place, session_id) == [original]


def test_killed_after_claim_the_retry_inserts_once(where):
    kind, place = where
    session_id = f"sess_{uuid.uuid4().hex}"
    killed(kind, place, session_id, "claim")
    assert messages(kind, place, session_id) == []
    message_id = retry(kind, place, session_id)  # waits out the dead claim's 0.5 s lease, then inserts
    assert messages(kind, place, session_id) == [message_id]
