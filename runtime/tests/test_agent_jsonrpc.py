"""The reference Agent under bad input (issue 11): JSON-RPC 2.0 errors exactly as the standard defines them,
params checked with the generated models before any work, responses never answered, oversized and deeply
nested lines answered instead of killing the process. One Agent process serves every test of the module, which
is itself a check: it must still be alive and answering after all of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from acp_v2_schema.protocol import KnownErrorCode as Code
from agent_client import RawAgent, start_session

from acp_v2_runtime.jsonrpc import MAX_LINE_BYTES

PROMPT = [{"type": "text", "text": "hello"}]


@pytest.fixture(scope="module")
def agent(tmp_path_factory) -> Iterator[RawAgent]:
    process = RawAgent(tmp_path_factory.mktemp("agent") / "agent.db")
    try:
        yield process
        assert process.close() == 0
    finally:
        process.kill()


@pytest.fixture(scope="module")
def session_id(agent: RawAgent) -> str:
    return start_session(agent)


def line(**members: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **members}).encode()


def only_error(answers: list, request_id: object = None) -> int:
    """The code of the one error answer a line got (asserting there is exactly one, with the expected id)."""
    assert len(answers) == 1, answers
    (answer,) = answers
    assert answer["jsonrpc"] == "2.0" and answer["id"] == request_id and "result" not in answer, answer
    assert isinstance(answer["error"]["message"], str)
    return answer["error"]["code"]


def test_line_over_16_mib_gets_an_error_and_the_agent_keeps_serving(agent, session_id):
    text = "x" * (MAX_LINE_BYTES + 1024)
    huge = line(id="huge", method="session/prompt", params={"sessionId": session_id, "prompt": [{"text": text}]})
    assert only_error(agent.exchange(huge, timeout=120)) == Code.INVALID_REQUEST
    assert "result" in agent.request("session/list", {})


def test_line_just_under_16_mib_is_read_and_checked(agent, session_id):
    params = {"sessionId": 5, "prompt": PROMPT, "_meta": {"pad": ""}}
    padding = MAX_LINE_BYTES - len(line(id="big", method="session/prompt", params=params)) - 16
    params["_meta"]["pad"] = "x" * padding
    big = line(id="big", method="session/prompt", params=params)
    assert len(big) <= MAX_LINE_BYTES
    assert only_error(agent.exchange(big, timeout=120), "big") == Code.INVALID_PARAMS


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_nesting_deeper_than_the_parser_gets_a_parse_error(agent, depth):
    deep = b'{"jsonrpc":"2.0","id":"deep","method":"session/list","params":{"_meta":' + b"[" * depth + b"]" * depth
    assert only_error(agent.exchange(deep + b"}}")) == Code.PARSE_ERROR


def test_nesting_500_deep_in_params_gets_one_answer(agent, session_id):
    """JSON this deep is still JSON: `_meta` may hold it. The Agent answers once (the prompt, or an error if it
    refuses the depth) and keeps serving; it never crashes on it."""
    nested: object = "leaf"
    for _ in range(500):
        nested = [nested]
    params = {"sessionId": session_id, "prompt": PROMPT, "_meta": {"deep": nested}}
    answers = [a for a in agent.exchange(line(id="n500", method="session/prompt", params=params)) if "id" in a]
    assert len(answers) == 1 and answers[0]["id"] == "n500", answers
    assert "result" in answers[0] or answers[0]["error"]["code"] in (Code.INVALID_PARAMS, Code.PARSE_ERROR)


@pytest.mark.parametrize(
    "raw",
    [b"not json", b'{"jsonrpc": "2.0", "id": 1, "method": "session/list"', b"\xff\xfe{}", b'{"id": 1, "x": NaN}'],
    ids=["not-json", "cut-short", "invalid-utf8", "nan"],
)
def test_unparseable_line_gets_a_parse_error(agent, raw):
    assert only_error(agent.exchange(raw)) == Code.PARSE_ERROR


def test_integer_of_5000_digits_gets_a_parse_error(agent):
    raw = b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"session/list"}'
    assert only_error(agent.exchange(raw)) == Code.PARSE_ERROR


def test_method_as_array_is_an_invalid_request(agent):
    assert only_error(agent.exchange(line(id=7, method=["x"])), 7) == Code.INVALID_REQUEST


@pytest.mark.parametrize("method", [None, 5, True, {"name": "session/list"}], ids=["null", "number", "bool", "object"])
def test_method_that_is_not_a_string_is_an_invalid_request_not_method_not_found(agent, method):
    assert only_error(agent.exchange(line(id=8, method=method)), 8) == Code.INVALID_REQUEST


@pytest.mark.parametrize("version", ["1.0", 2, 2.0, None, "2.0 "], ids=["1.0", "int", "float", "null", "padded"])
def test_jsonrpc_other_than_2_0_is_an_invalid_request(agent, version):
    raw = json.dumps({"jsonrpc": version, "id": 9, "method": "session/list", "params": {}}).encode()
    assert only_error(agent.exchange(raw), 9) == Code.INVALID_REQUEST


def test_missing_jsonrpc_member_is_an_invalid_request(agent):
    raw = json.dumps({"id": 10, "method": "session/list"}).encode()
    assert only_error(agent.exchange(raw), 10) == Code.INVALID_REQUEST


@pytest.mark.parametrize(
    "request_id", [None, True, 1.5, [1], {"a": 1}], ids=["null", "bool", "fraction", "array", "object"]
)
def test_bad_id_type_is_an_invalid_request_answered_with_a_null_id(agent, request_id):
    assert only_error(agent.exchange(line(id=request_id, method="session/list"))) == Code.INVALID_REQUEST


@pytest.mark.parametrize("params", ["x", 5, True, None], ids=["string", "number", "bool", "null"])
def test_params_neither_object_nor_array_is_an_invalid_request(agent, params):
    assert only_error(agent.exchange(line(id=11, method="session/new", params=params)), 11) == Code.INVALID_REQUEST


@pytest.mark.parametrize("value", [[], 5, "[]", {}], ids=["empty-array", "number", "string", "empty-object"])
def test_non_object_message_is_an_invalid_request(agent, value):
    raw = json.dumps(value).encode()
    assert only_error(agent.exchange(raw)) == Code.INVALID_REQUEST


def test_unknown_method_gets_method_not_found(agent):
    assert only_error(agent.exchange(line(id=12, method="session/teleport", params={})), 12) == Code.METHOD_NOT_FOUND


def test_prompt_without_params_gets_invalid_params_not_32002(agent):
    assert only_error(agent.exchange(line(id=13, method="session/prompt")), 13) == Code.INVALID_PARAMS


@pytest.mark.parametrize("params", [[], ["sess", PROMPT]], ids=["empty-array", "positional"])
def test_prompt_with_array_params_gets_invalid_params_not_32002(agent, params):
    assert only_error(agent.exchange(line(id=14, method="session/prompt", params=params)), 14) == Code.INVALID_PARAMS


def test_prompt_with_numeric_session_id_gets_invalid_params_not_32002(agent):
    raw = line(id=15, method="session/prompt", params={"sessionId": 5, "prompt": PROMPT})
    assert only_error(agent.exchange(raw), 15) == Code.INVALID_PARAMS


def test_prompt_block_with_numeric_type_gets_invalid_params(agent, session_id):
    raw = line(id=16, method="session/prompt", params={"sessionId": session_id, "prompt": [{"type": 5}]})
    assert only_error(agent.exchange(raw), 16) == Code.INVALID_PARAMS


def test_prompt_checks_params_before_looking_up_the_session(agent):
    """An unknown session with malformed params is -32602: nothing is looked up before the params pass."""
    raw = line(id=17, method="session/prompt", params={"sessionId": "sess_unknown", "prompt": []})
    assert only_error(agent.exchange(raw), 17) == Code.INVALID_PARAMS


@pytest.mark.parametrize(
    "params",
    [{"cwd": 5, "mcpServers": []}, {"mcpServers": []}, {"cwd": None}, {"cwd": ["/"]}],
    ids=["cwd-number", "cwd-missing", "cwd-null", "cwd-array"],
)
def test_session_new_with_bad_cwd_gets_invalid_params(agent, params):
    assert only_error(agent.exchange(line(id=18, method="session/new", params=params)), 18) == Code.INVALID_PARAMS


def test_session_new_with_string_params_is_an_invalid_request(agent):
    """JSON-RPC 2.0 requires params to be structured, so a string is an invalid Request object (-32600)."""
    assert only_error(agent.exchange(line(id=19, method="session/new", params="/tmp")), 19) == Code.INVALID_REQUEST


def test_initialize_with_unknown_protocol_version_type_gets_invalid_params(agent):
    params = {"protocolVersion": "2", "info": {"name": "x", "version": "1"}}
    assert only_error(agent.exchange(line(id=20, method="initialize", params=params)), 20) == Code.INVALID_PARAMS


def test_invalid_params_answer_never_repeats_the_key(agent, session_id):
    key = "secret-" + "k" * 300  # too long, so the params fail
    params = {"sessionId": session_id, "prompt": PROMPT, "idempotencyKey": key}
    answers = agent.exchange(line(id=21, method="session/prompt", params=params))
    assert only_error(answers, 21) == Code.INVALID_PARAMS and "secret-" not in json.dumps(answers)


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": "x", "result": None},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
        {"jsonrpc": "2.0", "id": 2, "error": "boom"},
        {"jsonrpc": "2.0", "id": 3, "error": [1]},
        {"jsonrpc": "2.0", "id": 4, "result": {}, "error": {"code": 1, "message": "both"}},
        {"jsonrpc": "1.0", "id": 5, "result": {}},
        {"id": [1], "result": {}},
    ],
    ids=["result", "null-result", "error-null-id", "error-string", "error-array", "both", "wrong-version", "bad-id"],
)
def test_response_from_the_client_is_never_answered(agent, message):
    assert agent.exchange(json.dumps(message).encode()) == []


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": 5}},
        {"jsonrpc": "2.0", "method": "session/cancel"},
        {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": [1]}},
        {"jsonrpc": "2.0", "method": "$/cancel_request", "params": ["x"]},
        {"jsonrpc": "2.0", "method": "session/teleport", "params": {}},
        {"jsonrpc": "2.0", "method": "_conformance/release", "params": {"sessionId": ["x"]}},
        {"jsonrpc": "2.0", "method": "_conformance/release"},
    ],
    ids=[
        "cancel-numeric",
        "cancel-no-params",
        "cancel-request-array-id",
        "array-params",
        "unknown",
        "release-bad",
        "release-bare",
    ],
)
def test_notification_with_bad_params_or_unknown_method_gets_no_answer(agent, message):
    assert agent.exchange(json.dumps(message).encode()) == []


def test_blank_line_gets_no_answer(agent):
    assert agent.exchange(b"   \t") == []


def test_lone_surrogates_are_answered_in_ascii(agent):
    raw = b'{"jsonrpc":"2.0","id":"\\ud800","method":"\\udfff/x","params":{}}'
    answers = agent.exchange(raw)
    assert only_error(answers, "\ud800") == Code.METHOD_NOT_FOUND


def test_keyed_prompt_still_inserts_after_all_of_the_above(agent, session_id):
    params = {"sessionId": session_id, "prompt": PROMPT, "idempotencyKey": "k-after"}
    first = agent.call("session/prompt", params, "after-1")
    again = agent.call("session/prompt", params, "after-2")
    assert first["result"]["messageId"] == again["result"]["messageId"]
