"""The SQLite store: one file, survives restarts, shared safely by every process on one machine.

Each operation is one `BEGIN IMMEDIATE` transaction, which takes the database's write lock before reading, so
two processes can never both see a key as free. Leases use wall-clock time because processes share no other
clock. `record` runs the caller's `write` in the same transaction, so a message and its key are committed
together or not at all: a crash can leave a claim (which expires) but never a message without its key.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from time import monotonic

from .calls import begin_commit
from .sql import TABLE, WITHDRAWALS_COLUMN, SqlStore
from .store import DEFAULT_LEASE_SECONDS, INSERTED, ClaimResult, Write

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    session_id  TEXT NOT NULL,
    key_digest  BLOB NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('pending', 'recorded')),
    owner       TEXT,
    lease_until REAL,
    fingerprint TEXT,
    message_id  TEXT,
    {WITHDRAWALS_COLUMN},
    PRIMARY KEY (session_id, key_digest)
) WITHOUT ROWID
"""


# The statements of a keyed prompt's one-step insert, written out once: a statement built on every call would be a new
# string each time, hashed again to find the prepared statement in the connection's cache.
_CLAIM_RECORD = (
    f"INSERT OR IGNORE INTO {TABLE} (session_id, key_digest, state, fingerprint, message_id) "
    "VALUES (?, ?, 'recorded', ?, ?)"
)
_ROW = f"SELECT state, fingerprint, message_id, withdrawals FROM {TABLE} WHERE session_id = ? AND key_digest = ?"


class SQLiteStore(SqlStore):
    """Keys in a table of one SQLite file (WAL mode). Each thread gets its own connection.

    Bounded waits: `busy_timeout_seconds` is how long a transaction waits for the lock another connection holds
    (SQLite's busy timeout; opening the file waits for nothing else), `statement_timeout_seconds` how long a
    transaction's statements may run before SQLite interrupts them. Either ends in `sqlite3.OperationalError`,
    the transaction rolled back. `answer_timeout_seconds` (their sum and a margin, unless given) is how long the
    ledger waits for one store call before it answers -32603.
    """

    PH = "?"
    LOCK_ROW = ""

    def __init__(
        self,
        path: str | Path,
        *,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        busy_timeout_seconds: float = 10.0,
        statement_timeout_seconds: float = 10.0,
        answer_timeout_seconds: float | None = None,
        clock: Callable[[], float] = time.time,
        setup: Callable[[sqlite3.Connection], None] | None = None,
    ) -> None:
        self.path = str(path)
        self.lease_seconds = lease_seconds
        self._busy_ms = int(busy_timeout_seconds * 1000)
        self.statement_timeout_seconds = statement_timeout_seconds
        self.answer_timeout_seconds = (
            answer_timeout_seconds
            if answer_timeout_seconds is not None
            else busy_timeout_seconds + statement_timeout_seconds + 2.0
        )
        self._clock = clock
        self._setup = setup
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        with self.transaction() as conn:
            conn.execute(SCHEMA)
            columns = {row[1] for row in conn.execute(f"PRAGMA table_info({TABLE})")}
            if "withdrawals" not in columns:  # a table made by an earlier version
                conn.execute(f"ALTER TABLE {TABLE} ADD COLUMN {WITHDRAWALS_COLUMN}")
            if setup is not None:
                setup(conn)

    def __repr__(self) -> str:
        return f"SQLiteStore({Path(self.path).name!r})"

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (autocommit; transactions are explicit)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")  # WAL keeps committed data through a process crash
            # The statement timeout: SQLite calls this every few thousand steps of a statement; non-zero interrupts.
            local = self._local
            local.until = None
            conn.set_progress_handler(lambda: local.until is not None and monotonic() > local.until, 10_000)
            self._local.conn = conn
            with self._all_lock:
                self._all.append(conn)
        return conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that holds the database lock from its first statement."""
        conn = self.connection()
        conn.execute("BEGIN IMMEDIATE")
        local = self._local
        local.until = monotonic() + self.statement_timeout_seconds
        try:
            yield conn
            begin_commit()  # raises if the ledger stopped waiting for this call; else it waits for the COMMIT
        except BaseException:
            local.until = None
            conn.execute("ROLLBACK")
            raise
        local.until = None
        try:
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # a COMMIT that failed can leave the transaction open: nothing of it may stay
                conn.execute("ROLLBACK")
            raise

    def claim(self, session_id: str, digest: str, owner: str, fingerprint: str | None) -> ClaimResult:
        now = self._clock()
        until = now + self.lease_seconds
        with self.transaction() as conn:
            added = conn.execute(
                f"INSERT OR IGNORE INTO {TABLE} (session_id, key_digest, state, owner, lease_until, fingerprint) "
                "VALUES (?, ?, 'pending', ?, ?, ?)",
                (session_id, bytes.fromhex(digest), owner, until, fingerprint),
            ).rowcount
            if added:
                return ClaimResult("claimed", None, fingerprint)
            state, holder, lease_until, row_fp, message_id, count = conn.execute(
                f"SELECT state, owner, lease_until, fingerprint, message_id, withdrawals FROM {TABLE} "
                "WHERE session_id = ? AND key_digest = ?",
                (session_id, bytes.fromhex(digest)),
            ).fetchone()
            if state == "recorded":
                return ClaimResult("recorded", message_id, row_fp, count)
            if holder is None or holder == owner or lease_until <= now:
                conn.execute(
                    f"UPDATE {TABLE} SET owner = ?, lease_until = ?, fingerprint = ? "
                    "WHERE session_id = ? AND key_digest = ?",
                    (owner, until, fingerprint, session_id, bytes.fromhex(digest)),
                )
                return ClaimResult("claimed", None, fingerprint, count)
            return ClaimResult("busy", None, row_fp, count)

    def claim_record(
        self, session_id: str, digest: str, message_id: str, fingerprint: str | None, write: Write | None
    ) -> ClaimResult:
        with self.transaction() as conn:
            added = conn.execute(_CLAIM_RECORD, (session_id, bytes.fromhex(digest), fingerprint, message_id)).rowcount
            if added:
                if write is not None:
                    write(conn, message_id)
                return INSERTED
            state, row_fp, row_mid, count = conn.execute(_ROW, (session_id, bytes.fromhex(digest))).fetchone()
            return ClaimResult("recorded" if state == "recorded" else "busy", row_mid, row_fp, count)

    def renew(self, session_id: str, digest: str, owner: str) -> bool:
        with self.transaction() as conn:
            return bool(
                conn.execute(
                    f"UPDATE {TABLE} SET lease_until = ? "
                    "WHERE session_id = ? AND key_digest = ? AND state = 'pending' AND owner = ?",
                    (self._clock() + self.lease_seconds, session_id, bytes.fromhex(digest), owner),
                ).rowcount
            )

    def forget_session(self, session_id: str) -> None:
        with self.transaction() as conn:
            conn.execute(f"DELETE FROM {TABLE} WHERE session_id = ?", (session_id,))
