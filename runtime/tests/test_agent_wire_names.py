"""The reference Agent reads the protocol's member names alone and never answers a notification (issue 35).

A prompt that spells `session_id` lacks its `sessionId`: -32602 with its id. A `session/cancel` or
`$/cancel_request` notification spelled in Python names is invalid, and no notification is ever answered. A line
that needs many salvages is refused quickly, so it does not hold up the answers to the requests behind it.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from acp_v2_schema import models
from acp_v2_schema import protocol as M
from acp_v2_schema.models._salvage import MAX_SALVAGES
from acp_v2_schema.protocol import KnownErrorCode as Code
from acp_v2_schema.reader import ROUTES
from agent_client import RawAgent, start_session

PROMPT = [{"type": "text", "text": "hello"}]


def _snake(method: str, kind: str, wire: str) -> str:
    """The Python attribute of the member `wire` of `method`'s params model."""
    model = getattr(models, ROUTES[(method, kind)].params or "")
    (name,) = [n for n, f in model.model_fields.items() if f.alias == wire]
    return name


def line(**members: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **members}).encode()


@pytest.fixture
def agent(tmp_path):
    process = RawAgent(tmp_path / "agent.db")
    try:
        yield process
    finally:
        process.kill()


def test_a_prompt_in_python_names_is_invalid_params_with_its_id(agent):
    session_id = start_session(agent)
    snake = _snake(M.SESSION_PROMPT, "request", "sessionId")
    params = {snake: session_id, "prompt": PROMPT}
    (answer,) = agent.exchange(line(id="p1", method=M.SESSION_PROMPT, params=params))
    assert answer["id"] == "p1" and answer["error"]["code"] == Code.INVALID_PARAMS, answer
    assert "sessionId" in answer["error"]["message"]


@pytest.mark.parametrize(
    ("method", "wire"),
    [(M.SESSION_CANCEL, "sessionId"), (M.CANCEL_REQUEST, "requestId")],
    ids=["cancel", "cancel_request"],
)
def test_a_notification_in_python_names_is_never_answered(agent, method, wire):
    session_id = start_session(agent)
    snake = _snake(method, "notification", wire)
    assert agent.exchange(line(method=method, params={snake: session_id})) == []


def test_a_line_that_needs_too_many_salvages_does_not_hold_up_the_next_request(agent):
    session_id = start_session(agent)
    block = {"type": "text", "text": "hi", "annotations": {"audience": [1] * (10 * MAX_SALVAGES)}}
    started = time.monotonic()
    answers = agent.exchange(
        line(id="big", method=M.SESSION_PROMPT, params={"sessionId": session_id, "prompt": [block]})
    )
    spent = time.monotonic() - started  # the exchange ends with the answer to a session/list sent right after
    (answer,) = answers
    assert answer["id"] == "big" and answer["error"]["code"] == Code.INVALID_PARAMS, answer
    assert str(MAX_SALVAGES) in answer["error"]["message"]
    assert spent < 10, f"the session/list behind it waited {spent:.1f} s"  # it was 28 s
