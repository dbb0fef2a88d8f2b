"""Fuzzing the reference Agent: random JSON-RPC lines against one Agent process (issue 11).

Each draw is one line: a valid request or notification with one part replaced by a random JSON value (every
member, and every field of the params), a message cut short or with a byte changed, random bytes (invalid
UTF-8 included), a huge or deeply nested value, or a random JSON value. After every line the test sends a
fence request and collects what the Agent wrote before the fence's answer. The properties:

- the process stays alive, and every line it writes is a well-formed JSON-RPC 2.0 message;
- a line with a `method` and an `id` gets exactly one answer (an error code the spec names, or a result), with
  its id when that id is valid and null otherwise; a response gets none; other lines get at most one error;
- no answer ever arrives for an earlier line's id (an answer sent twice would);
- afterwards a keyed prompt in a new session still gets a messageId, and the same key again the same one.

`ACP_FUZZ_DRAWS` sets the number of draws (default 200, a few seconds); `make fuzz` raises it. Half of them are
shared evenly among the message templates, the other half go to the other kinds of line.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from acp_v2_schema.protocol import KnownErrorCode
from agent_client import INITIALIZE, RawAgent, start_session
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_v2_runtime.conformance import handshake_key
from acp_v2_runtime.jsonrpc import MAX_LINE_BYTES

DRAWS = int(os.environ.get("ACP_FUZZ_DRAWS", "200"))
pytestmark = pytest.mark.fuzz  # `make fuzz` runs it with thousands of draws
SPEC_CODES = {int(code) for code in KnownErrorCode}
PROMPT = [{"type": "text", "text": "hello"}]
SESSION = "$session"  # stands for the real session id, filled in when a line is sent
_ids = itertools.count(1)

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=16,
)


HOOKS = handshake_key()  # the `_meta` key of the conformance hooks


def templates() -> list[dict[str, Any]]:
    """Valid messages of every kind the Agent handles, and a few it does not."""
    key = {"idempotencyKey": "fuzz-key"}
    calls = [
        ("initialize", INITIALIZE),
        ("session/new", {"cwd": "/", "mcpServers": []}),
        ("session/list", {}),
        ("session/resume", {"sessionId": SESSION, "cwd": "/", "mcpServers": []}),
        ("session/prompt", {"sessionId": SESSION, "prompt": PROMPT}),
        ("session/prompt", {"sessionId": SESSION, "prompt": PROMPT, **key}),
        ("session/prompt", {"sessionId": SESSION, "prompt": PROMPT, "_meta": {HOOKS: {"holdInsert": True}}}),
        ("session/fork", {"sessionId": SESSION}),
        ("session/teleport", {}),
    ]
    notes = [
        ("session/cancel", {"sessionId": SESSION}),
        ("$/cancel_request", {"requestId": 1}),
        ("_conformance/release", {"sessionId": SESSION}),
    ]
    out = [{"jsonrpc": "2.0", "id": 0, "method": m, "params": p} for m, p in calls]
    out += [{"jsonrpc": "2.0", "method": m, "params": p} for m, p in notes]
    out += [
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": 1, "error": {"code": 1, "message": "x"}},
    ]
    return out


def paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path into a JSON value (the root included)."""
    found = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            found += paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += paths(v, (*prefix, i))
    return found


def replaced(value: Any, path: tuple, new: Any, delete: bool) -> Any:
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    head, rest = path[0], path[1:]
    if delete and not rest:
        del copy[head]
    else:
        copy[head] = replaced(copy[head], rest, new, delete)
    return copy


# One value of each JSON type (and the edge cases of each), so a retyped field hits every type early.
# Containers come first because Hypothesis favours early elements and they are the likeliest to break code.
retyped = st.sampled_from([["x"], {"a": 1}, [], {}, None, True, 0, -1, 2**63, 1.5, "", "\ud800", "x"])


@st.composite
def mutated(draw: st.DrawFn, template: dict[str, Any]) -> Any:
    """The template with one to three values retyped, replaced by random JSON, or deleted."""
    message = template
    for _ in range(draw(st.integers(1, 3))):
        # Mostly a field inside params (the telling case: an envelope that is fine around a bad field), else any
        # member or the whole message. Hypothesis favours 0, so the params branch is the one taken most.
        fields = [p for p in paths(message) if len(p) > 1 and p[0] == "params"]
        anywhere = sorted(paths(message), key=len, reverse=True)
        path = draw(st.sampled_from(fields if fields and draw(st.integers(0, 9)) < 7 else anywhere))
        delete = bool(path) and draw(st.integers(0, 3)) == 3  # a quarter of the time (0 is what Hypothesis favours)
        message = replaced(message, path, draw(retyped | json_values), delete)
        if not isinstance(message, dict):
            break  # the root itself was replaced
    return message


def deep(depth: int, opener: str) -> bytes:
    inner = ("[" * depth + "]" * depth) if opener == "[" else ('{"a":' * depth + "1" + "}" * depth)
    return f'{{"jsonrpc":"2.0","id":0,"method":"session/list","params":{{"_meta":{{"x":{inner}}}}}}}'.encode()


def encode(value: Any) -> bytes:
    return json.dumps(value).encode()


@st.composite
def broken(draw: st.DrawFn) -> bytes:
    """A message cut short, or with one byte changed."""
    raw = encode(draw(st.sampled_from(templates()).flatmap(mutated)))
    if draw(st.booleans()):
        return raw[: draw(st.integers(0, len(raw) - 1))]
    at = draw(st.integers(0, len(raw) - 1))
    return raw[:at] + bytes([draw(st.integers(0, 255))]) + raw[at + 1 :]


@dataclass(frozen=True)
class Padded:
    """A session/list request padded to `size` bytes; built when sent, so a failure report stays short."""

    size: int

    def build(self) -> bytes:
        head = b'{"jsonrpc":"2.0","id":0,"method":"session/list","params":{"p":"'
        return head + b"x" * max(self.size - len(head) - 3, 0) + b'"}}'


# Lines that are not a template with a part changed (those get a share of the draws each, see the test).
other_lines = st.one_of(
    broken(),
    json_values.map(encode),
    st.binary(max_size=64),
    st.builds(deep, st.integers(1, 3000), st.sampled_from("[{")),
    st.builds(Padded, st.integers(0, 3 * 1024 * 1024)),
    st.builds(Padded, st.integers(MAX_LINE_BYTES - 2, MAX_LINE_BYTES + 2)),
)


def valid_id(value: Any) -> bool:
    return isinstance(value, int | str) and not isinstance(value, bool)


def parsed(raw: bytes) -> tuple[bool, Any]:
    """(True, value) when the line is UTF-8 JSON text without NaN or Infinity, else (False, None)."""

    def refuse(_name: str) -> Any:
        raise ValueError

    try:
        return True, json.loads(raw.decode("utf-8"), parse_constant=refuse)
    except (ValueError, RecursionError):
        return False, None


def fill(raw: bytes, session_id: str) -> tuple[bytes, Any]:
    """The line to send (real session id in, a fresh id for a valid one) and its parsed value (or None)."""
    ok, value = parsed(raw)
    if not ok or not isinstance(value, dict):
        return raw, value
    text = json.dumps(value).replace(json.dumps(SESSION), json.dumps(session_id))
    value = json.loads(text)
    if "method" in value and valid_id(value.get("id")):
        value["id"] = f"fz-{next(_ids)}"  # unique, so an answer sent twice or late cannot pass for another
    return encode(value), value


def check_answer(answer: dict[str, Any]) -> None:
    assert answer.get("jsonrpc") == "2.0", answer
    assert ("result" in answer) != ("error" in answer), answer
    if "error" in answer:
        error = answer["error"]
        assert isinstance(error, dict) and isinstance(error.get("message"), str), answer
        assert error.get("code") in SPEC_CODES, answer


def check_no_internal_error(line: bytes, answers: list[dict[str, Any]]) -> None:
    """-32603 is what a bug or the failInsert hook produces; random lines must never hit a bug."""
    if b"failInsert" not in line:
        assert all(a.get("error", {}).get("code") != KnownErrorCode.INTERNAL_ERROR for a in answers), answers


@pytest.fixture
def agent(tmp_path) -> Iterator[RawAgent]:
    process = RawAgent(tmp_path / "agent.db")
    yield process
    process.kill()


def test_random_lines_never_kill_the_agent_and_each_gets_its_answers(agent):
    session_id = start_session(agent)
    kinds: Counter[str] = Counter()
    started = time.monotonic()

    def check(drawn: bytes | Padded) -> None:
        raw = drawn.build() if isinstance(drawn, Padded) else drawn.replace(b"\n", b" ")
        line, value = fill(raw, session_id)
        written = agent.exchange(line)
        for message in written:
            assert isinstance(message, dict), message  # the Agent writes no batches
            if "method" not in message:
                check_answer(message)
        answers = [m for m in written if "method" not in m]
        check_no_internal_error(line, answers)
        own_id = value.get("id") if isinstance(value, dict) else None
        if len(line) > MAX_LINE_BYTES:
            kinds["oversized"] += 1
            assert len(answers) == 1 and answers[0]["id"] is None, answers  # its id was never read
            assert answers[0]["error"]["code"] == KnownErrorCode.INVALID_REQUEST, answers
        elif isinstance(value, dict) and "method" in value and "id" in value:
            kinds["request"] += 1
            expected = own_id if valid_id(own_id) else None
            if not answers and expected is not None:
                answers = wait_for(agent, session_id, expected)  # slow work or a held prompt
            assert len(answers) == 1, (line[:300], written)
            # A valid id comes back, unless the Agent could not parse a line nested deeper than it reads.
            unparsed = (
                answers[0]["id"] is None and answers[0].get("error", {}).get("code") == KnownErrorCode.PARSE_ERROR
            )
            assert answers[0]["id"] == expected or unparsed, answers
        elif isinstance(value, dict) and "method" not in value and ("result" in value or "error" in value):
            kinds["response"] += 1
            assert answers == [], (line[:300], answers)
        elif not line.strip(b" \t\r"):
            kinds["blank"] += 1
            assert answers == []
        else:
            kinds["other" if parsed(line)[0] else "unparseable"] += 1
            assert len(answers) <= 1 and all(a["id"] in (None, own_id) for a in answers), (line[:300], answers)
            assert all(
                a["error"]["code"] in (KnownErrorCode.PARSE_ERROR, KnownErrorCode.INVALID_REQUEST) for a in answers
            )
            if not isinstance(value, dict) or "method" not in value:
                assert len(answers) == 1, (line[:300], written)  # not a notification: it cannot go unanswered

    # Every template gets the same share of the draws, then the other kinds of line get the rest: a single
    # sampled_from over the templates would give the last ones almost none.
    shapes = templates()
    share = max(DRAWS // (2 * len(shapes)), 2)
    runs = [(mutated(t).map(encode), share) for t in shapes] + [(other_lines, max(DRAWS - share * len(shapes), 10))]
    for strategy, draws in runs:
        options = settings(
            max_examples=draws,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
        )
        options(given(strategy)(check))()
    elapsed = time.monotonic() - started
    # The Agent survived every draw and still does its job: a keyed prompt in a new session, then a retry.
    new_session = agent.request("session/new", {"cwd": "/", "mcpServers": []}, "final-new")["result"]["sessionId"]
    params = {"sessionId": new_session, "prompt": PROMPT, "idempotencyKey": "final-key"}
    first = agent.call("session/prompt", params, "final-1")
    again = agent.call("session/prompt", params, "final-2")
    assert first["result"]["messageId"] == again["result"]["messageId"]
    assert agent.close() == 0
    print(f"\nreference Agent fuzz: {sum(kinds.values())} draws in {elapsed:.1f}s ({dict(sorted(kinds.items()))})")


def wait_for(agent: RawAgent, session_id: str, request_id: str) -> list[dict[str, Any]]:
    """The answer to a request whose work outlived the fence; a held prompt is released to get it."""
    agent.send(encode({"jsonrpc": "2.0", "method": "_conformance/release", "params": {"sessionId": session_id}}))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            message = agent.next_message(timeout=max(deadline - time.monotonic(), 0.01))
        except queue.Empty:
            break
        assert message is not None, "the Agent exited"
        if isinstance(message, dict) and "method" not in message:
            check_answer(message)
            assert message.get("id") == request_id, f"an answer to another request: {message}"
            return [message]
    return []
