"""The reference Agent's calls to its database, each in bounded time, and the bounds themselves.

On SQLite a call that finds the file locked by another process is tried again, for at most LOCK_WAIT_SECONDS; on a
database server (`--db postgresql://...`) it runs in a worker thread and is waited for at most STORE_WAIT_SECONDS.
Either way the request then gets -32603 (`RpcError`), and the connection is never blocked meanwhile.

The bounds are read each time they apply, from this module, so a test or a planted Agent shortens them here
(`bounds.STORE_WAIT_SECONDS = 0.5`) before the Agent is made.
"""

from __future__ import annotations

import asyncio
import inspect
import sqlite3
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from acp_v2_schema.protocol import KnownErrorCode as Code

from ..idempotency import KeyLedger
from ..idempotency.calls import CommitGate, run_gated
from .storage import is_url, open_store, sql

T = TypeVar("T")

# How long a store call waits for a database that another process has locked before the request gets -32603, which
# the spec gives to a store that is briefly unavailable. The wait never blocks the connection: each try fails at
# once (SQLite's busy timeout is 0 on this connection) and the next is awaited, so other lines are served meanwhile.
LOCK_WAIT_SECONDS = 2.0
_FIRST_RETRY_SECONDS = 0.005
_LAST_RETRY_SECONDS = 0.05
# How long the Agent's own call to a database server (`--db postgresql://...`) may take before its request gets
# -32603 (or its turn ends in error): a server that is slow, frozen or unreachable costs one bounded answer.
STORE_WAIT_SECONDS = 5.0
FINISH_SECONDS = 2 * STORE_WAIT_SECONDS  # at the end of the input, how long a keyed insertion under way may take
STORE_THREADS = 32  # worker threads for a server's calls: those stuck on a frozen server leave others free


class RpcError(Exception):
    """An error answer to a request: `code` (from KnownErrorCode), `message` and `data` go into the response."""

    def __init__(self, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


class StoreCalls:
    """The Agent's database (`store`), its key ledger on that database, and the bounded calls made to them."""

    def __init__(self, db: str, *, lease: float) -> None:
        # A bounded wait at startup; on a server, every call is bounded by STORE_WAIT_SECONDS, the ledger's too.
        self.store = open_store(db, lease=lease, busy_timeout=LOCK_WAIT_SECONDS, server_wait=STORE_WAIT_SECONDS)
        # A database server (`--db postgresql://...`) is reached over the network and shared with other Agents: its
        # calls run in worker threads, each bounded by STORE_WAIT_SECONDS, so a slow or frozen server never holds up
        # the lines that need no store.
        self.remote = is_url(db)
        if not self.remote:
            # From here on, a locked database fails each try at once and `stored` awaits the next, never the loop.
            self.store.connection().execute("PRAGMA busy_timeout = 0")
        # SQLite's calls run on the event loop, as every other write of this Agent does: a transaction on the local
        # file takes microseconds, less than handing it to a worker thread and back.
        self.ledger = KeyLedger(self.store, threaded=self.remote)

    async def stored(self, call: Callable[[], T]) -> T:
        """The Agent's own database work (`call()`, which uses the store's connection), in bounded time.

        SQLite: tried again while another process holds the database lock, for at most LOCK_WAIT_SECONDS. A
        database server: run in a worker thread, waited for at most STORE_WAIT_SECONDS, then RpcError -32603;
        except that a COMMIT already sent by then is waited for, as its outcome is unknown (see CommitGate)."""
        if not self.remote:
            return await self.locked(call)
        # As the ledger does: a write sends COMMIT within 0.6 of the bound and the server refuses one that lands
        # more than 0.3 of it after its transaction began; the gate settles whether a write still running at the
        # bound may commit (then its outcome is the answer) or never will (then -32603 is true).
        gate = CommitGate(time.monotonic() + 0.6 * STORE_WAIT_SECONDS, 0.3 * STORE_WAIT_SECONDS, STORE_WAIT_SECONDS)
        work = asyncio.ensure_future(asyncio.to_thread(run_gated, gate, call, ()))
        work.add_done_callback(lambda done: done.cancelled() or done.exception())  # a late failure is seen
        finished, _ = await asyncio.wait({work}, timeout=STORE_WAIT_SECONDS)
        if not finished:
            if gate.give_up():
                raise RpcError(Code.INTERNAL_ERROR, "Internal error: the database did not answer in time")
            await asyncio.wait({work})  # its COMMIT was sent: the answer is that COMMIT's outcome
        return work.result()

    async def keyed(self, call: Callable[[], Awaitable[T]]) -> T:
        """A ledger call: on SQLite tried again while the file is locked; on a server the ledger bounds each store
        call by the store's answer timeout (STORE_WAIT_SECONDS here) and answers -32603 after it."""
        return await (call() if self.remote else self.locked(call))

    async def locked(self, call: Callable[[], Awaitable[T]] | Callable[[], T]) -> T:
        """`call()` (awaited when it gives an awaitable), tried again while another process holds the SQLite
        file's lock, for at most LOCK_WAIT_SECONDS; then RpcError -32603. Only the waits between tries are awaited,
        so the request stays cancellable and every other line is served meanwhile."""
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        delay = _FIRST_RETRY_SECONDS
        while True:
            try:
                result = call()
                return await result if inspect.isawaitable(result) else result  # type: ignore[no-any-return]
            except sqlite3.OperationalError as exc:
                if not _locked(exc):
                    raise
                if time.monotonic() + delay > deadline:
                    raise RpcError(
                        Code.INTERNAL_ERROR, "Internal error: the database is locked by another process; try again"
                    ) from None
            await asyncio.sleep(delay)
            delay = min(delay * 2, _LAST_RETRY_SECONDS)

    def _read(self, text: str, args: tuple[Any, ...] = ()) -> list[Any]:
        conn = self.store.connection()
        try:
            return list(conn.execute(sql(conn, text), args).fetchall())
        except Exception:
            if not getattr(conn, "broken", False):
                raise
        # The server dropped this connection (a restart): a read can safely go again, on a new one.
        conn = self.store.connection()
        return list(conn.execute(sql(conn, text), args).fetchall())

    def _write(self, text: str, args: tuple[Any, ...]) -> None:
        with self.store.transaction() as conn:
            conn.execute(sql(conn, text), args)


def _locked(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite failed because another connection holds the database lock."""
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11 on
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


def internal_message(exc: BaseException) -> str:
    """The message of a -32603 answer: what kind of failure it was, never data from the request."""
    if isinstance(exc, sqlite3.Error) or type(exc).__module__.startswith("psycopg"):
        return f"Internal error: the database failed ({type(exc).__name__})"
    return "Internal error"
