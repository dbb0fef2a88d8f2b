"""Only the protocol's member names are read from the wire (issue 35, item 1).

A member spelled as the Python attribute (`session_id`, `idempotency_key`) is an unknown field like any other: kept
and written back as it came, never taken for the protocol's member. Python code still builds models by attribute
name. The names here come from the models themselves (each field's alias), the methods from the protocol module.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from acp_v2_runtime.validate import validate_lines
from acp_v2_schema import models
from acp_v2_schema import protocol as M
from acp_v2_schema.protocol import KnownErrorCode
from acp_v2_schema.reader import KEY_PARAMS, ROUTES, Invalid, MessageReader, Request
from pydantic import ValidationError

PROMPT_TYPE = getattr(models, ROUTES[(M.SESSION_PROMPT, "request")].params or "")
KEY = KEY_PARAMS[M.SESSION_PROMPT]


def _attribute(model: type, wire: str) -> str:
    """The Python attribute of the member `wire` of `model` (the name a snake_case sender would use)."""
    (name,) = [n for n, f in model.model_fields.items() if f.alias == wire]
    assert name != wire, "the member has no other spelling: nothing to test"
    return name


SESSION = "sessionId"
SNAKE_SESSION = _attribute(PROMPT_TYPE, SESSION)
SNAKE_KEY = _attribute(PROMPT_TYPE, KEY)
TEXT = [{"type": "text", "text": "hi"}]


def _line(**message: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", **message})


def test_a_prompt_spelt_in_python_names_lacks_its_session_id():
    snake = {SNAKE_SESSION: "s", "prompt": TEXT, SNAKE_KEY: "k"}
    with pytest.raises(ValidationError) as caught:
        PROMPT_TYPE.model_validate_json(json.dumps(snake))
    assert any(e["loc"] == (SESSION,) and e["type"] == "missing" for e in caught.value.errors())
    with pytest.raises(ValidationError):
        PROMPT_TYPE.model_validate(snake)


def test_a_python_name_beside_the_wire_names_is_an_unknown_member_kept_as_sent():
    sent = {SESSION: "s", "prompt": TEXT, SNAKE_KEY: "k"}
    for read in (PROMPT_TYPE.model_validate_json(json.dumps(sent)), PROMPT_TYPE.model_validate(sent)):
        assert getattr(read, SNAKE_KEY) is None  # unkeyed, as the protocol reads it
        assert read.model_extra == {SNAKE_KEY: "k"}
        assert read.model_salvaged == ()
        assert read.model_dump(mode="json", by_alias=True, exclude_unset=True) == sent  # written back unchanged


def test_a_salvageable_field_in_its_python_name_is_unknown_not_salvaged():
    """`_meta` is salvageable (default-on-error); its attribute name on the wire is just another member."""
    meta = _attribute(PROMPT_TYPE, "_meta")
    sent = {SESSION: "s", "prompt": TEXT, meta: 5}
    read = PROMPT_TYPE.model_validate_json(json.dumps(sent))
    assert read.model_salvaged == () and read.model_extra == {meta: 5}
    assert read.model_dump(mode="json", by_alias=True, exclude_unset=True) == sent


def test_python_code_still_builds_models_by_attribute_name():
    built = PROMPT_TYPE(**{SNAKE_SESSION: "s", "prompt": TEXT, SNAKE_KEY: "k"})
    dumped = built.model_dump(mode="json", by_alias=True, exclude_unset=True)
    assert dumped[SESSION] == "s" and dumped[KEY] == "k" and SNAKE_SESSION not in dumped


def test_a_tag_in_its_python_name_does_not_select_a_variant():
    update_type = getattr(models, ROUTES[(M.SESSION_UPDATE, "notification")].params or "")
    chunk = {"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": {"type": "text", "text": "x"}}
    good = {SESSION: "s", "update": chunk}
    update_type.model_validate(good)
    snake_tag = {"session_update" if k == "sessionUpdate" else k: v for k, v in chunk.items()}
    with pytest.raises(ValidationError):
        update_type.model_validate({SESSION: "s", "update": snake_tag})


def test_the_reader_answers_a_prompt_without_its_session_id_with_invalid_params_and_its_id():
    line = _line(id=7, method=M.SESSION_PROMPT, params={SNAKE_SESSION: "s", "prompt": TEXT, SNAKE_KEY: "k"})
    for reader in (MessageReader(), MessageReader(strict_json=True, keep_raw=True), MessageReader(one_pass=False)):
        [found] = reader.read_line(line)
        assert isinstance(found, Invalid), found
        assert found.code == KnownErrorCode.INVALID_PARAMS and found.answer_id == 7 and found.answered
        assert any(SESSION in problem for problem in found.problems), found.problems


def test_a_notification_in_python_names_is_invalid_and_never_answered():
    cancel_type = getattr(models, ROUTES[(M.SESSION_CANCEL, "notification")].params or "")
    snake = _attribute(cancel_type, SESSION)
    [found] = MessageReader().read_line(_line(method=M.SESSION_CANCEL, params={snake: "s"}))
    assert isinstance(found, Invalid) and found.code == KnownErrorCode.INVALID_PARAMS
    assert not found.answered and found.answer_id is None


def test_the_reader_keeps_a_python_named_key_as_an_unknown_member():
    line = _line(id=8, method=M.SESSION_PROMPT, params={SESSION: "s", "prompt": TEXT, SNAKE_KEY: "k"})
    [found] = MessageReader().read_line(line)
    assert isinstance(found, Request) and getattr(found.params, SNAKE_KEY) is None
    assert found.params.model_extra == {SNAKE_KEY: "k"}


def test_the_validator_reports_a_prompt_in_python_names():
    lines = [_line(id=1, method=M.SESSION_PROMPT, params={SNAKE_SESSION: "s", "prompt": TEXT, SNAKE_KEY: "k"})]
    found = [p for p in validate_lines(lines) if not p.warning]
    assert len(found) == 1 and found[0].line == 1 and SESSION in found[0].message, found
