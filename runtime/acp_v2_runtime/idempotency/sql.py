"""What the SQL stores share: the key table's name, and the operations whose SQL differs only in placeholders.

A subclass sets `PH` (its driver's parameter placeholder), `LOCK_ROW` (how it locks a row it reads inside a
transaction) and `FREE_LEASE` (a lease that has always run out, for a row with no owner), and provides
`connection()`, `transaction()`, and the `_all` / `_all_lock` / `_local` bookkeeping of per-thread connections.
"""

from __future__ import annotations

import threading
from typing import Any

from .store import ClaimResult, RecordResult, Write

TABLE = "acp_idempotency_keys"
WITHDRAWALS_COLUMN = "withdrawals INTEGER NOT NULL DEFAULT 0"
"""How many times a key's prompt was withdrawn (see `store`); added to a table made by an earlier version."""


class SqlStore:
    """Base of SQLiteStore and PostgresStore."""

    PH = "?"
    LOCK_ROW = ""
    FREE_LEASE = "0"
    _all: list[Any]
    _all_lock: threading.Lock
    _local: threading.local

    def connection(self) -> Any:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def transaction(self) -> Any:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def record(
        self,
        session_id: str,
        digest: str,
        owner: str,
        message_id: str,
        write: Write | None,
        seen: int | None = None,
    ) -> RecordResult:
        ph = self.PH
        where = f"WHERE session_id = {ph} AND key_digest = {ph}"
        key = (session_id, bytes.fromhex(digest))
        with self.transaction() as conn:
            row = conn.execute(
                f"SELECT state, owner, message_id, withdrawals FROM {TABLE} {where}" + self.LOCK_ROW, key
            ).fetchone()
            if row is not None and row[0] == "recorded":
                return RecordResult(False, row[2])
            if row is None or row[1] != owner:
                return RecordResult(False, None)
            if seen is not None and row[3] > seen:  # withdrawn since the claimer first saw the key: give it back
                conn.execute(f"UPDATE {TABLE} SET owner = NULL, lease_until = {self.FREE_LEASE} {where}", key)
                return RecordResult(False, None, withdrawn=True)
            if write is not None:
                write(conn, message_id)  # in the same transaction: the message and its key commit together
            conn.execute(
                f"UPDATE {TABLE} SET state = 'recorded', owner = NULL, lease_until = NULL, message_id = {ph} {where}",
                (message_id, *key),
            )
            return RecordResult(True, message_id)

    def release(self, session_id: str, digest: str, owner: str) -> None:
        ph = self.PH
        mine = f"WHERE session_id = {ph} AND key_digest = {ph} AND state = 'pending' AND owner = {ph}"
        key = (session_id, bytes.fromhex(digest), owner)
        with self.transaction() as conn:
            # A row that counts withdrawals stays, free, so that the count outlives the claim.
            conn.execute(f"DELETE FROM {TABLE} {mine} AND withdrawals = 0", key)
            conn.execute(f"UPDATE {TABLE} SET owner = NULL, lease_until = {self.FREE_LEASE} {mine}", key)

    def withdraw(self, session_id: str, digest: str, owner: str) -> ClaimResult:
        ph = self.PH
        key = (session_id, bytes.fromhex(digest))
        with self.transaction() as conn:
            # One statement, atomic per row: a missing row becomes a free one that counts the withdrawal (for
            # attempts that reach the store later); a pending one counts it and, if the claim is ours, is freed;
            # a recorded one is left alone (the WHERE refuses the update), and its messageId answers.
            row = conn.execute(
                f"INSERT INTO {TABLE} AS k (session_id, key_digest, state, lease_until, withdrawals) "
                f"VALUES ({ph}, {ph}, 'pending', {self.FREE_LEASE}, 1) ON CONFLICT (session_id, key_digest) "
                "DO UPDATE SET withdrawals = k.withdrawals + 1, "
                f"lease_until = CASE WHEN k.owner = {ph} THEN {self.FREE_LEASE} ELSE k.lease_until END, "
                f"owner = CASE WHEN k.owner = {ph} THEN NULL ELSE k.owner END "
                "WHERE k.state = 'pending' RETURNING withdrawals",
                (*key, owner, owner),
            ).fetchone()
            if row is not None:
                return ClaimResult("withdrawn", None, None, row[0])
            message_id, fingerprint, count = conn.execute(
                f"SELECT message_id, fingerprint, withdrawals FROM {TABLE} "
                f"WHERE session_id = {ph} AND key_digest = {ph}",
                key,
            ).fetchone()
            return ClaimResult("recorded", message_id, fingerprint, count)

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
