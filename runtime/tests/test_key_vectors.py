"""Every shared key vector against the runtime: the ledger's key check and the reference Agent on the wire.

The vectors (generated/conformance/idempotency-key.json) are what every language's validator is tested with; the
Agent must give each its `param` outcome: a valid key is used, null means no key, anything else is -32602.
"""

from __future__ import annotations

import json

import pytest
from acp_v2_schema.protocol import KnownErrorCode
from agent_client import INITIALIZE, ROOT, AgentProcess

from acp_v2_runtime.idempotency import InvalidKey, key_digest, validate_key
from acp_v2_runtime.idempotency.keys import checked_key, checked_key_digest

VECTORS = json.loads((ROOT / "generated" / "conformance" / "idempotency-key.json").read_text(encoding="utf-8"))
CASES = VECTORS["vectors"]
PROMPT = [{"type": "text", "text": "hello"}]


@pytest.mark.parametrize("vector", CASES, ids=[v["name"] for v in CASES])
def test_validate_key_agrees_with_the_vector(vector):
    if vector["param"] == "invalid-params":
        with pytest.raises(InvalidKey) as caught:
            validate_key(vector["value"])
        assert caught.value.code == KnownErrorCode.INVALID_PARAMS
        assert caught.value.problem.value == vector["reason"]
    elif vector["param"] == "no-key":
        assert validate_key(vector["value"]) is None
    else:
        assert validate_key(vector["value"]) == vector["value"]


@pytest.mark.parametrize("vector", CASES, ids=[v["name"] for v in CASES])
def test_checked_key_digest_is_validate_key_then_key_digest(vector):
    """The ledger's one-step check and digest accepts, refuses and digests exactly as the two steps do."""
    if vector["param"] == "invalid-params":
        with pytest.raises(InvalidKey) as caught:
            checked_key_digest(vector["value"])
        assert caught.value.problem.value == vector["reason"]
    elif vector["param"] == "no-key":
        assert checked_key_digest(vector["value"]) is None
    else:
        assert checked_key_digest(vector["value"]) == key_digest(vector["value"])


def test_checked_key_digest_takes_a_str_subclass_as_validate_key_does():
    class Key(str):
        pass

    assert checked_key_digest(Key("k")) == key_digest("k")
    with pytest.raises(InvalidKey):
        checked_key_digest(Key(""))


@pytest.mark.parametrize("vector", CASES, ids=[v["name"] for v in CASES])
def test_checked_key_is_validate_key(vector):
    """The memory store's quick check accepts and refuses exactly as the generated check does."""
    if vector["param"] == "invalid-params":
        with pytest.raises(InvalidKey) as caught:
            checked_key(vector["value"])
        assert caught.value.problem.value == vector["reason"]
    else:
        assert checked_key(vector["value"]) == validate_key(vector["value"])


@pytest.mark.parametrize("text", ["k", "é", "\U0001f600" * 3, "a\udc80", "\ud800"])
def test_checked_key_outside_ascii(text):
    """Past the ASCII fast path a key is valid exactly when it has a UTF-8 form, as the generated check says."""
    try:
        expected = validate_key(text)
    except InvalidKey:
        with pytest.raises(InvalidKey):
            checked_key(text)
    else:
        assert checked_key(text) == expected


def test_checked_key_gives_a_plain_str_for_a_subclass():
    class Key(str):
        def __hash__(self):
            return 0

    checked = checked_key(Key("k"))
    assert checked == "k" and type(checked) is str
    with pytest.raises(InvalidKey):
        checked_key(Key(""))


def test_reference_agent_answers_every_vector_as_it_says(tmp_path):
    agent = AgentProcess(tmp_path / "agent.db")
    try:
        assert "result" in agent.request("initialize", INITIALIZE)
        session = agent.request("session/new", {"cwd": "/", "mcpServers": []})["result"]["sessionId"]
        wrong = []
        for vector in CASES:
            params = {"sessionId": session, "prompt": PROMPT, "idempotencyKey": vector["value"]}
            answer = agent.request("session/prompt", params)
            assert answer is not None, f"the Agent exited on {vector['name']}"
            if vector["param"] == "invalid-params":
                ok = answer.get("error", {}).get("code") == KnownErrorCode.INVALID_PARAMS
            else:
                ok = "messageId" in answer.get("result", {})
                if ok and vector["param"] == "key":  # the same key again: the same message, not a second one
                    again = agent.request("session/prompt", params)
                    ok = again is not None and again.get("result") == answer["result"]
            if not ok:
                wrong.append(f"{vector['name']} ({vector['param']}): {answer}")
        assert not wrong, "\n".join(wrong)
    finally:
        agent.close()
