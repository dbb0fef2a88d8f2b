"""The reference Agent on PostgreSQL: `--db postgresql://...` keeps sessions, messages and keys in the database,
two Agents on one database share them, and the password never shows (not in errors, not in logs).

Each test gets a schema of its own on the shared test server (named in the URL's `options`), so other tests'
tables are never touched and nothing is left behind. The shared server trusts every local connection, so a wrong
password is tried on the private cluster (pg_cluster.py), which checks it.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from urllib.parse import quote, urlsplit, urlunsplit

import pytest
from agent_client import INITIALIZE, RawAgent, agent_command, environment
from pg_cluster import DATABASE, ROLE, shared_cluster


def _with_password(dsn: str, password: str) -> str:
    """`dsn` with its password replaced (the user and the rest kept)."""
    parts = urlsplit(dsn)
    user = parts.username or "acp"
    host = parts.hostname or "127.0.0.1"
    netloc = f"{user}:{quote(password, safe='')}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _in_schema(dsn: str, schema: str) -> str:
    """`dsn` with the search path set to `schema` (libpq's `options`), so every table lands there."""
    option = quote(f"-c search_path={schema}", safe="")
    return dsn + ("&" if "?" in dsn else "?") + f"options={option}"


@pytest.fixture
def agent_url(pg_dsn: str) -> Iterator[str]:
    """A `postgresql://` URL whose tables go to a schema made for this test (dropped afterwards)."""
    import psycopg

    schema = f"i34_agent_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield _in_schema(pg_dsn, schema)
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


def open_session(agent: RawAgent) -> str:
    """Initialize an Agent and open a session on it (answers may come out of order on a server: `call` waits)."""
    assert "result" in agent.call("initialize", INITIALIZE, "init")
    return str(agent.call("session/new", {"cwd": "/", "mcpServers": []}, "new")["result"]["sessionId"])


def run(db: str, stdin: str = "", *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        agent_command(db, *extra),  # type: ignore[arg-type]
        input=stdin,
        capture_output=True,
        text=True,
        env=env or environment(),
        timeout=60,
        check=False,
    )


def test_wrong_password_is_refused_in_one_line_without_the_password():
    cluster = shared_cluster()
    secret = f"not-the-password-{uuid.uuid4().hex[:8]}"
    env = environment()
    env["ACP_REFERENCE_AGENT_LOG"] = "1"  # the log must not show it either
    done = run(cluster.url(secret), '{"jsonrpc":"2.0","id":1,"method":"session/list"}\n', env=env)
    assert done.returncode == 2, done
    assert done.stdout == "" and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert secret not in done.stderr and "***" in done.stderr, done.stderr
    assert "password authentication failed" in done.stderr, done.stderr  # it says what went wrong


def test_password_in_the_query_is_hidden_too():
    cluster = shared_cluster()
    secret = f"query-secret-{uuid.uuid4().hex[:8]}"
    url = f"postgresql://{ROLE}@127.0.0.1:{cluster.port}/{DATABASE}?password={secret}"
    done = run(url)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done
    assert secret not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_unreachable_server_is_refused_without_the_password():
    secret = f"hidden-{uuid.uuid4().hex[:8]}"
    # Port 9 (discard) on loopback: nothing listens there, so the connection is refused at once.
    done = run(f"postgresql://acp:{secret}@127.0.0.1:9/nothing?connect_timeout=5")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done
    assert secret not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_sessions_messages_and_keys_live_in_postgresql(agent_url):
    first = RawAgent(agent_url)  # type: ignore[arg-type]
    try:
        sid = open_session(first)
        key = f"k-{uuid.uuid4()}"
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}], "idempotencyKey": key}
        answer = first.call("session/prompt", prompt, "p1")
        message_id = answer["result"]["messageId"]
        assert first.close() == 0
    finally:
        first.kill()
    second = RawAgent(agent_url)  # type: ignore[arg-type]
    try:
        assert "result" in second.call("initialize", INITIALIZE, "init")
        listed = second.call("session/list", {}, "list")["result"]["sessions"]
        assert [s["sessionId"] for s in listed] == [sid]
        # The retry on another process gets the original messageId, and the message is in the history once.
        assert second.call("session/resume", {"sessionId": sid, "cwd": "/", "mcpServers": []}, "r")["result"] == {}
        assert second.call("session/prompt", prompt, "p2")["result"]["messageId"] == message_id
        seen = len(second.seen)
        replay = {"sessionId": sid, "cwd": "/", "mcpServers": [], "replayFrom": {"type": "start"}}
        assert second.call("session/resume", replay, "h")["result"] == {}
        updates = [m["params"]["update"] for m in second.seen[seen:] if m.get("method") == "session/update"]
        users = [u for u in updates if u["sessionUpdate"] == "user_message"]
        assert [u["messageId"] for u in users] == [message_id]
        assert second.close() == 0
    finally:
        second.kill()


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://acp:{secret}@127.0.0.1:notaport/db",
        "postgresql://acp:{secret}@127.0.0.1:9/db?nosuchoption={secret}",
        "postgres://acp:{secret}@[::1/db",
    ],
)
def test_malformed_url_is_refused_without_the_password(url):
    secret = f"pw{uuid.uuid4().hex[:10]}"
    done = run(url.format(secret=secret))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done
    assert secret not in done.stderr + done.stdout and len(done.stderr.strip().splitlines()) == 1, done.stderr
