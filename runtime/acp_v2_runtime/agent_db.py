"""The reference Agent's database: one SQLite file for sessions, messages and keys, and the check that it is ours.

A path that does not exist yet becomes a new database, built under a temporary name and linked into place in
one step, so two Agents starting at once never see a half-made file (and the temporary files of an Agent killed
meanwhile are removed by the next one). An existing file is used only when it is
an SQLite database that carries this Agent's application id; an empty file, a corrupted one, or another
program's database is refused with `DatabaseRefused`, which says why in one line, before anything is written.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import sqlite3
import time
from pathlib import Path

from .idempotency import SQLiteStore
from .idempotency.sql import TABLE as KEY_TABLE

# SQLite's `PRAGMA application_id` marks a file as this Agent's ("ACP2" in ASCII); 0 means "no application".
APPLICATION_ID = 0x41435032
_HEADER = b"SQLite format 3\x00"
TABLES = """
CREATE TABLE IF NOT EXISTS ref_sessions (
    session_id TEXT PRIMARY KEY, cwd TEXT NOT NULL, title TEXT, updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS ref_messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, message_id TEXT NOT NULL,
    role TEXT NOT NULL, content TEXT NOT NULL
);
"""


# Every table an Agent database holds: its own two, the key ledger's, and SQLite's AUTOINCREMENT bookkeeping.
_OURS = {"ref_sessions", "ref_messages", KEY_TABLE, "sqlite_sequence"}


class DatabaseRefused(Exception):
    """The database file cannot be used; the message is one line for the user."""


def _create_tables(conn: sqlite3.Connection) -> None:
    for statement in TABLES.split(";"):
        if statement.strip():
            conn.execute(statement)  # not executescript(), which would commit the open transaction


def _mark(conn: sqlite3.Connection) -> None:
    _create_tables(conn)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")


def _temporary_files(temporary: Path) -> list[Path]:
    return [temporary, *(temporary.with_name(temporary.name + suffix) for suffix in ("-wal", "-shm"))]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, under another user
    return True


def _remove_leftovers(path: Path) -> None:
    """Remove what an Agent killed while creating this database left behind (its process is gone)."""
    prefix = f".{path.name}.new-"
    for candidate in path.parent.glob(f"{glob.escape(prefix)}*"):
        pid = candidate.name[len(prefix) :].split("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            candidate.unlink(missing_ok=True)


def _create(path: Path, lease: float) -> None:
    """Make a new database at `path` unless a file appears there first (then the caller checks that one)."""
    _remove_leftovers(path)
    temporary = path.with_name(f".{path.name}.new-{os.getpid()}")
    try:
        SQLiteStore(temporary, lease_seconds=lease, setup=_mark).close()
        with contextlib.suppress(FileExistsError):
            os.link(temporary, path)  # atomic, and it never replaces a file another process made meanwhile
    finally:
        for leftover in _temporary_files(temporary):
            leftover.unlink(missing_ok=True)


def _check(path: Path) -> None:
    """Raise DatabaseRefused unless `path` is a database this Agent made."""
    if not path.is_file():
        raise DatabaseRefused("not a regular file")
    with path.open("rb") as stream:
        header = stream.read(len(_HEADER))
    if not header:
        raise DatabaseRefused("the file is empty, so it is not an Agent database (remove it to start afresh)")
    if header != _HEADER:
        raise DatabaseRefused("not an SQLite database")
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)  # read-only: never checkpoints
        try:
            (application_id,) = conn.execute("PRAGMA application_id").fetchone()
            (verdict,) = conn.execute("PRAGMA quick_check").fetchone()
            tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise DatabaseRefused(f"the database cannot be read ({exc})") from None
    if verdict != "ok":
        raise DatabaseRefused("the database is corrupted")
    if application_id == 0 and tables and tables <= _OURS:
        return  # made by an Agent from before the mark existed; the store's setup stamps it below
    if application_id != APPLICATION_ID:
        raise DatabaseRefused("an SQLite database of another program, not of this Agent")


def insert_user_message(conn: sqlite3.Connection, session_id: str, message_id: str, prompt: object) -> None:
    """Insert a user message and mark its session as updated, inside the caller's transaction."""
    conn.execute(
        "INSERT INTO ref_messages (session_id, message_id, role, content) VALUES (?, ?, 'user', ?)",
        (session_id, message_id, json.dumps(prompt, allow_nan=False)),
    )
    conn.execute("UPDATE ref_sessions SET updated_at = ? WHERE session_id = ?", (time.time(), session_id))


def open_store(path: str | Path, *, lease: float, busy_timeout: float = 30.0) -> SQLiteStore:
    """The key store over the Agent's database at `path`, created when missing; DatabaseRefused otherwise.

    `busy_timeout`: how long each connection waits for a lock another process holds (seconds)."""
    path = Path(path)
    try:
        if not path.exists() and not path.is_symlink():
            _create(path, lease)
        _check(path)
        return SQLiteStore(path, lease_seconds=lease, busy_timeout_seconds=busy_timeout, setup=_mark)
    except OSError as exc:
        raise DatabaseRefused(exc.strerror or str(exc)) from None
    except sqlite3.Error as exc:
        raise DatabaseRefused(f"the database cannot be used ({exc})") from None
