"""Load: many attempts with one key, and many keys with interleaved attempts, insert each message once."""

from __future__ import annotations

import asyncio
import multiprocessing
import random
import sqlite3
import uuid

import workers

from acp_v2_runtime.idempotency import KeyLedger, MemoryStore, SQLiteStore

PROCESSES = 4
ATTEMPTS = 64


def across_processes(kind: str, where: str, session_id: str) -> list[str]:
    """64 attempts with one key, 16 in each of 4 processes started together; returns every messageId."""
    workers.make_store(kind, where).close()  # create the tables once, before the race
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(PROCESSES), ctx.Queue()
    procs = [
        ctx.Process(
            target=workers.attempts,
            args=(kind, where, session_id, "one-key", ATTEMPTS // PROCESSES, barrier, results),
        )
        for _ in range(PROCESSES)
    ]
    for proc in procs:
        proc.start()
    ids = [mid for _ in procs for mid in results.get(timeout=120)]
    for proc in procs:
        proc.join(60)
        assert proc.exitcode == 0
    return ids


def test_64_attempts_in_memory():
    inserted = []
    ledger = KeyLedger(MemoryStore())

    async def go():
        return await asyncio.gather(
            *(ledger.submit("s", "one-key", i, write=lambda _c, m: inserted.append(m)) for i in range(ATTEMPTS))
        )

    ids = asyncio.run(go())
    assert len(ids) == ATTEMPTS and set(ids) == set(inserted) and len(inserted) == 1


def test_64_attempts_sqlite_4_processes(tmp_path):
    db = str(tmp_path / "ledger.db")
    ids = across_processes("sqlite", db, "s")
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT message_id FROM test_messages").fetchall()
    assert len(ids) == ATTEMPTS and len(rows) == 1 and set(ids) == {rows[0][0]}


def test_64_attempts_postgres_4_processes(pg_dsn):
    import psycopg

    session_id = f"sess_{uuid.uuid4().hex}"
    ids = across_processes("postgres", pg_dsn, session_id)
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute("SELECT message_id FROM test_messages WHERE session_id = %s", (session_id,)).fetchall()
    assert len(ids) == ATTEMPTS and len(rows) == 1 and set(ids) == {rows[0][0]}


def interleaved(store, keys: int = 10_000, tries: int = 3, session: str = "s") -> tuple[int, int]:
    """`keys` keys with `tries` attempts each, arriving shuffled and concurrently; returns (inserted, distinct ids)."""
    ledger = KeyLedger(store)
    inserted = []
    order = [(k, t) for k in range(keys) for t in range(tries)]
    random.Random(5).shuffle(order)

    async def go():
        answers: dict[int, set[str]] = {}

        async def attempt(k: int, t: int) -> None:
            mid = await ledger.submit(session, f"key-{k}", (k, t), write=lambda _c, m: inserted.append(m))
            answers.setdefault(k, set()).add(mid)

        for start in range(0, len(order), 600):  # 600 attempts in flight at a time
            await asyncio.gather(*(attempt(k, t) for k, t in order[start : start + 600]))
        assert all(len(ids) == 1 for ids in answers.values())
        return len({next(iter(ids)) for ids in answers.values()})

    distinct = asyncio.run(go())
    return len(inserted), distinct


def test_10000_keys_3_attempts_memory():
    assert interleaved(MemoryStore()) == (10_000, 10_000)


def test_10000_keys_3_attempts_sqlite(tmp_path):
    store = SQLiteStore(tmp_path / "ledger.db")
    try:
        assert interleaved(store) == (10_000, 10_000)
    finally:
        store.close()


def test_10000_keys_3_attempts_postgres(pg_dsn):
    from acp_v2_runtime.idempotency.postgres import PostgresStore

    store = PostgresStore(pg_dsn)
    try:
        assert interleaved(store, session=f"sess_{uuid.uuid4().hex}") == (10_000, 10_000)
    finally:
        store.close()
