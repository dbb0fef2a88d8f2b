"""What the SQL stores share: the key table's name, and the operations whose SQL differs only in placeholders.

A subclass sets `PH` (its driver's parameter placeholder) and `LOCK_ROW` (how it locks a row it reads inside a
transaction), and provides `connection()`, `transaction()`, and the `_all` / `_all_lock` / `_local` bookkeeping
of per-thread connections.
"""

from __future__ import annotations

import threading
from typing import Any

from .store import RecordResult, Write

TABLE = "acp_idempotency_keys"


class SqlStore:
    """Base of SQLiteStore and PostgresStore."""

    PH = "?"
    LOCK_ROW = ""
    _all: list[Any]
    _all_lock: threading.Lock
    _local: threading.local

    def connection(self) -> Any:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def transaction(self) -> Any:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def record(self, session_id: str, digest: str, owner: str, message_id: str, write: Write | None) -> RecordResult:
        ph = self.PH
        with self.transaction() as conn:
            row = conn.execute(
                f"SELECT state, owner, message_id FROM {TABLE} WHERE session_id = {ph} AND key_digest = {ph}"
                + self.LOCK_ROW,
                (session_id, bytes.fromhex(digest)),
            ).fetchone()
            if row is not None and row[0] == "recorded":
                return RecordResult(False, row[2])
            if row is None or row[1] != owner:
                return RecordResult(False, None)
            if write is not None:
                write(conn, message_id)  # in the same transaction: the message and its key commit together
            conn.execute(
                f"UPDATE {TABLE} SET state = 'recorded', owner = NULL, lease_until = NULL, message_id = {ph} "
                f"WHERE session_id = {ph} AND key_digest = {ph}",
                (message_id, session_id, bytes.fromhex(digest)),
            )
            return RecordResult(True, message_id)

    def insert(self, message_id: str, write: Write) -> None:
        with self.transaction() as conn:
            write(conn, message_id)

    def lookup(self, session_id: str, digest: str) -> str | None:
        ph = self.PH
        row = (
            self.connection()
            .execute(
                f"SELECT message_id FROM {TABLE} WHERE session_id = {ph} AND key_digest = {ph}",
                (session_id, bytes.fromhex(digest)),
            )
            .fetchone()
        )
        return row[0] if row else None

    def close(self) -> None:
        """Close every connection this store opened, in any thread."""
        with self._all_lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()
