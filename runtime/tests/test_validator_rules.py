"""The validator's rules of issue 26: batches refused as the reference Agent refuses them, ids pending twice on one
side, ids out of range, keys echoed in `session/update` or `session/list` (as parsed, at any depth, whatever the
escaping), and a plain message for a key holding a lone surrogate.
"""

from __future__ import annotations

import json

import pytest
from acp_v2_schema.protocol import KnownErrorCode as Code
from acp_v2_schema.reader import Invalid, MessageReader
from agent_client import RawAgent

from acp_v2_runtime.validate import main, validate_lines

PROMPT = [{"type": "text", "text": "hello"}]


def msg(**members: object) -> str:
    return json.dumps({"jsonrpc": "2.0", **members})


def problems(*lines: str) -> list[str]:
    return [str(p) for p in validate_lines(lines)]


def prompt(request_id: object, key: str | None = None) -> str:
    params: dict[str, object] = {"sessionId": "s", "prompt": PROMPT}
    if key is not None:
        params["idempotencyKey"] = key
    return msg(id=request_id, method="session/prompt", params=params)


def update(update: dict[str, object]) -> str:
    return msg(method="session/update", params={"sessionId": "s", "update": update})


CHUNK = {"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": {"type": "text", "text": "x"}}


@pytest.mark.parametrize(
    "batch",
    [[json.loads(msg(id=1, method="session/list", params={}))], [], [1, 2]],
    ids=["one-request", "empty", "numbers"],
)
def test_a_batch_is_refused_by_the_validator_and_the_agent_alike(tmp_path, batch):
    raw = json.dumps(batch)
    [only] = MessageReader().read_line(raw)
    assert isinstance(only, Invalid) and only.code == Code.INVALID_REQUEST
    assert problems(raw) == [f"line 1: -: {only.problems[0]}"]
    agent = RawAgent(tmp_path / "agent.db")
    try:
        (answer,) = agent.exchange(raw.encode())
        assert answer["id"] is None and answer["error"]["code"] == only.code, answer
    finally:
        agent.kill()


def test_two_pending_requests_with_one_id_from_one_side_are_flagged():
    found = problems(prompt(1), prompt(1), msg(id=1, result={"messageId": "m"}), msg(id=1, result={"messageId": "n"}))
    assert found == [
        "line 2: session/prompt: id 1 is already used by the unanswered request on line 1, sent by the same side"
        " (a response could not tell the two apart)"
    ]


def test_one_id_may_be_pending_once_on_each_side_and_again_once_answered():
    permission = msg(
        id=1,
        method="session/request_permission",
        params={
            "sessionId": "s",
            "title": "Run it?",
            "toolCall": {"toolCallId": "t", "title": "t"},
            "options": [{"optionId": "o", "name": "o", "kind": "allow_once"}],
        },
    )
    assert problems(permission) == []  # the message itself is valid
    lines = [prompt(1), permission, msg(id=1, result={"messageId": "m"}), prompt(1)]
    assert problems(*lines) == []


@pytest.mark.parametrize("request_id", [2**63, -(2**63) - 1])
def test_ids_out_of_range_are_flagged(request_id):
    [found] = problems(msg(id=request_id, method="session/list", params={}))
    assert "outside the range of a request id" in found, found


@pytest.mark.parametrize(
    "text",
    ['"k-secret-1"', '"\\u006b-secret-1"', '"k-secret\\u002d1"'],
    ids=["plain", "escaped-start", "escaped-middle"],
)
def test_a_key_echoed_in_an_update_is_flagged_whatever_the_escaping(text):
    chunk = update(dict(CHUNK, content={"type": "text", "text": "PLACE"})).replace('"PLACE"', text)
    found = problems(prompt(1, "k-secret-1"), chunk)
    assert found == [
        "line 2: session/update: params.update.content.text: echoes the idempotency key of the prompt on line 1"
        " (keys never appear in session/update or session/list)"
    ], found


def test_a_key_echoed_deep_in_a_listing_or_as_a_member_name_is_flagged():
    listing = msg(id=2, result={"sessions": [{"sessionId": "s", "cwd": "/", "_meta": {"a": [{"k-9": True}]}}]})
    found = problems(prompt(1, "k-9"), msg(id=2, method="session/list", params={}), listing)
    assert found == [
        "line 3: session/list: result.sessions[0]._meta.a[0].k-9: echoes the idempotency key of the prompt on line 1"
        " (keys never appear in session/update or session/list)"
    ], found


def test_a_member_named_idempotency_key_in_an_update_is_no_echo_by_its_name():
    """Keys are matched by the values the Client sent (issue 35): opaque data may have a member of that name."""
    assert problems(update(dict(CHUNK, _meta={"nested": {"idempotencyKey": "anything"}}))) == []


def test_a_key_in_other_messages_is_not_an_echo():
    answer = msg(id=1, result={"messageId": "k-1"})  # the answer of a prompt may say anything
    assert problems(prompt(1, "k-1"), answer, update(CHUNK)) == []


def test_a_lone_surrogate_key_gets_a_plain_message_with_its_path(capsys, tmp_path):
    line = prompt(1, "KEY").replace('"KEY"', '"ab\\ud800"')
    assert problems(line) == [
        "line 1: session/prompt: params.idempotencyKey: holds a lone surrogate (half of a UTF-16 pair), which a key"
        " may not hold"
    ]
    text = prompt(2).replace('"hello"', '"he\\udc00llo"')  # elsewhere, it is text
    assert problems(text) == []
    source = tmp_path / "session.ndjson"
    source.write_text(line + "\n")
    assert main([str(source)]) == 1
    out = capsys.readouterr().out
    assert "hex escape" not in out and "params.idempotencyKey" in out
