"""Key-ledger throughput: claims plus records per second, against plain inserts on the same store.

For each store, "ours" claims a fresh key and records it together with the message insert, in one
transaction (`claim_record`: the ledger's path for a prompt inserted as soon as it arrives); the reference inserts
the same message with no deduplication, in the same kind of transaction. Both run alternately in this process.
Goal: at least half the plain insert rate.
PostgreSQL is measured when ACP_TEST_POSTGRES_DSN (or the CI default) reaches a server; otherwise it is left out.
"""

from __future__ import annotations

import itertools
import os
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

from acp_v2_runtime.idempotency import MemoryStore, SQLiteStore

from .common import Ratio, interleaved

GOAL = 0.5
DEFAULT_DSN = "postgresql://acp:acp@127.0.0.1:54329/acp_ledger"
# A message table as an Agent would keep it: message ids are unique within a session, so they are the key.
MESSAGES = (
    "CREATE TABLE IF NOT EXISTS bench_messages "
    "(session_id TEXT, message_id TEXT, content TEXT, PRIMARY KEY (session_id, message_id))"
)
CONTENT = '[{"type": "text", "text": "hello"}]'


def _ratio(name: str, store: Any, plain_insert: Any, writer: Any, batch: int, rounds: int) -> Ratio:
    """`plain_insert(session, id)` is a transaction of its own; `writer(session)` makes the `write` that the store
    calls inside its own transaction."""
    session = f"bench_{uuid.uuid4().hex}"
    # Fresh digests and message ids are made before the clock starts, so both sides time only the store.
    digests = iter([f"{n:064x}" for n in range(batch * rounds)])
    keyed_ids = iter([f"m{n}" for n in range(batch * rounds)])
    plain_ids = iter([f"p{n}" for n in range(batch * rounds)])

    write = writer(session)

    def keyed() -> None:
        claim_record = store.claim_record
        for digest, message_id in zip(
            itertools.islice(digests, batch), itertools.islice(keyed_ids, batch), strict=True
        ):
            claim_record(session, digest, message_id, None, write)

    def plain() -> None:
        for message_id in itertools.islice(plain_ids, batch):
            plain_insert(session, message_id)

    ours, reference = interleaved(keyed, plain, rounds=rounds)
    name = f"ledger {name}: keyed prompts/s vs plain inserts/s"
    return Ratio(name, batch / ours, batch / reference, "ops/s", GOAL, True)


def _memory() -> Ratio:
    store = MemoryStore()
    messages: dict[tuple[str, str], str] = {}
    lock = threading.Lock()  # the reference takes a lock as the store does, so both are thread-safe

    def plain_insert(session: str, message_id: str) -> None:
        with lock:
            messages[(session, message_id)] = CONTENT

    def writer(session: str) -> Any:
        def write(_conn: Any, message_id: str) -> None:
            messages[(session, message_id)] = CONTENT

        return write

    return _ratio("memory", store, plain_insert, writer, 200, 301)


def _sql(name: str, store: Any, placeholder: str, batch: int, rounds: int) -> Ratio:
    """A SQL store against plain inserts into the same message table, each in a transaction of the store's."""
    sql = f"INSERT INTO bench_messages VALUES ({placeholder}, {placeholder}, {placeholder})"

    def plain_insert(session: str, message_id: str) -> None:
        with store.transaction() as conn:
            conn.execute(sql, (session, message_id, CONTENT))

    def writer(session: str) -> Any:
        def write(conn: Any, message_id: str) -> None:
            conn.execute(sql, (session, message_id, CONTENT))

        return write

    try:
        return _ratio(name, store, plain_insert, writer, batch, rounds)
    finally:
        store.close()


def _sqlite(tmp: str) -> Ratio:
    store = SQLiteStore(Path(tmp) / "bench.db", setup=lambda c: c.execute(MESSAGES))
    return _sql("sqlite", store, "?", 40, 151)


def _postgres() -> Ratio | None:
    try:
        from acp_v2_runtime.idempotency.postgres import PostgresStore

        store = PostgresStore(os.environ.get("ACP_TEST_POSTGRES_DSN", DEFAULT_DSN), setup=lambda c: c.execute(MESSAGES))
    except Exception:
        return None  # no server reachable: PostgreSQL is left out, as the module docstring says
    return _sql("postgresql", store, "%s", 20, 101)


def run() -> list[Ratio]:
    with tempfile.TemporaryDirectory() as tmp:
        results = [_memory(), _sqlite(tmp)]
    pg = _postgres()
    return [*results, pg] if pg is not None else results
