"""The store the Agents of a history share, as the kit runs it: what `{db}` becomes, and the store's faults.

- SQLite (the default): `{db}` is a file in the schedule's own directory. A stall is the kit holding the file's
  write lock (`BEGIN EXCLUSIVE`) for a while, as a long transaction of another program would; there is no
  restart of a file.
- PostgreSQL (`--postgres URL`): each schedule gets a schema of its own (the URL the Agents get sets its
  `search_path`), and the Agents reach the server through a relay of the kit's on loopback. A stall freezes the
  relay (bytes are held, none lost, as a frozen server or network does); a restart drops every connection through
  it, which is what a server restart does to its clients.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

_CHUNK = 64 * 1024


class SqliteStore:
    """One SQLite file per schedule; a stall holds its write lock."""

    kind = "sqlite"
    can_stall, can_restart = True, False

    def __init__(self) -> None:
        self.path: Path | None = None
        self.ending = asyncio.Event()

    async def begin(self, workdir: str) -> str:
        """A fresh store for one schedule; what `{db}` becomes."""
        self.path = Path(workdir) / "history.db"
        return str(self.path)

    async def stall(self, seconds: float) -> None:
        """Hold the write lock for `seconds` (from when it was taken); nothing when no Agent made the file yet."""
        self.ending.clear()
        if self.path is None or not self.path.exists():
            await _sleep(seconds, self.ending)
            return

        def lock() -> sqlite3.Connection:
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            conn.execute("BEGIN EXCLUSIVE")
            return conn

        conn = await asyncio.to_thread(lock)
        try:
            await _sleep(seconds, self.ending)
        finally:
            await asyncio.to_thread(lambda: (conn.execute("ROLLBACK"), conn.close()))

    def end_stall(self) -> None:
        """End the stall under way now (the lock is given back by the stall itself)."""
        self.ending.set()

    async def restart(self) -> None:
        raise NotImplementedError("a file has no connections to drop")

    async def end(self) -> None:
        self.path = None

    async def close(self) -> None:
        pass


class PostgresStore:
    """A schema per schedule on a server the caller names, reached through a relay that can freeze or drop."""

    kind = "postgresql"
    can_stall, can_restart = True, True

    def __init__(self, url: str) -> None:
        self.url = url
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 5432
        self.schema: str | None = None
        self.flowing = asyncio.Event()
        self.flowing.set()
        self.ending = asyncio.Event()
        self.links: set[asyncio.StreamWriter] = set()
        self.server: asyncio.AbstractServer | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.port)
        except OSError:
            writer.close()
            return
        self.links.update((writer, up_writer))
        pumps = [asyncio.create_task(self._pump(reader, up_writer)), asyncio.create_task(self._pump(up_reader, writer))]
        await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        for pump in pumps:
            pump.cancel()
        for end in (writer, up_writer):
            self.links.discard(end)
            end.close()

    async def _pump(self, source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while chunk := await source.read(_CHUNK):
                await self.flowing.wait()  # a stall holds the bytes here, in both directions
                sink.write(chunk)
                await sink.drain()

    async def begin(self, workdir: str) -> str:
        import psycopg  # the runtime's `postgresql` extra

        if self.server is None:
            self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        relay_port = self.server.sockets[0].getsockname()[1]
        self.schema = f"history_{uuid.uuid4().hex[:12]}"
        await asyncio.to_thread(_execute, self.url, f"CREATE SCHEMA {self.schema}")
        parts = urlsplit(self.url)
        auth = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
        query = [(k, v) for k, v in parse_qsl(parts.query) if k != "options"]
        query.append(("options", f"-c search_path={self.schema}"))
        del psycopg
        return urlunsplit(
            (parts.scheme, f"{auth}127.0.0.1:{relay_port}", parts.path, urlencode(query, quote_via=quote), "")
        )

    async def stall(self, seconds: float) -> None:
        self.flowing.clear()
        self.ending.clear()
        try:
            await _sleep(seconds, self.ending)
        finally:
            self.flowing.set()

    def end_stall(self) -> None:
        """End the stall under way now."""
        self.ending.set()

    async def restart(self) -> None:
        for end in list(self.links):
            with contextlib.suppress(Exception):
                end.transport.abort()
        self.links.clear()

    async def end(self) -> None:
        self.flowing.set()
        if self.schema is not None:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(_execute, self.url, f"DROP SCHEMA {self.schema} CASCADE")
            self.schema = None

    async def close(self) -> None:
        await self.restart()
        if self.server is not None:
            self.server.close()
            self.server = None


async def _sleep(seconds: float, ending: asyncio.Event) -> None:
    """Sleep `seconds`, or until `ending` is set."""
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(ending.wait(), seconds)


def _execute(url: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=10) as conn:
        conn.execute(statement)


Store = SqliteStore | PostgresStore


def open_store(postgres: str | None) -> Any:
    """The store for a history run: PostgreSQL at `postgres` when given, else SQLite files."""
    return PostgresStore(postgres) if postgres else SqliteStore()
