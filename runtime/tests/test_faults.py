"""Faults: the reference Agent killed with SIGKILL at the two dangerous points of a keyed prompt."""

from __future__ import annotations

import signal
import sqlite3

from agent_client import INITIALIZE, AgentProcess

PROMPT = [{"type": "text", "text": "hello"}]


def start_session(agent: AgentProcess) -> str:
    assert "result" in agent.request("initialize", INITIALIZE)
    return agent.request("session/new", {"cwd": "/", "mcpServers": []})["result"]["sessionId"]


def user_messages(db, session_id: str) -> list[str]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT message_id FROM ref_messages WHERE session_id = ? AND role = 'user'", (session_id,)
        ).fetchall()
    return [r[0] for r in rows]


def retry(db, session_id: str, *extra: str) -> str:
    agent = AgentProcess(db, *extra)
    try:
        assert "result" in agent.request("initialize", INITIALIZE)
        assert "result" in agent.request("session/resume", {"sessionId": session_id, "cwd": "/", "mcpServers": []})
        answer = agent.request("session/prompt", {"sessionId": session_id, "idempotencyKey": "k1", "prompt": PROMPT})
        return answer["result"]["messageId"]
    finally:
        agent.close()


def test_killed_after_insertion_before_answering(tmp_path):
    db = tmp_path / "agent.db"
    agent = AgentProcess(db, "--crash-after", "insert")
    session_id = start_session(agent)
    answer = agent.request("session/prompt", {"sessionId": session_id, "idempotencyKey": "k1", "prompt": PROMPT})
    assert answer is None and agent.proc.wait(timeout=30) == -signal.SIGKILL  # the answer was lost
    (original,) = user_messages(db, session_id)
    assert retry(db, session_id) == original
    assert user_messages(db, session_id) == [original]


def test_killed_after_claim_before_insertion(tmp_path):
    db = tmp_path / "agent.db"
    agent = AgentProcess(db, "--crash-after", "claim", "--lease", "0.5")
    session_id = start_session(agent)
    answer = agent.request("session/prompt", {"sessionId": session_id, "idempotencyKey": "k1", "prompt": PROMPT})
    assert answer is None and agent.proc.wait(timeout=30) == -signal.SIGKILL
    assert user_messages(db, session_id) == []
    # The dead process's claim runs out under its short lease; the retry then inserts exactly once.
    message_id = retry(db, session_id, "--lease", "0.5")
    assert user_messages(db, session_id) == [message_id]
