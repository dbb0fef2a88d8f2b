"""The reference Agent's database at startup: a missing path is created, anything that is not the Agent's own
database is refused with one line on stderr and exit status 2, no traceback, and the file left as it was."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

from agent_client import INITIALIZE, AgentProcess, agent_command, environment


def start(db, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        agent_command(db), input=stdin, capture_output=True, text=True, env=environment(), timeout=60, check=False
    )


def assert_refused(db, reason: str) -> None:
    before = db.read_bytes() if db.is_file() else None
    done = start(db)
    assert done.returncode == 2, done
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and reason in done.stderr, done.stderr
    assert (db.read_bytes() if db.is_file() else None) == before  # nothing was written


def agent_database(tmp_path):
    db = tmp_path / "agent.db"
    agent = AgentProcess(db)
    assert "result" in agent.request("initialize", INITIALIZE)
    assert "result" in agent.request("session/new", {"cwd": "/", "mcpServers": []})
    assert agent.close() == 0
    return db


def test_missing_database_path_is_created(tmp_path):
    db = tmp_path / "new.db"
    done = start(db, '{"jsonrpc":"2.0","id":1,"method":"session/list"}\n')
    assert done.returncode == 0 and '"sessions":[]' in done.stdout, done
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.db"]  # no temporary file left behind


def test_empty_database_file_is_refused_not_silently_reused(tmp_path):
    db = tmp_path / "agent.db"
    db.write_bytes(b"")
    assert_refused(db, "empty")


def test_corrupted_database_is_refused_without_a_traceback(tmp_path):
    db = agent_database(tmp_path)
    data = bytearray(db.read_bytes())
    data[100:4096] = b"\xa5" * (4096 - 100)  # keep the 100-byte header, break the first page
    db.write_bytes(bytes(data))
    assert_refused(db, "cannot use --db")


def test_garbage_file_is_refused(tmp_path):
    db = tmp_path / "agent.db"
    db.write_bytes(b"this is a text file, not a database\n" * 100)
    assert_refused(db, "not an SQLite database")


def test_another_programs_sqlite_file_is_refused(tmp_path):
    db = tmp_path / "other.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    assert_refused(db, "another program")


def test_directory_as_database_is_refused(tmp_path):
    assert_refused(tmp_path, "not a regular file")


def test_database_in_a_missing_directory_is_refused(tmp_path):
    done = start(tmp_path / "no" / "such" / "agent.db")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_agents_own_database_is_reused(tmp_path):
    db = agent_database(tmp_path)
    for _ in range(2):
        done = start(db, '{"jsonrpc":"2.0","id":1,"method":"session/list"}\n')
        assert done.returncode == 0 and done.stdout.count('"sessionId"') == 1, done


def test_database_of_an_agent_from_before_the_mark_is_accepted_and_marked(tmp_path):
    """A file with only the Agent's tables and no application id was made by an earlier reference Agent."""
    db = agent_database(tmp_path)
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA application_id = 0")
    done = start(db, '{"jsonrpc":"2.0","id":1,"method":"session/list"}\n')
    assert done.returncode == 0 and done.stdout.count('"sessionId"') == 1, done
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA application_id").fetchone()[0] != 0


def test_sqlite_file_with_our_tables_and_others_is_refused(tmp_path):
    db = agent_database(tmp_path)
    with sqlite3.connect(db) as conn:  # left open on purpose: its WAL must not be folded in by the check
        conn.execute("PRAGMA application_id = 0")
        conn.execute("CREATE TABLE invoices (total REAL)")
    assert_refused(db, "another program")


def test_leftovers_of_an_agent_killed_while_creating_the_database_are_removed(tmp_path):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(gone.stdout)  # a process that has exited, so its pid names nobody
    names = [f".agent.db.new-{dead}", f".agent.db.new-{dead}-wal", f".agent.db.new-{dead}-shm"]
    for name in names:
        (tmp_path / name).write_bytes(b"half made")
    alive = tmp_path / f".agent.db.new-{os.getpid()}"  # this test's own pid: alive, so it is left alone
    alive.write_bytes(b"in progress")
    done = start(tmp_path / "agent.db", '{"jsonrpc":"2.0","id":1,"method":"session/list"}\n')
    assert done.returncode == 0, done
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted(["agent.db", alive.name]), left
