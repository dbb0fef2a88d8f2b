"""A prompt the Agent accepts only after lenient reading: what was salvaged is dropped before the message is stored,
so the Agent's own updates (live and replayed) pass `validate --strict`, and a retry of the prompt as the models
write it (what a proxy built on them forwards) is the same prompt, answered with the original messageId."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

from acp_v2_schema.reader import MessageReader
from agent_client import RawAgent, environment, start_session

# Salvageable, by ACP's x-deserialize rules (checked below, so the test fails loudly if the spec changes them): a
# priority that is not a number, an audience entry that is not a role, a `_meta` that is not an object.
SALVAGEABLE = [
    {"type": "text", "text": "hello", "annotations": {"priority": "high", "audience": ["user", 5]}},
    {"type": "text", "text": "again", "_meta": 7},
]


def _params(sid: str, key: str, prompt: list) -> dict:
    return {"sessionId": sid, "prompt": prompt, "idempotencyKey": key}


def _read(params: dict):
    """The params model the generated reader makes of a prompt request (with what it salvaged)."""
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": params})
    (message,) = MessageReader(remember_requests=False).read_line(line)
    return message.params


def _strict_problems(messages: list[dict]) -> str:
    """What `validate --strict` says of the Agent's own notifications (its answers need the requests, left out)."""
    text = "".join(json.dumps(m) + "\n" for m in messages if "method" in m)
    done = subprocess.run(
        [sys.executable, "-m", "acp_v2_runtime.validate", "--strict"],
        input=text,
        capture_output=True,
        text=True,
        env=environment(),
        timeout=60,
        check=False,
    )
    assert "Traceback" not in done.stderr, done.stderr
    return "" if done.returncode == 0 else done.stdout + done.stderr


def test_the_prompt_needs_salvage():
    model = _read(_params("s", "k", SALVAGEABLE))
    assert model is not None and len(model.model_salvaged) >= 3


def test_updates_and_history_of_a_salvaged_prompt_pass_strict_validation(tmp_path):
    agent = RawAgent(tmp_path / "agent.db")
    try:
        sid = start_session(agent)
        key = f"k-{uuid.uuid4()}"
        answer = agent.call("session/prompt", _params(sid, key, SALVAGEABLE), "p1")
        assert "result" in answer, answer
        resume = {"sessionId": sid, "cwd": "/", "mcpServers": [], "replayFrom": {"type": "start"}}
        line = json.dumps({"jsonrpc": "2.0", "id": "h", "method": "session/resume", "params": resume}).encode()
        agent.exchange(line)
        users = [
            m["params"]["update"]
            for m in agent.seen
            if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "user_message"
        ]
        assert len(users) == 2, users  # the live update and the replayed one
        assert _strict_problems(agent.seen) == ""
        assert agent.close() == 0
    finally:
        agent.kill()


def test_retry_of_a_salvaged_prompt_as_the_models_write_it_is_the_same_prompt(tmp_path):
    agent = RawAgent(tmp_path / "agent.db")
    try:
        sid = start_session(agent)
        key = f"k-{uuid.uuid4()}"
        first = agent.call("session/prompt", _params(sid, key, SALVAGEABLE), "p1")
        message_id = first["result"]["messageId"]
        # A proxy built on the models forwards the prompt as they serialize it: without what was salvaged.
        forwarded = _read(_params(sid, key, SALVAGEABLE)).model_dump(mode="json", by_alias=True, exclude_unset=True)
        assert forwarded["prompt"] != SALVAGEABLE
        again = agent.call("session/prompt", forwarded, "p2")
        assert again.get("result") == {"messageId": message_id}, again
        # And the original bytes again: the same prompt too.
        third = agent.call("session/prompt", _params(sid, key, SALVAGEABLE), "p3")
        assert third.get("result") == {"messageId": message_id}, third
        assert agent.close() == 0
    finally:
        agent.kill()
