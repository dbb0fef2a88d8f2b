"""What an idempotency key costs the Agent, per store: `KeyLedger.submit` with a key against the same call without.

Main lines (goal: at least 0.8): both sides call `KeyLedger.submit` on the same ledger with the same session, the
same prompt (a text block and a resource link), the same `write` and the ledger's default options, awaited one
after another in one event loop; keys are fresh UUID strings made before the clock starts. "Ours" passes a key,
so the ledger checks it, digests it, fingerprints the prompt and records the key with the message in one store
step; the reference passes None, so the ledger only inserts the message. The `write` is what an Agent does on
each store: the memory store keeps the prompt object in a dict, the SQL stores insert a row with the prompt as JSON
text in the store's transaction. The SQL stores run in a worker thread on both sides (the ledger's default for
blocking stores).

Secondary lines (goal: at least 0.5): the bare store call the ledger makes for a keyed prompt (`claim_record`,
which inserts the message through `write` and records the key in one transaction) against a plain insert of the
same message in the same kind of transaction, with no ledger around either. Here both sides do almost nothing
but the insert, so the key's row is half the work; the goal says a key costs at most as much as the insert.

Both sides of every line run alternately in this process. PostgreSQL is measured when ACP_TEST_POSTGRES_DSN (or
the CI default) reaches a server; otherwise its lines are left out.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import tempfile
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp_v2_runtime.idempotency import KeyLedger, MemoryStore, SQLiteStore

from .common import Ratio, interleaved

SUBMIT_GOAL = 0.8
STORE_CALL_GOAL = 0.5
DEFAULT_DSN = "postgresql://acp:acp@127.0.0.1:54329/acp_ledger"
# A message table as an Agent would keep it: message ids are unique within a session, so they are the key.
MESSAGES = (
    "CREATE TABLE IF NOT EXISTS bench_messages "
    "(session_id TEXT, message_id TEXT, content TEXT, PRIMARY KEY (session_id, message_id))"
)
PROMPT = [
    {"type": "text", "text": "Rename load_config to load_settings everywhere."},
    {"type": "resource_link", "uri": "file:///home/user/project/config.py", "name": "config.py"},
]
CONTENT = json.dumps(PROMPT)

Writer = Callable[[str], Callable[[Any, str], None]]
"""Makes the `write` of one session: `write(conn, message_id)` inserts PROMPT under that id."""


def _submit_ratio(name: str, store: Any, writer: Writer, batch: int, rounds: int) -> Ratio:
    """`KeyLedger.submit` with a fresh key against the same call with none."""
    ledger = KeyLedger(store)
    session = f"bench_{uuid.uuid4().hex}"
    write = writer(session)
    keys = iter([str(uuid.uuid4()) for _ in range(batch * rounds)])
    keyed_attempts = iter(range(batch * rounds))
    plain_attempts = iter(range(batch * rounds, 2 * batch * rounds))
    loop = asyncio.new_event_loop()

    async def keyed_batch() -> None:
        submit = ledger.submit
        for key, attempt in zip(itertools.islice(keys, batch), itertools.islice(keyed_attempts, batch), strict=True):
            await submit(session, key, attempt, prompt=PROMPT, write=write)

    async def plain_batch() -> None:
        submit = ledger.submit
        for attempt in itertools.islice(plain_attempts, batch):
            await submit(session, None, attempt, prompt=PROMPT, write=write)

    try:
        ours, reference = interleaved(
            lambda: loop.run_until_complete(keyed_batch()),
            lambda: loop.run_until_complete(plain_batch()),
            rounds=rounds,
        )
    finally:
        loop.close()
    where = "in a worker thread" if getattr(store, "blocking", True) else "inline"
    line = (
        f"ledger {name}: KeyLedger.submit with a key vs without (same prompt of text + resource link, same write, "
        f"store {where}), prompts/s"
    )
    return Ratio(line, batch / ours, batch / reference, "prompts/s", SUBMIT_GOAL, True)


def _store_call_ratio(name: str, store: Any, plain_insert: Any, writer: Writer, batch: int, rounds: int) -> Ratio:
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
    line = f"ledger {name} (secondary): bare store call claim_record vs a plain insert of the same message, ops/s"
    return Ratio(line, batch / ours, batch / reference, "ops/s", STORE_CALL_GOAL, True)


def _memory() -> list[Ratio]:
    messages: dict[tuple[str, str], object] = {}
    lock = threading.Lock()  # the plain insert takes a lock as the store does, so both are thread-safe

    def plain_insert(session: str, message_id: str) -> None:
        with lock:
            messages[(session, message_id)] = PROMPT

    def writer(session: str) -> Callable[[Any, str], None]:
        def write(_conn: Any, message_id: str) -> None:
            messages[(session, message_id)] = PROMPT

        return write

    return [
        _submit_ratio("memory", MemoryStore(), writer, 200, 301),
        _store_call_ratio("memory", MemoryStore(), plain_insert, writer, 200, 301),
    ]


def _sql(name: str, make_store: Callable[[], Any], placeholder: str, batch: int, rounds: int) -> list[Ratio]:
    """A SQL store's lines; every `write` and plain insert puts PROMPT as JSON text into the same message table."""
    sql = f"INSERT INTO bench_messages VALUES ({placeholder}, {placeholder}, {placeholder})"

    def writer(session: str) -> Callable[[Any, str], None]:
        def write(conn: Any, message_id: str) -> None:
            conn.execute(sql, (session, message_id, json.dumps(PROMPT)))

        return write

    results = []
    store = make_store()
    try:
        results.append(_submit_ratio(name, store, writer, batch, rounds))
    finally:
        store.close()
    store = make_store()

    def plain_insert(session: str, message_id: str) -> None:
        with store.transaction() as conn:
            conn.execute(sql, (session, message_id, CONTENT))

    def constant_writer(session: str) -> Callable[[Any, str], None]:
        def write(conn: Any, message_id: str) -> None:
            conn.execute(sql, (session, message_id, CONTENT))

        return write

    try:
        results.append(_store_call_ratio(name, store, plain_insert, constant_writer, batch, rounds))
    finally:
        store.close()
    return results


def _sqlite(tmp: str) -> list[Ratio]:
    return _sql(
        "sqlite", lambda: SQLiteStore(Path(tmp) / "bench.db", setup=lambda c: c.execute(MESSAGES)), "?", 40, 151
    )


def _postgres() -> list[Ratio]:
    try:
        from acp_v2_runtime.idempotency.postgres import PostgresStore

        dsn = os.environ.get("ACP_TEST_POSTGRES_DSN", DEFAULT_DSN)
        PostgresStore(dsn, setup=lambda c: c.execute(MESSAGES)).close()
    except Exception:
        return []  # no server reachable: PostgreSQL is left out, as the module docstring says
    return _sql("postgresql", lambda: PostgresStore(dsn), "%s", 20, 101)


def run() -> list[Ratio]:
    with tempfile.TemporaryDirectory() as tmp:
        results = [*_memory(), *_sqlite(tmp)]
    return [*results, *_postgres()]
