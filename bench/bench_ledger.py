"""What an idempotency key costs the Agent, per store: `KeyLedger.submit` with a key against the same call without.

Main lines (goal: at least 0.8): both sides call `KeyLedger.submit` on the same ledger with the same session, the
same prompt (a text block and a resource link), the same `write` and the ledger's default options, awaited one
after another in one event loop; keys are fresh UUID strings made before the clock starts. "Ours" passes a key,
so the ledger checks it, digests it, fingerprints the prompt and records the key with the message in one store
step; the reference passes None, so the ledger only inserts the message. The `write` is the reference Agent's: it
stores the user message (id, role, content) and marks its session as updated. On SQLite it is the Agent's own
function on the Agent's own database; on PostgreSQL the same two statements on tables of the same shape; in memory
a record appended to the session's list. The SQL stores run in a worker thread on both sides (the ledger's
default for blocking stores); the memory store runs inline.

What the key adds, as profiled: the key check, on the SQL stores with its SHA-256 digest (one step: a string
within the generated length limits whose UTF-8 encoding succeeds is a valid key, and those bytes are what is
digested), a digest of the prompt (the SQL stores keep it in the row; the memory store keeps the prompt itself, and
the ledger digests it only when a retry compares), and the key's row. The memory store files its rows under the
checked key itself, as its rows never leave the process: the SHA-256 alone had cost about 0.6 µs of the 1.2 to 1.5
µs a key added, which held this line between 0.79 and 0.87. What is left in memory is about 0.3 to 0.5 µs of CPU
against an unkeyed call of 5 to 6 µs (a good part of which is the random messageId, on both sides): the check and,
the larger part, the row's place in a dict of tens of thousands of keys (cache misses, and the dict's growth),
which no keyed store can skip. On SQLite the row costs a B-tree page more per transaction
(digests are random, so each key lands on its own leaf) and the checkpoints that copy those pages back. On
PostgreSQL it is one statement more in the transaction, a plain INSERT prepared once per connection, but no round
trip more: it goes to the server with the BEGIN (libpq's pipeline mode), so the server's work for the row (a random
leaf of the primary key's B-tree) is most of what it costs. Both sides' transactions send BEGIN and COMMIT the same
way, straight through libpq.

Secondary lines (informational: printed, never a goal): the bare store call the ledger makes for a keyed prompt
(`claim_record`, which inserts the message through `write` and records the key in one transaction) against a
plain insert of the same message in the same kind of transaction, with no ledger around either, on a
one-statement message table; the digests are those of fresh random keys, so they arrive in no order, as real
ones do. Here both sides do little but the insert, so the key's row is about half the work. In memory the plain
insert is one dict assignment under a lock and the keyed call is that same assignment (inside `write`) plus a row
of its own and the call to `write`, so it cannot take much less than twice as long in CPython: that line measures
interpreter overhead, not storage. What a key costs an Agent is the main lines' question; these show where it
goes. A third secondary line runs the main lines' calls on a blocking store that stores nothing, in the same
worker thread: what is left is the ledger's own part of a keyed prompt around the same thread hop. It reads
about 0.87 to 0.89 here (0.82 to 0.83 before the one-step path read the store's answer itself and OpenSSL's SHA-256
gave way to CPython's), so on SQLite the key's row is now the larger part: counted in the write-ahead log, an
unkeyed prompt's transaction writes 3.1 pages and a keyed one 4.9 to 5.1 (the key's leaf, which is a random one,
and now and then the pages a split of it touches), and with the row taken out the SQLite line read 0.90. The
ledger's part is more than its CPU time in a tight loop: between two thread hops its code and data are no longer in
the cache. Most of what is left is the prompt's digest, its canonical JSON above all (with a constant digest in its
place the no-op line read 0.96).

Both sides of every line run in pairs in this process, each pair in an order drawn at random (`paired`). The
memory lines count this process's CPU time: the store runs inline and never waits, and on a shared machine wall
time penalizes the longer side of a pair (a batch that outlasts the scheduler's time slice is preempted far more
often than a shorter one, so the keyed side's median took waits the other's did not: 0.4 to 0.8 by wall time
against 0.83 to 0.86 by CPU time for the same code at the same moment). The SQL lines, whose work waits on a
thread, a file or a server, count wall time.

PostgreSQL is measured when ACP_TEST_POSTGRES_DSN (or the CI default) reaches a server, on tables of a schema made
for the run and dropped after it (the shared server's own tables hold what the tests left), after 25 untimed rounds
of each side; otherwise its lines are left out. Where the system runs the server process of the connection against
the thread that talks to it decides the figure for the whole run: on one processor each transaction is a few
context switches on a warm cache (about 4,900 unkeyed prompts a second here) and the key's row is a third more of
the server's work, read 0.77 to 0.78; on processors of their own each statement waits for the other processor to
wake (about 1,850 a second), read 0.92 to 0.93; left to the system, runs came out anywhere between (0.78 to 0.88).
So both are pinned, and the goal is judged with client and server on processors of their own, the shape of an Agent
and its database server, which do not take turns on one processor (across a network the key's share would be
smaller still); the one-processor figure is printed beside it. With one processor only, or a server whose
processes this one may not place, the line is left to the system's placement, and judged so."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from acp_v2_runtime.idempotency import DEFAULT_LEASE_SECONDS, KeyLedger, MemoryStore, SQLiteStore, key_digest
from acp_v2_runtime.idempotency.store import INSERTED, Write
from acp_v2_runtime.reference_agent.storage import insert_user_message, open_store

from .common import Ratio
from .paired import shuffled_pairs

SUBMIT_GOAL = 0.8
STORE_CALL_GOAL = None  # the bare store-call lines are informational (see the module docstring)
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

Writer = Callable[[str], Write]
"""Makes the `write` of one session (before the clock): `write(conn, message_id)` inserts PROMPT under that id."""


def _submit_ratio(
    name: str,
    store: Any,
    writer: Writer,
    batch: int,
    rounds: int,
    clock: Callable[[], float] = time.perf_counter,
    *,
    write_label: str = "the Agent's write",
    goal: float | None = SUBMIT_GOAL,
    warmup: int = 0,
) -> Ratio:
    """`KeyLedger.submit` with a fresh key against the same call with none (`goal` None: a secondary line), after
    `warmup` untimed rounds of each."""
    ledger = KeyLedger(store)
    session = f"bench_{uuid.uuid4().hex}"
    write = writer(session)
    # Both loops are the same code over (key, attempt) pairs; only the key differs (a fresh UUID string, or None).
    calls = batch * (rounds + warmup)
    keyed_calls = iter([(str(uuid.uuid4()), n) for n in range(calls)])
    plain_calls = iter([(None, n) for n in range(calls, 2 * calls)])
    loop = asyncio.new_event_loop()

    async def keyed_batch() -> None:
        submit = ledger.submit
        for key, attempt in itertools.islice(keyed_calls, batch):
            await submit(session, key, attempt, prompt=PROMPT, write=write)

    async def plain_batch() -> None:
        submit = ledger.submit
        for key, attempt in itertools.islice(plain_calls, batch):
            await submit(session, key, attempt, prompt=PROMPT, write=write)

    try:
        for _ in range(warmup):
            loop.run_until_complete(keyed_batch())
            loop.run_until_complete(plain_batch())
        ours, reference = shuffled_pairs(
            lambda: loop.run_until_complete(keyed_batch()),
            lambda: loop.run_until_complete(plain_batch()),
            rounds=rounds,
            clock=clock,
        )
    finally:
        loop.close()
    where = "in a worker thread" if getattr(store, "blocking", True) else "inline"
    timed = "CPU time" if clock is time.process_time else "wall time"
    kind = "" if goal is not None else " (secondary, informational)"
    line = (
        f"ledger {name}{kind}: KeyLedger.submit with a key vs without (same prompt of text + resource link, "
        f"{write_label}, store {where}; {timed}), prompts/s"
    )
    return Ratio(line, batch / ours, batch / reference, "prompts/s", goal, True)


def _store_call_ratio(
    name: str,
    store: Any,
    plain_insert: Any,
    writer: Writer,
    batch: int,
    rounds: int,
    *,
    where: str,
    clock: Callable[[], float] = time.perf_counter,
) -> Ratio:
    """`plain_insert(session, id)` is a transaction of its own; `writer(session)` makes the `write` that the store
    calls inside its own transaction."""
    session = f"bench_{uuid.uuid4().hex}"
    # Fresh digests (of fresh UUID keys, so in random order, as real ones are) and message ids are made before the
    # clock starts, so both sides time only the store.
    digests = iter([key_digest(str(uuid.uuid4())) for _ in range(batch * rounds)])
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

    ours, reference = shuffled_pairs(keyed, plain, rounds=rounds, clock=clock)
    line = (
        f"ledger {name} (secondary, informational): bare store call claim_record vs a plain insert of the same message "
        f"({where}), ops/s"
    )
    return Ratio(line, batch / ours, batch / reference, "ops/s", STORE_CALL_GOAL, True)


def _memory() -> list[Ratio]:
    messages: dict[tuple[str, str], object] = {}
    lock = threading.Lock()  # the plain insert takes a lock as the store does, so both are thread-safe

    def plain_insert(session: str, message_id: str) -> None:
        with lock:
            messages[(session, message_id)] = PROMPT

    def writer(session: str) -> Write:
        def write(_conn: Any, message_id: str) -> None:
            messages[(session, message_id)] = PROMPT

        return write

    sessions: dict[str, dict[str, Any]] = {}

    def agent_writer(session: str) -> Write:
        state = sessions.setdefault(session, {"updated_at": 0.0, "messages": []})
        history = state["messages"]

        def write(_conn: Any, message_id: str) -> None:
            history.append({"messageId": message_id, "role": "user", "content": PROMPT})
            state["updated_at"] = time.time()

        return write

    return [
        _submit_ratio("memory", MemoryStore(), agent_writer, 200, 301, clock=time.process_time),
        _store_call_ratio(
            "memory",
            MemoryStore(),
            plain_insert,
            writer,
            200,
            301,
            where="one dict entry under a lock",
            clock=time.process_time,
        ),
    ]


def _store_calls(name: str, store: Any, placeholder: str, batch: int, rounds: int) -> Ratio:
    """The bare store-call line of a SQL store, on a one-statement message table."""
    store.connection().execute(MESSAGES)
    sql = f"INSERT INTO bench_messages VALUES ({placeholder}, {placeholder}, {placeholder})"

    def plain_insert(session: str, message_id: str) -> None:
        with store.transaction() as conn:
            conn.execute(sql, (session, message_id, CONTENT))

    def writer(session: str) -> Write:
        def write(conn: Any, message_id: str) -> None:
            conn.execute(sql, (session, message_id, CONTENT))

        return write

    try:
        return _store_call_ratio(
            name, store, plain_insert, writer, batch, rounds, where="a one-statement message table, one transaction"
        )
    finally:
        store.close()


def _sqlite(tmp: str) -> list[Ratio]:
    store = open_store(Path(tmp) / "agent.db", lease=DEFAULT_LEASE_SECONDS)

    def writer(session: str) -> Write:
        with store.transaction() as conn:
            conn.execute("INSERT INTO ref_sessions VALUES (?, '/', NULL, ?)", (session, time.time()))
        return lambda conn, message_id: insert_user_message(conn, session, message_id, PROMPT)

    try:
        submit = _submit_ratio("sqlite", store, writer, 40, 151)
    finally:
        store.close()
    return [submit, _store_calls("sqlite", SQLiteStore(Path(tmp) / "bench.db"), "?", 40, 151)]


# The reference Agent's tables and statements, in PostgreSQL's dialect.
PG_TABLES = (
    "CREATE TABLE IF NOT EXISTS bench_sessions (session_id TEXT PRIMARY KEY, updated_at DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS bench_user_messages (seq BIGSERIAL PRIMARY KEY, session_id TEXT NOT NULL, "
    "message_id TEXT NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL)",
)


def _fresh_schema(dsn: str) -> tuple[str, str]:
    """A new, empty schema on the server of `dsn`: its name, and `dsn` with it first on the search path.

    The server is shared (the tests' keys table holds hundreds of thousands of rows, dead ones among them, and each
    bench run would add its own), so each run gets tables of its own, empty at the start, and drops them at the end:
    the figures then depend on what the run does, not on what the server went through before.
    """
    import psycopg
    from psycopg.conninfo import make_conninfo

    schema = f"bench_{uuid.uuid4().hex}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return schema, make_conninfo(dsn, options=f"-c search_path={schema}")


def _cpus(dsn: str) -> tuple[int, int] | None:
    """Two distinct processors (the client's, the server's) when this process may pin itself and the server's
    processes to them, else None."""
    if not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2:
        return None
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
        try:  # a server run by another user: its processes are not ours to place
            os.sched_setaffinity(backend, os.sched_getaffinity(backend))
        except OSError:
            return None
    usable = sorted(os.sched_getaffinity(0))
    return usable[-1], usable[0]


@contextlib.contextmanager
def _placed(client: int | None, server: int | None) -> Iterator[Callable[[Any], None]]:
    """Run the client (this thread, and the worker threads it starts meanwhile, which inherit its processor) on
    `client`; the function given pins a connection's server process to `server`. Both None: nothing is pinned."""
    before = os.sched_getaffinity(0) if client is not None else None
    if client is not None:
        os.sched_setaffinity(0, {client})

    def pin(conn: Any) -> None:
        if server is not None:
            os.sched_setaffinity(conn.execute("SELECT pg_backend_pid()").fetchone()[0], {server})

    try:
        yield pin
    finally:
        if before is not None:
            os.sched_setaffinity(0, before)


def _postgres() -> list[Ratio]:
    server = os.environ.get("ACP_TEST_POSTGRES_DSN", DEFAULT_DSN)
    try:
        import psycopg
        from acp_v2_runtime.idempotency.postgres import PostgresStore

        schema, dsn = _fresh_schema(server)
    except Exception:
        return []  # no server reachable: PostgreSQL is left out, as the module docstring says

    class PinnedStore(PostgresStore):
        """The store, each new connection's server process pinned as `pin` says."""

        def __init__(self, pin: Callable[[Any], None]) -> None:
            self._pin, self._pinned = pin, set()
            super().__init__(dsn, setup=lambda c: [c.execute(table) for table in PG_TABLES])

        def connection(self) -> Any:
            conn = super().connection()
            # by id: the store keeps every connection it opened until it closes, so no id is reused meanwhile
            if id(conn) not in self._pinned:
                self._pinned.add(id(conn))
                self._pin(conn)
            return conn

    def submit(place: str, cpus: tuple[int | None, int | None], goal: float | None) -> Ratio:
        with _placed(*cpus) as pin:
            store = PinnedStore(pin)

            def writer(session: str) -> Write:
                store.connection().execute("INSERT INTO bench_sessions VALUES (%s, %s)", (session, time.time()))

                def write(conn: Any, message_id: str) -> None:
                    conn.execute(
                        "INSERT INTO bench_user_messages (session_id, message_id, role, content) "
                        "VALUES (%s, %s, 'user', %s)",
                        (session, message_id, json.dumps(PROMPT)),
                    )
                    conn.execute(
                        "UPDATE bench_sessions SET updated_at = %s WHERE session_id = %s", (time.time(), session)
                    )

                return write

            try:
                return _submit_ratio(f"postgresql, {place}", store, writer, 20, 101, warmup=25, goal=goal)
            finally:
                store.close()

    try:
        cpus = _cpus(dsn)
        if cpus is None:  # one processor, or a server whose processes cannot be placed: left to the system
            return [submit("placed by the system", (None, None), SUBMIT_GOAL)]
        client, other = cpus
        apart = "client and server on processors of their own"
        lines = [
            submit(apart, (client, other), SUBMIT_GOAL),
            submit("client and server on one processor", (client, client), None),
        ]
        with _placed(client, other) as pin:
            lines.append(_store_calls(f"postgresql, {apart}", PinnedStore(pin), "%s", 20, 101))
        return lines
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


class _NoopStore:
    """A blocking store that stores nothing: what is left of a keyed `submit` is the ledger's own part (the key's
    check and digest, the prompt's digest, the in-process bookkeeping of a pending key) around the same thread hop."""

    blocking = True
    lease_seconds = DEFAULT_LEASE_SECONDS

    def claim_record(
        self, session_id: str, digest: str, message_id: str, fingerprint: object, write: Write | None
    ) -> Any:
        return INSERTED

    def insert(self, message_id: str, write: Write) -> None:
        return None


def _ledger_alone() -> Ratio:
    """The SQL lines' ledger part alone (informational): the same two calls on a store that does nothing."""
    return _submit_ratio(
        "no-op store",
        _NoopStore(),
        lambda session: lambda conn, message_id: None,
        40,
        151,
        write_label="a write that does nothing",
        goal=None,
    )


def run() -> list[Ratio]:
    with tempfile.TemporaryDirectory() as tmp:
        results = [*_memory(), *_sqlite(tmp)]
    return [*results, _ledger_alone(), *_postgres()]
