"""The generated message reader: one line in, typed messages out, routed by method or by the request answered."""

from __future__ import annotations

import json

from acp_v2_schema import models
from acp_v2_schema.protocol import KnownErrorCode
from acp_v2_schema.reader import ErrorResponse, Invalid, MessageReader, Notification, Request, Response


def _line(**message: object) -> str:
    return json.dumps({"jsonrpc": "2.0", **message})


def test_a_request_and_its_response_are_routed_to_their_models():
    reader = MessageReader()
    prompt = {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}], "idempotencyKey": "k"}
    [request] = reader.read_line(_line(id=1, method="session/prompt", params=prompt))
    assert isinstance(request, Request) and isinstance(request.params, models.PromptRequest)
    [response] = reader.read_line(_line(id=1, result={"messageId": "m1"}))
    assert isinstance(response, Response) and response.method == "session/prompt"
    assert type(response.result).__name__ == "PromptResponse"
    assert reader.read_line(_line(id=1, result={"messageId": "m1"}))[0] == Invalid(
        None, None, ("a response to id 1, but no unanswered request with that id came before",), 1
    )


def test_an_sdk_announces_its_own_requests():
    reader = MessageReader(remember_requests=False)
    reader.expect("a", "session/new")
    [response] = reader.read_line(_line(id="a", result={"sessionId": "s1"}))
    assert isinstance(response, Response) and response.method == "session/new"
    [error] = reader.read_line(_line(id=None, error={"code": -32700, "message": "Parse error"}))
    assert isinstance(error, ErrorResponse) and error.method is None


def test_extensions_keep_their_values_and_their_answers_are_matched():
    reader = MessageReader()
    [request] = reader.read_line(_line(id=7, method="_zed.dev/workspace/buffers", params={"any": ["thing"]}))
    assert request == Request(7, "_zed.dev/workspace/buffers", {"any": ["thing"]}, extension=True)
    [response] = reader.read_line(_line(id=7, result=[1, 2]))
    assert response == Response(7, "_zed.dev/workspace/buffers", [1, 2], extension=True)
    [note] = reader.read_line(_line(method="_acme/ping"))
    assert isinstance(note, Notification) and note.extension


def test_batches_are_read_item_by_item():
    reader = MessageReader()
    line = json.dumps([json.loads(_line(method="session/cancel", params={"sessionId": "s"})), 5])
    first, second = reader.read_line(line)
    assert isinstance(first, Notification)
    assert isinstance(second, Invalid) and second.code == KnownErrorCode.INVALID_REQUEST


def test_each_kind_of_malformed_message_gets_the_code_that_answers_it():
    reader = MessageReader()
    cases = {
        "{nope": KnownErrorCode.PARSE_ERROR,
        "[]": KnownErrorCode.INVALID_REQUEST,
        _line(id=1, method=["x"]): KnownErrorCode.INVALID_REQUEST,
        json.dumps({"jsonrpc": "1.0", "id": 1, "method": "initialize"}): KnownErrorCode.INVALID_REQUEST,
        _line(id=1, method="session/teleport", params={}): KnownErrorCode.METHOD_NOT_FOUND,
        _line(id=1, method="session/new", params={"cwd": 5, "mcpServers": []}): KnownErrorCode.INVALID_PARAMS,
        _line(id=1, method="session/new", params="x"): KnownErrorCode.INVALID_REQUEST,
        _line(id=True, method="session/new", params={}): KnownErrorCode.INVALID_REQUEST,
    }
    for line, code in cases.items():
        [message] = reader.read_line(line)
        assert isinstance(message, Invalid) and message.code == code, (line, message)


def test_unknown_variants_pass_and_malformed_known_ones_do_not():
    reader = MessageReader()
    unknown = {"sessionId": "s", "update": {"sessionUpdate": "_acme_widget", "x": 1}}
    [ok] = reader.read_line(_line(method="session/update", params=unknown))
    assert isinstance(ok, Notification) and type(ok.params.update).__name__ == "UnknownSessionUpdate"
    broken = {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk"}}
    [bad] = reader.read_line(_line(method="session/update", params=broken))
    assert isinstance(bad, Invalid) and bad.code == KnownErrorCode.INVALID_PARAMS
