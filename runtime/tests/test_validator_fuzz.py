"""Fuzzing the message validator: any bytes give `line N: ...` problems or none, never a traceback.

Lines are random JSON values, JSON-RPC messages with fields retyped or removed, broken JSON, deep nesting and raw
bytes (invalid UTF-8 included). `ACP_FUZZ_DRAWS` sets the number of draws (`make fuzz` raises it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest
from acp_v2_schema.reader import MessageReader
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_v2_runtime.validate import validate_lines

DRAWS = int(os.environ.get("ACP_FUZZ_DRAWS", "200"))
pytestmark = pytest.mark.fuzz

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
TEMPLATES = [
    {"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": {"sessionId": "s", "prompt": []}},
    {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": {"sessionUpdate": "x"}}},
    {"jsonrpc": "2.0", "id": 1, "result": {"messageId": "m"}},
    {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad"}},
    {"jsonrpc": "2.0", "id": 2, "method": "_ext/thing", "params": [1, 2]},
    {"jsonrpc": "2.0", "id": 1, "method": "session/cancel", "params": {"sessionId": "s"}},
    {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s"}},
    {"jsonrpc": "2.0", "id": "1", "method": "mcp/message", "params": {"sessionId": "s", "method": "m", "params": {}}},
    {"jsonrpc": "2.0", "method": "mcp/message", "params": {"sessionId": "s", "method": "m", "params": {}}},
    {"jsonrpc": "2.0", "id": 1, "result": {"messageId": "m"}, "error": {"code": 1, "message": "both"}},
    {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    message = json.loads(json.dumps(draw(st.sampled_from(TEMPLATES))))
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(sorted(message) or ["x"]))
        if draw(st.booleans()):
            message.pop(key, None)
        else:
            message[key] = draw(JSON)
    return json.dumps(message).encode()


LINES = st.one_of(
    mutated(),
    JSON.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=64),
    st.integers(1, 3000).map(lambda n: b"[" * n + b"]" * n),
    st.sampled_from([b"NaN", b'{"a": Infinity}', b'"\\ud800"', b"{", b"[]", b"\r", b"\xff\xfe"]),
)


@settings(max_examples=DRAWS, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(st.lists(LINES, min_size=1, max_size=6))
def test_any_lines_give_problems_on_their_lines_never_an_exception(lines: list[bytes]) -> None:
    clean = [line.replace(b"\n", b" ") for line in lines]
    for problem in validate_lines(clean):
        assert 1 <= problem.line <= len(clean)
        assert str(problem).startswith(f"line {problem.line}: ")


# Lines that are mostly well formed, so that the one-pass read accepts many of them: the templates as they are,
# mutated, with ids shared between requests and answers.
WELL_FORMED = st.one_of(
    st.sampled_from(TEMPLATES).map(lambda m: json.dumps(m).encode()),
    mutated(),
    st.sampled_from(
        [
            b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s","x":NaN}}',
            b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s","x":-Infinity}}',
            b'{"jsonrpc":"2.0","id":1.0,"result":{"messageId":"m"}}',
            # An id under an escaped name (no `"id"` text: the union of notifications alone is tried first), and a
            # notification with an "id" deep inside (the union of every call, the request form tried first).
            b'{"jsonrpc":"2.0","\\u0069d":3,"method":"mcp/message","params":{"serverId":"s","requestId":"7","method":"m"}}',
            b'{"jsonrpc":"2.0","method":"mcp/message","params":{"serverId":"s","requestId":"7","method":"m","params":{"id":3}}}',
            b'{"jsonrpc":"2.0","id":3,"result":{}}',
        ]
    ),
)


@settings(max_examples=DRAWS, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(st.lists(WELL_FORMED | LINES, min_size=1, max_size=8), st.booleans())
def test_the_one_pass_read_gives_the_messages_of_the_careful_read(lines: list[bytes], as_text: bool) -> None:
    fast, careful = MessageReader(), MessageReader(one_pass=False)
    for line in lines:
        given_line: str | bytes = line.decode("utf-8", "replace") if as_text else line
        assert fast.read_line(given_line) == careful.read_line(given_line)
        assert {k: v for k, v in fast.pending.items() if v} == {k: v for k, v in careful.pending.items() if v}


def test_the_command_streams_and_never_prints_a_traceback() -> None:
    lines = [b"\xff", b"[" * 5000 + b"]" * 5000, b'{"jsonrpc":"2.0","method":"\\udc80"}', b"NaN", b"[]"]
    done = subprocess.run(
        [sys.executable, "-m", "acp_v2_runtime.validate"], input=b"\n".join(lines) + b"\n", capture_output=True
    )
    assert done.returncode == 1
    assert b"Traceback" not in done.stderr
    seen = Counter(line.split(b":")[0] for line in done.stdout.splitlines())
    assert set(seen) == {f"line {n}".encode() for n in range(1, 6)}
