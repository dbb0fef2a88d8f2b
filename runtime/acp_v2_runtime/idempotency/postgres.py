"""The PostgreSQL store: for Agents on several nodes, the key record lives where the sessions live.

Needs the `postgresql` extra (psycopg 3). A claim is one `INSERT … ON CONFLICT … DO UPDATE … WHERE` statement,
which PostgreSQL applies atomically per row, so concurrent claims on any number of nodes see one winner. Leases
are measured on the database server's clock, so nodes need not agree on the time. `record` locks the row
(`FOR UPDATE`) and runs the caller's `write` in the same transaction.

Every transaction of the store (`transaction()`, and so `insert` and `record`) sends BEGIN and COMMIT (or
ROLLBACK) straight through libpq (psycopg's `pq` layer, whose blocking calls let other threads run); a
`conn.transaction()` inside one makes a savepoint, as inside psycopg's own. `claim_record`, the one store call of
most keyed prompts, opens its transaction with the key's row: a plain `INSERT` (the table's primary key refuses a
second row for the key, and as the transaction's first statement its refusal undoes nothing else), then the
caller's `write`, then the commit. That row is what a key adds to an insertion, so it goes the shortest way: a
statement prepared once per connection, sent with the BEGIN in one round trip (libpq's pipeline mode), with the
digest as raw bytes.
"""

from __future__ import annotations

import math
import select
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from .calls import begin_commit
from .sql import TABLE, WITHDRAWALS_COLUMN, SqlStore
from .store import DEFAULT_LEASE_SECONDS, INSERTED, ClaimResult, Write

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    session_id  TEXT NOT NULL,
    key_digest  BYTEA NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('pending', 'recorded')),
    owner       TEXT,
    lease_until TIMESTAMPTZ,
    fingerprint TEXT,
    message_id  TEXT,
    {WITHDRAWALS_COLUMN},
    PRIMARY KEY (session_id, key_digest)
)
"""
_CLAIM = f"""
INSERT INTO {TABLE} AS k (session_id, key_digest, state, owner, lease_until, fingerprint)
VALUES (%(s)s, %(d)s, 'pending', %(o)s, clock_timestamp() + %(lease)s * interval '1 second', %(f)s)
ON CONFLICT (session_id, key_digest) DO UPDATE
    SET owner = EXCLUDED.owner, lease_until = EXCLUDED.lease_until, fingerprint = EXCLUDED.fingerprint
    WHERE k.state = 'pending'
        AND (k.owner IS NULL OR k.owner = EXCLUDED.owner OR k.lease_until <= clock_timestamp())
RETURNING k.withdrawals
"""
# The key's row of `claim_record`, prepared under this name on each connection (psycopg's own are `_pg3_*`).
_CLAIM_RECORD_NAME = b"acp_claim_record"
_CLAIM_RECORD = (
    f"INSERT INTO {TABLE} (session_id, key_digest, state, fingerprint, message_id) VALUES ($1, $2, 'recorded', $3, $4)"
).encode()
_CLAIM_RECORD_FORMATS = (0, 1, 0, 0)  # the digest as raw bytes (bytea's binary form), the rest as text
_UNIQUE_VIOLATION = b"23505"
_GUARDED_COMMIT = (
    b"SELECT ('the key store transaction outlived its bound at ' || clock_timestamp())::int "
    b"WHERE clock_timestamp() > transaction_timestamp() + %d * interval '1 millisecond'; COMMIT"
)


class PostgresStore(SqlStore):
    """Keys in a PostgreSQL table. Each thread gets its own connection to `dsn`.

    Bounded waits: `connect_timeout_seconds` (libpq's, whole seconds, at least 2), `statement_timeout_seconds` and
    `lock_timeout_seconds` (the server's, set on each connection) end a stalled call with an error, its transaction
    rolled back. A server that stops answering altogether enforces nothing, so the ledger also stops waiting after
    `answer_timeout_seconds` (connect and statement timeouts and a margin, unless given) and answers -32603; the
    transaction it left is then refused at COMMIT (see `calls.CommitGate`).
    """

    PH = "%s"
    LOCK_ROW = " FOR UPDATE"
    FREE_LEASE = "'-infinity'"

    def __init__(
        self,
        dsn: str,
        *,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        setup: Callable[[Any], None] | None = None,
        connect_timeout_seconds: float = 5.0,
        statement_timeout_seconds: float = 10.0,
        lock_timeout_seconds: float = 5.0,
        answer_timeout_seconds: float | None = None,
    ) -> None:
        import psycopg  # the optional extra: imported here so the rest of the package works without it

        self._psycopg = psycopg
        self._pq = psycopg.pq
        self.dsn = dsn
        self.lease_seconds = lease_seconds
        self._connect_timeout = max(2, math.ceil(connect_timeout_seconds))  # libpq takes whole seconds, 2 or more
        self._timeouts = (f"{int(statement_timeout_seconds * 1000)}ms", f"{int(lock_timeout_seconds * 1000)}ms")
        self.answer_timeout_seconds = (
            answer_timeout_seconds
            if answer_timeout_seconds is not None
            else self._connect_timeout + statement_timeout_seconds + 2.0
        )
        self._local = threading.local()
        self._all: list[Any] = []
        self._all_lock = threading.Lock()
        with self.transaction() as conn:
            # Concurrent CREATE TABLE IF NOT EXISTS can still collide in the catalog; a lock serializes it.
            conn.execute("SELECT pg_advisory_xact_lock(4242001)")
            conn.execute(SCHEMA)
            missing = conn.execute(
                "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema() "
                "AND table_name = %s AND column_name = 'withdrawals'",
                (TABLE,),
            ).fetchone()
            if missing is None:  # a table made by an earlier version (altered only then: ALTER locks the table)
                conn.execute(f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS {WITHDRAWALS_COLUMN}")
            if setup is not None:
                setup(conn)

    def __repr__(self) -> str:
        return "PostgresStore()"  # the DSN may hold a password: never show it

    def connection(self) -> Any:
        """This thread's connection (autocommit; transactions are explicit)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None and not conn.closed and self._dropped(conn):
            conn.close()  # the server ended it (a restart): a new one now, rather than a failed call first
        if conn is None or conn.closed:
            conn = self._psycopg.connect(self.dsn, autocommit=True, connect_timeout=self._connect_timeout)
            conn.execute(
                "SELECT set_config('statement_timeout', %s, false), set_config('lock_timeout', %s, false)",
                self._timeouts,
            )
            farewell: list[str] = []  # the server's FATAL notices on this connection: it is about to close it
            conn.add_notice_handler(
                lambda d: farewell.append(d.sqlstate or "") if d.severity_nonlocalized == "FATAL" else None
            )
            self._local.conn = conn
            self._local.farewell = farewell
            self._local.prepared = None  # the connection `claim_record`'s statement is prepared on
            with self._all_lock:
                self._all.append(conn)
        return conn

    def _dropped(self, conn: Any) -> bool:
        """Whether the server has closed this idle connection: its socket has something to read though nothing was
        asked (a restarted server's farewell, or the end of the stream). A zero-time poll, no round trip.

        The farewell is a FATAL error sent while the connection is idle, which libpq hands to the notice handlers
        once the input is parsed (`is_busy`); the end of the stream may only be read later (under load, after the
        next query was sent), so the farewell alone decides."""
        pgconn = conn.pgconn
        if pgconn.transaction_status != self._pq.TransactionStatus.IDLE:
            return False  # in use: its own call reports what happened
        try:
            readable, _, _ = select.select([pgconn.socket], [], [], 0)
            if not readable:
                return False
            pgconn.consume_input()  # reads what arrived; a closed stream raises
            pgconn.is_busy()  # parses it: a FATAL notice reaches the farewell list, a NOTICE leaves it usable
        except Exception:
            return True
        return bool(pgconn.status != self._pq.ConnStatus.OK or self._local.farewell)

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """A transaction on this thread's connection; an exception rolls it back and goes on."""
        conn = self.connection()
        self._idle(conn)
        self._check(conn.pgconn.exec_(b"BEGIN"), conn)
        try:
            yield conn
        except BaseException:
            self._rollback(conn)
            raise
        self._commit(conn)

    def _idle(self, conn: Any) -> None:
        if conn.pgconn.transaction_status != self._pq.TransactionStatus.IDLE:
            raise self._psycopg.ProgrammingError("a transaction is already open on the store's connection")

    def _commit(self, conn: Any) -> None:
        pgconn = conn.pgconn
        if pgconn.transaction_status == self._pq.TransactionStatus.INERROR:
            # A statement failed and its error was caught: COMMIT would only roll back, so say so.
            self._rollback(conn)
            raise self._psycopg.errors.InFailedSqlTransaction("the transaction failed, so it was rolled back")
        try:
            guard = begin_commit()  # raises if the ledger stopped waiting for this call; else it waits for COMMIT
            if guard is None:
                self._check(pgconn.exec_(b"COMMIT"), conn)
                return
            # The server refuses the commit if it comes too long after the transaction began (a server that stalled
            # after this was sent): the cast of that text (not a constant, so never folded ahead) fails only when the
            # WHERE holds, and aborts the transaction.
            self._check(pgconn.exec_(_GUARDED_COMMIT % int(guard * 1000)), conn)
        except BaseException:
            self._rollback(conn)
            raise

    def _rollback(self, conn: Any) -> None:
        pgconn = conn.pgconn
        if pgconn.status == self._pq.ConnStatus.OK and pgconn.transaction_status != self._pq.TransactionStatus.IDLE:
            pgconn.exec_(b"ROLLBACK")  # its own failure would only hide the error that brought us here

    def claim(self, session_id: str, digest: str, owner: str, fingerprint: str | None) -> ClaimResult:
        conn = self.connection()
        params = {
            "s": session_id,
            "d": bytes.fromhex(digest),
            "o": owner,
            "lease": self.lease_seconds,
            "f": fingerprint,
        }
        while True:
            claimed = conn.execute(_CLAIM, params).fetchone()
            if claimed is not None:
                return ClaimResult("claimed", None, fingerprint, claimed[0])
            row = conn.execute(
                f"SELECT state, message_id, fingerprint, withdrawals FROM {TABLE} "
                "WHERE session_id = %s AND key_digest = %s",
                (session_id, bytes.fromhex(digest)),
            ).fetchone()
            if row is None:
                continue  # released between the two statements: try again
            state, message_id, row_fp, count = row
            return ClaimResult("recorded" if state == "recorded" else "busy", message_id, row_fp, count)

    def claim_record(
        self, session_id: str, digest: str, message_id: str, fingerprint: str | None, write: Write | None
    ) -> ClaimResult:
        conn = self.connection()
        pgconn = conn.pgconn
        local = self._local
        if local.prepared is not conn:
            self._check(pgconn.prepare(_CLAIM_RECORD_NAME, _CLAIM_RECORD), conn)
            local.prepared = conn
        encoding = conn.info.encoding
        params = (
            session_id.encode(encoding),
            bytes.fromhex(digest),
            None if fingerprint is None else fingerprint.encode(encoding),
            message_id.encode(encoding),
        )
        self._idle(conn)
        begun, result = self._begin_with(pgconn, conn, params)
        try:
            self._check(begun, conn)
            if result.status != self._pq.ExecStatus.COMMAND_OK:
                if result.error_field(self._pq.DiagnosticField.SQLSTATE) != _UNIQUE_VIOLATION:
                    self._check(result, conn)
                self._rollback(conn)  # nothing else had happened in that transaction
            else:
                if write is not None:
                    write(conn, message_id)  # in the same transaction: the message and its key commit together
                self._commit(conn)
                return INSERTED
        except BaseException:
            self._rollback(conn)
            raise
        row = (
            self.connection()
            .execute(
                f"SELECT state, fingerprint, message_id, withdrawals FROM {TABLE} "
                "WHERE session_id = %s AND key_digest = %s",
                (session_id, bytes.fromhex(digest)),
            )
            .fetchone()
        )
        if row is None:
            return ClaimResult("busy", None, None)  # released in between: the caller's general path retries
        return ClaimResult("recorded" if row[0] == "recorded" else "busy", row[2], row[1], row[3])

    def _begin_with(self, pgconn: Any, conn: Any, params: tuple[bytes | None, ...]) -> tuple[Any, Any]:
        """BEGIN and the key's row in one round trip (libpq's pipeline mode): the results of both."""
        pq = self._pq
        pgconn.enter_pipeline_mode()
        try:
            pgconn.send_query_params(b"BEGIN", None)
            pgconn.send_query_prepared(_CLAIM_RECORD_NAME, params, _CLAIM_RECORD_FORMATS)
            pgconn.pipeline_sync()
            pgconn.flush()
            results = []
            while True:
                while pgconn.is_busy():
                    select.select([pgconn.socket], [], [])  # waits without holding the GIL, as psycopg does
                    pgconn.consume_input()
                result = pgconn.get_result()
                if result is None:
                    continue  # the end of one statement's results
                if result.status == pq.ExecStatus.PIPELINE_SYNC:
                    break
                results.append(result)
        except BaseException:
            conn.close()  # a connection left in the middle of a pipeline is of no further use
            raise
        pgconn.exit_pipeline_mode()
        begun, row = results
        return begun, row

    def _check(self, result: Any, conn: Any) -> None:
        """Raise psycopg's exception for a failed libpq result, as `conn.execute` would."""
        if result.status not in (self._pq.ExecStatus.COMMAND_OK, self._pq.ExecStatus.TUPLES_OK):
            raise self._psycopg.errors.error_from_result(result, encoding=conn.info.encoding)

    def renew(self, session_id: str, digest: str, owner: str) -> bool:
        cur = self.connection().execute(
            f"UPDATE {TABLE} SET lease_until = clock_timestamp() + %s * interval '1 second' "
            "WHERE session_id = %s AND key_digest = %s AND state = 'pending' AND owner = %s",
            (self.lease_seconds, session_id, bytes.fromhex(digest), owner),
        )
        return bool(cur.rowcount)

    def forget_session(self, session_id: str) -> None:
        self.connection().execute(f"DELETE FROM {TABLE} WHERE session_id = %s", (session_id,))
