"""Worker processes for the cross-process tests: each runs attempts against a shared store."""

from __future__ import annotations

import asyncio
from typing import Any

MESSAGES_SQLITE = "CREATE TABLE IF NOT EXISTS test_messages (session_id TEXT, message_id TEXT)"
MESSAGES_POSTGRES = "CREATE TABLE IF NOT EXISTS test_messages (session_id TEXT, message_id TEXT)"


def make_store(kind: str, where: str, lease: float = 30.0) -> Any:
    from acp_v2_runtime.idempotency import SQLiteStore

    if kind == "sqlite":
        return SQLiteStore(where, lease_seconds=lease, setup=lambda c: c.execute(MESSAGES_SQLITE))
    from acp_v2_runtime.idempotency.postgres import PostgresStore

    return PostgresStore(where, lease_seconds=lease, setup=lambda c: c.execute(MESSAGES_POSTGRES))


def insert_message(conn: Any, session_id: str, message_id: str) -> None:
    mark = "?" if conn.__class__.__module__.startswith("sqlite3") else "%s"
    conn.execute(f"INSERT INTO test_messages VALUES ({mark}, {mark})", (session_id, message_id))


def attempts(kind: str, where: str, session_id: str, key: str, count: int, barrier: Any, results: Any) -> None:
    """Run `count` concurrent attempts with one key once every process is ready; report the messageIds."""
    from acp_v2_runtime.idempotency import KeyLedger

    store = make_store(kind, where)
    ledger = KeyLedger(store)

    async def go() -> list[str]:
        def write(conn: Any, message_id: str) -> None:
            insert_message(conn, session_id, message_id)

        return await asyncio.gather(*(ledger.submit(session_id, key, i, write=write) for i in range(count)))

    barrier.wait()
    results.put(asyncio.run(go()))
    store.close()


def crash(kind: str, where: str, session_id: str, key: str, point: str, lease: float) -> None:
    """Run one keyed attempt and die by SIGKILL at `point`: after the claim, or after the insertion (unanswered)."""
    import os
    import signal

    from acp_v2_runtime.idempotency import KeyLedger

    store = make_store(kind, where, lease)
    ledger = KeyLedger(store)

    async def die() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    def write(conn: Any, message_id: str) -> None:
        insert_message(conn, session_id, message_id)

    async def go() -> None:
        await ledger.submit(session_id, key, 1, prepare=die if point == "claim" else None, write=write)
        os.kill(os.getpid(), signal.SIGKILL)  # inserted and recorded, but the answer never leaves

    asyncio.run(go())
