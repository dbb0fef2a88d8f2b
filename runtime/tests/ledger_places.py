"""Places for ledger tests: one store kind each, with a messages table written in the store's transaction.

A SQLite place is a fresh file; a PostgreSQL place is a schema of its own in the test database (dropped at the
end), so other tests running at the same time never see its keys, its rows or the locks a test takes on them.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

MESSAGES = "CREATE TABLE IF NOT EXISTS ledger_test_messages (session_id TEXT NOT NULL, message_id TEXT NOT NULL)"


class Place:
    """One shared store location. `store()` opens another store on it (another Agent's view); `write` inserts a
    message row; `messages(session)` counts the rows committed for a session."""

    def __init__(self, kind: str, make: Callable[..., Any], count: Callable[[str], int], where: object) -> None:
        self.kind = kind
        self._make = make
        self._count = count
        self.where = where  # the SQLite path or the PostgreSQL DSN (with its schema), for tests that lock it
        self.opened: list[Any] = []
        self.memory: list[tuple[str, str]] = []
        self._memory_lock = threading.Lock()

    def store(self, **options: Any) -> Any:
        store = self._make(**options)
        self.opened.append(store)
        return store

    def session(self) -> str:
        return f"sess_{uuid.uuid4().hex}"

    def write(self, conn: Any, message_id: str) -> None:
        """A `write` for the ledger: the message row in the store's transaction (a list for the memory store)."""
        if conn is None:
            with self._memory_lock:
                self.memory.append(("?", message_id))
            return
        conn.execute(
            "INSERT INTO ledger_test_messages (session_id, message_id) VALUES ("
            + ("?, ?" if self.kind == "sqlite" else "%s, %s")
            + ")",
            ("?", message_id),
        )

    def writer(self, session_id: str) -> Callable[[Any, str], None]:
        """A `write` that files the row under `session_id`."""

        def write(conn: Any, message_id: str) -> None:
            if conn is None:
                with self._memory_lock:
                    self.memory.append((session_id, message_id))
                return
            ph = "?" if self.kind == "sqlite" else "%s"
            conn.execute(
                f"INSERT INTO ledger_test_messages (session_id, message_id) VALUES ({ph}, {ph})",
                (session_id, message_id),
            )

        return write

    def messages(self, session_id: str | None = None) -> int:
        """How many messages were committed: in all, or those a `writer(session_id)` wrote."""
        return self._count(session_id)

    def message_ids(self) -> dict[str, list[str]]:
        """Every committed message id, by the tag its writer filed it under."""
        rows: list[tuple[str, str]]
        if self.kind == "memory":
            with self._memory_lock:
                rows = list(self.memory)
        elif self.kind == "sqlite":
            import sqlite3

            with sqlite3.connect(self.where) as conn:
                rows = conn.execute("SELECT session_id, message_id FROM ledger_test_messages").fetchall()
        else:
            import psycopg

            with psycopg.connect(self.where, autocommit=True) as conn:
                rows = conn.execute("SELECT session_id, message_id FROM ledger_test_messages").fetchall()
        found: dict[str, list[str]] = {}
        for tag, message_id in rows:
            found.setdefault(tag, []).append(message_id)
        return found

    def close(self) -> None:
        for store in self.opened:
            store.close()


class Counted:
    """A store seen through a proxy that counts the calls made to each of its methods (`calls["claim"]`)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.calls: dict[str, int] = {}

    dead = False  # a crashed Agent: every call fails, as its process is gone

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._store, name)
        if not callable(value) or name.startswith("_") or name in ("close", "connection", "transaction"):
            return value

        def counted(*args: Any, **kwargs: Any) -> Any:
            if self.dead:
                raise ConnectionError("the Agent's process is gone")
            try:
                return value(*args, **kwargs)
            finally:
                self.calls[name] = self.calls.get(name, 0) + 1  # counted once the call has ended

        return counted


def _sqlite_place(path: Path) -> Place:
    import sqlite3

    from acp_v2_runtime.idempotency import SQLiteStore

    def make(**options: Any) -> Any:
        return SQLiteStore(path, setup=lambda c: c.execute(MESSAGES), **options)

    def count(session_id: str | None) -> int:
        with sqlite3.connect(path) as conn:
            if session_id is None:
                return conn.execute("SELECT count(*) FROM ledger_test_messages").fetchone()[0]
            query = "SELECT count(*) FROM ledger_test_messages WHERE session_id = ?"
            return conn.execute(query, (session_id,)).fetchone()[0]

    return Place("sqlite", make, count, path)


def _postgres_place(dsn: str) -> tuple[Place, Callable[[], None]]:
    import psycopg

    from acp_v2_runtime.idempotency.postgres import PostgresStore

    schema = f"ledger_test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    params = psycopg.conninfo.conninfo_to_dict(dsn)
    params["options"] = f"{params.get('options', '')} -c search_path={schema}".strip()
    local = psycopg.conninfo.make_conninfo(**params)

    def make(**options: Any) -> Any:
        return PostgresStore(local, setup=lambda c: c.execute(MESSAGES), **options)

    def count(session_id: str | None) -> int:
        with psycopg.connect(local, autocommit=True) as conn:
            if session_id is None:
                return conn.execute("SELECT count(*) FROM ledger_test_messages").fetchone()[0]
            query = "SELECT count(*) FROM ledger_test_messages WHERE session_id = %s"
            return conn.execute(query, (session_id,)).fetchone()[0]

    def drop() -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")

    return Place("postgres", make, count, local), drop


def _memory_place() -> Place:
    from acp_v2_runtime.idempotency import MemoryStore

    shared: list[Any] = []

    def make(**options: Any) -> Any:
        if not shared:
            shared.append(MemoryStore(**options))
        return shared[0]

    place: Place

    def count(session_id: str | None) -> int:
        return sum(1 for tag, _ in place.memory if session_id is None or tag == session_id)

    place = Place("memory", make, count, None)
    return place


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def place_factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Place]]:
    """Makes places of one store kind (each test run gets its own file or schema)."""
    places: list[Place] = []
    drops: list[Callable[[], None]] = []

    def make() -> Place:
        if request.param == "memory":
            place = _memory_place()
        elif request.param == "sqlite":
            place = _sqlite_place(tmp_path / f"ledger-{len(places)}.db")
        else:
            place, drop = _postgres_place(request.getfixturevalue("pg_dsn"))
            drops.append(drop)
        places.append(place)
        return place

    yield make
    for place in places:
        place.close()
    for drop in drops:
        drop()
