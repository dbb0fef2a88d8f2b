"""The generated message reader: one line in, typed messages out, routed by method or by the request answered."""

from __future__ import annotations

import json

import pytest
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


def test_an_announced_method_this_version_lacks_gets_its_answer_as_sent():
    """A Client may send a method newer than this package (or v1's `authenticate`): its answer is matched, kept."""
    from acp_v2_schema.protocol import METHOD_NAMES

    lacking = "authenticate"
    assert lacking not in METHOD_NAMES
    for path in ("one-pass", "step by step"):
        reader = MessageReader()
        reader.expect(1, lacking)
        line = _line(id=1, result={"x": 1}) if path == "one-pass" else _line(id=1, result={"x": 1}, extra=[1])
        [response] = reader.read_line(line)
        assert isinstance(response, Response) and response.method == lacking and response.result == {"x": 1}
    reader = MessageReader()
    reader.expect(2, lacking)
    [error] = reader.read_line(_line(id=2, error={"code": -32603, "message": "m"}))
    assert isinstance(error, ErrorResponse) and error.method == lacking


def test_extensions_keep_their_values_and_their_answers_are_matched():
    reader = MessageReader()
    [request] = reader.read_line(_line(id=7, method="_zed.dev/workspace/buffers", params={"any": ["thing"]}))
    assert request == Request(7, "_zed.dev/workspace/buffers", {"any": ["thing"]}, extension=True)
    [response] = reader.read_line(_line(id=7, result=[1, 2]))
    assert response == Response(7, "_zed.dev/workspace/buffers", [1, 2], extension=True)
    [note] = reader.read_line(_line(method="_acme/ping"))
    assert isinstance(note, Notification) and note.extension


def test_a_batch_is_one_invalid_request_and_its_items_are_not_read():
    """A batch is refused as ACP's TypeScript SDK refuses it (a single -32600): nothing inside is read, so a
    request inside is not remembered either."""
    reader = MessageReader()
    inner = json.loads(_line(id=1, method="session/list", params={}))
    for line in (json.dumps([inner, 5]), "[]", json.dumps([inner])):
        [only] = reader.read_line(line)
        assert isinstance(only, Invalid) and only.code == KnownErrorCode.INVALID_REQUEST, only
        assert "batch" in only.problems[0]
    assert reader.pending == {}


def test_lone_surrogates_are_text_except_in_a_key():
    reader = MessageReader()
    text = (
        '{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s\\udfff",'
        '"prompt":[{"type":"text","text":"a\\ud800b \\\\ud800 \\ud83d\\ude00"}],"_meta":{"\\udc00":1}}}'
    )
    [request] = reader.read_line(text)
    assert isinstance(request, Request), request
    keyed = text.replace('"_meta"', '"idempotencyKey":"k\\ud800","_meta"').replace('"id":1', '"id":2')
    [refused] = reader.read_line(keyed)
    assert isinstance(refused, Invalid) and refused.code == KnownErrorCode.INVALID_PARAMS
    assert refused.problems == (
        "params.idempotencyKey: holds a lone surrogate (half of a UTF-16 pair), which a key may not hold",
    )


def test_a_number_beyond_a_float_is_a_json_number_on_either_path():
    """`1e999` is JSON (JSON Schema sets no range): the reader accepts it in one pass and step by step alike. The
    reference Agent refuses it as an implementation limit (runtime/tests/test_agent_defects.py)."""
    for one_pass in (True, False):
        reader = MessageReader(one_pass=one_pass)
        for number in ("1e999", "-1E+400", "9" * 400 + ".5"):
            text = _line(method="session/cancel", params={"sessionId": "s", "_meta": {"n": 0}}).replace(
                "0}", number + "}"
            )
            [read] = reader.read_line(text)
            assert isinstance(read, Notification), (one_pass, number, read)


def test_ids_beyond_the_range_of_a_request_id_are_refused():
    reader = MessageReader()
    for request_id in (2**63, -(2**63) - 1):
        [refused] = reader.read_line(_line(id=request_id, method="session/list", params={}))
        assert isinstance(refused, Invalid) and refused.code == KnownErrorCode.INVALID_REQUEST, refused
        assert "outside the range of a request id" in refused.problems[0]
    for request_id in (2**63 - 1, -(2**63)):
        [request] = reader.read_line(_line(id=request_id, method="session/list", params={}))
        assert isinstance(request, Request)
    assert reader.pending == {2**63 - 1: ["session/list"], -(2**63): ["session/list"]}


def test_pending_requests_are_the_same_on_either_path_the_only_one_included():
    """The one-pass read keeps the only unanswered request apart from the others; `pending`, the window and the
    routing of answers see it like any other."""
    for one_pass in (True, False):
        reader = MessageReader(one_pass=one_pass)
        reader.read_line(_line(id=1, method="session/list", params={}))
        assert reader.pending == {1: ["session/list"]}, one_pass
        reader.read_line(_line(id=2, method="session/list", params={}))
        reader.read_line(_line(id=1, method="session/new", params={"cwd": "/w", "mcpServers": []}))
        assert reader.pending == {1: ["session/list", "session/new"], 2: ["session/list"]}, one_pass
        [answer] = reader.read_line(_line(id=2, result={"sessions": []}))
        assert isinstance(answer, Response) and answer.method == "session/list", (one_pass, answer)
        assert list(reader.pending) == [1], one_pass
        windowed = MessageReader(one_pass=one_pass, window=1)
        for request_id in (1, 2):
            windowed.read_line(_line(id=request_id, method="session/list", params={}))
        assert (windowed.pending, windowed.forgotten) == ({2: ["session/list"]}, 1), one_pass
        [late] = windowed.read_line(_line(id=1, result={"sessions": []}))
        assert isinstance(late, Invalid) and late.code is None, (one_pass, late)


def test_an_announced_id_that_no_request_may_carry_is_not_remembered():
    """A response is never routed to an id out of the id type's range (`expect` skips one), on either path."""
    for one_pass in (True, False):
        reader = MessageReader(remember_requests=False, one_pass=one_pass)
        reader.expect(2**64, "session/list")
        assert reader.pending == {}
        [answer] = reader.read_line(_line(id=2**64, result={"sessions": []}))
        assert isinstance(answer, Invalid) and answer.code is None, (one_pass, answer)
        assert "outside the range of a request id" in answer.problems[0]


def test_a_window_that_holds_no_request_is_refused():
    with pytest.raises(ValueError, match="window"):
        MessageReader(window=0)


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
    assert isinstance(ok, Notification) and type(ok.params.update).__name__ == "OtherSessionUpdate"
    broken = {"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk"}}
    [bad] = reader.read_line(_line(method="session/update", params=broken))
    assert isinstance(bad, Invalid) and bad.code == KnownErrorCode.INVALID_PARAMS


def test_every_invalid_says_the_id_its_answer_carries_and_whether_it_is_answered():
    """`answer_id` is the request's id when the message is a request with a valid id, else None (null); responses
    are never answered, nor are notifications whose method or params are wrong."""
    reader = MessageReader(remember_requests=False)
    big = 2**64
    cases = [  # line, code, answer_id, answered
        ("{nope", KnownErrorCode.PARSE_ERROR, None, True),
        ("[1]", KnownErrorCode.INVALID_REQUEST, None, True),
        ('"x"', KnownErrorCode.INVALID_REQUEST, None, True),
        (json.dumps({"jsonrpc": "1.0", "id": 7, "method": "session/list"}), KnownErrorCode.INVALID_REQUEST, 7, True),
        (
            json.dumps({"jsonrpc": "1.0", "id": [7], "method": "session/list"}),
            KnownErrorCode.INVALID_REQUEST,
            None,
            True,
        ),
        (_line(id="a", method=5), KnownErrorCode.INVALID_REQUEST, "a", True),
        (_line(id=big, method="session/list"), KnownErrorCode.INVALID_REQUEST, None, True),
        (_line(id=None, method="session/list"), KnownErrorCode.INVALID_REQUEST, None, True),
        (_line(id="p", method="session/list", params=3), KnownErrorCode.INVALID_REQUEST, "p", True),
        (_line(method="session/cancel", params=3), KnownErrorCode.INVALID_REQUEST, None, True),
        (_line(id=5), KnownErrorCode.INVALID_REQUEST, None, True),  # no method: nothing says 5 is a request's id
        (_line(id="t", method="session/teleport"), KnownErrorCode.METHOD_NOT_FOUND, "t", True),
        (_line(method="session/teleport"), KnownErrorCode.METHOD_NOT_FOUND, None, False),
        (_line(id=-3, method="session/new", params={}), KnownErrorCode.INVALID_PARAMS, -3, True),
        (_line(method="session/cancel", params={}), KnownErrorCode.INVALID_PARAMS, None, False),
        (_line(id=1, result={}), None, None, False),
        (_line(id=1, result={}, error={"code": 1, "message": "x"}), None, None, False),
        (json.dumps({"jsonrpc": "1.0", "id": 1, "result": {}}), None, None, False),  # shaped as a response
        (json.dumps({"id": 1, "error": {"code": 1, "message": "x"}}), None, None, False),
    ]
    for line, code, answer_id, answered in cases:
        for careful in (True, False):
            [found] = MessageReader(remember_requests=False, one_pass=not careful).read_line(line)
            assert isinstance(found, Invalid), (line, found)
            assert (found.code, found.answer_id, found.answered) == (code, answer_id, answered), (line, found)
    assert reader.read_line(_line(id=1, method="session/list"))[0].id == 1


def test_strict_json_refuses_what_json_cannot_write_back_and_the_default_reads_it():
    """The validator reads 1e999 as the JSON number it is; a peer that must answer in JSON refuses it (-32700).
    Only JSON whitespace makes a line blank when strict; other white space is text that is not JSON."""
    huge = _line(id=1, method="session/list", params={"_meta": {"n": "HUGE"}}).replace('"HUGE"', "1e999")
    [lenient] = MessageReader().read_line(huge)
    assert isinstance(lenient, Request) and lenient.params.field_meta == {"n": float("inf")}
    strict = MessageReader(strict_json=True)
    [refused] = strict.read_line(huge)
    assert isinstance(refused, Invalid) and refused.code == KnownErrorCode.PARSE_ERROR, refused
    assert "1e999" in refused.problems[0] and refused.answer_id is None
    assert MessageReader().read_line("\x0c") == [] and strict.read_line(" \t\r") == []
    [form_feed] = strict.read_line("\x0c")
    assert isinstance(form_feed, Invalid) and form_feed.code == KnownErrorCode.PARSE_ERROR


def test_keep_raw_hands_back_the_parsed_message_with_each_kind():
    reader = MessageReader(keep_raw=True)
    prompt = {"sessionId": "s", "prompt": [{"type": "text", "text": "a\ud800"}], "_meta": {"n": 1.0}}
    [request] = reader.read_line(_line(id="r", method="session/prompt", params=prompt))
    assert isinstance(request, Request) and isinstance(request.params, models.PromptRequest)
    assert request.raw == {"jsonrpc": "2.0", "id": "r", "method": "session/prompt", "params": prompt}
    assert type(request.raw["params"]["_meta"]["n"]) is float  # the value as sent, not as the model holds it
    [answer] = reader.read_line(_line(id="r", result={"messageId": "m"}))
    assert isinstance(answer, Response) and answer.raw["result"] == {"messageId": "m"}
    [refused] = reader.read_line(_line(id="x", method="session/new", params={"cwd": 5}))
    assert isinstance(refused, Invalid) and refused.raw["params"] == {"cwd": 5}
    assert MessageReader().read_line(_line(id="y", method="session/list"))[0].raw is None


def test_ignore_keys_reads_a_keyed_request_as_a_peer_that_knows_no_keys():
    """The key parameter is taken out unchecked: a malformed key is not a problem, and nothing sees it."""
    params = {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}], "idempotencyKey": ""}
    line = _line(id=1, method="session/prompt", params=params)
    [refused] = MessageReader().read_line(line)
    assert isinstance(refused, Invalid) and refused.code == KnownErrorCode.INVALID_PARAMS
    [read] = MessageReader(ignore_keys=True, keep_raw=True).read_line(line)
    assert isinstance(read, Request) and read.params.idempotency_key is None
    assert "idempotencyKey" not in read.raw["params"] and read.raw["params"]["sessionId"] == "s"
    [note] = MessageReader(ignore_keys=True).read_line(_line(method="session/cancel", params={"sessionId": "s"}))
    assert isinstance(note, Notification)
