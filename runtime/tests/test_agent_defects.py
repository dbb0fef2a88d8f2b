"""The reference Agent's defects of issue 26, one regression test each: any kind of stdin, no non-JSON byte on
stdout, a storage fault or a locked database ends a request or a turn as the spec says and never blocks the
connection, InvalidParamsErrorData on key errors, lone surrogates as text, ids within the spec's range, numbers
compared by value in a retry, `replayFrom` as the spec defines it, and `--lease` checked.
"""

from __future__ import annotations

import asyncio
import gc
import io
import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from acp_v2_schema.protocol import KnownErrorCode as Code
from acp_v2_schema.reader import check
from acp_v2_schema.retry import IDEMPOTENCY_KEY_MAX_LENGTH
from agent_client import INITIALIZE, RawAgent, agent_command, environment, start_session

from acp_v2_runtime import reference_agent
from acp_v2_runtime.reference_agent import Agent
from acp_v2_runtime.reference_agent.bounds import LOCK_WAIT_SECONDS

PROMPT = [{"type": "text", "text": "hello"}]


def line(**members: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **members}).encode()


def strict_json(raw: bytes) -> Any:
    """`raw` parsed as JSON proper: NaN and Infinity, which Python's parser takes, are refused."""

    def refuse(name: str) -> Any:
        raise AssertionError(f"the Agent wrote {name}, which is not JSON: {raw[:200]!r}")

    return json.loads(raw, parse_constant=refuse)


@pytest.fixture
def agent(tmp_path):
    process = RawAgent(tmp_path / "agent.db")
    try:
        yield process
    finally:
        process.kill()


# -- stdin of any kind ---------------------------------------------------------------------------------------------


def _run(tmp_path: Path, stdin: Any, **extra: Any) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        agent_command(tmp_path / "agent.db"),
        stdin=stdin,
        capture_output=True,
        env=environment(),
        timeout=30,
        check=False,
        **extra,
    )


def test_stdin_from_a_regular_file_is_read_to_its_end(tmp_path):
    source = tmp_path / "input.ndjson"
    source.write_bytes(line(id=1, method="initialize", params=INITIALIZE) + b"\n" + line(id=2, method="session/list"))
    with source.open("rb") as stdin:
        done = _run(tmp_path, stdin)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    answers = [strict_json(raw) for raw in done.stdout.splitlines()]
    assert [a["id"] for a in answers] == [1, 2] and all("result" in a for a in answers), answers


def test_stdin_from_dev_null_ends_at_once(tmp_path):
    started = time.monotonic()
    done = _run(tmp_path, subprocess.DEVNULL)
    assert done.returncode == 0 and done.stdout == b"" and done.stderr == b"", done.stderr
    assert time.monotonic() - started < 20


def test_closed_stdin_ends_at_once(tmp_path):
    done = _run(tmp_path, None, preexec_fn=lambda: os.close(0))
    assert done.returncode == 0 and done.stderr == b"", done.stderr


# -- never a non-JSON byte -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("number", ["1e999", "-1e999", "1" * 400 + ".0"], ids=["1e999", "-1e999", "400-digits"])
def test_a_number_beyond_a_float_is_a_parse_error_and_never_written_back(agent, number):
    """Non-finite numbers are refused with -32700 (a float cannot hold them and JSON has no infinity), so nothing
    of the prompt is stored: neither the live answer nor a replay can carry `Infinity`."""
    session_id = start_session(agent)
    block = json.dumps({"type": "text", "text": "big", "_meta": {"n": 0}}).replace("0}", number + "}")
    raw = b'{"jsonrpc":"2.0","id":"inf","method":"session/prompt","params":{"sessionId":"%s","prompt":[%s]}}' % (
        session_id.encode(),
        block.encode(),
    )
    agent.send(raw)
    agent.send(
        line(
            id="replay",
            method="session/resume",
            params={"sessionId": session_id, "cwd": "/", "mcpServers": [], "replayFrom": {"type": "start"}},
        )
    )
    seen = []
    while True:
        raw_line = agent.lines.get(timeout=30)
        assert raw_line is not None
        message = strict_json(raw_line)
        seen.append(message)
        if message.get("id") == "replay":
            break
    (answer,) = [m for m in seen if "error" in m]
    assert answer["id"] is None and answer["error"]["code"] == Code.PARSE_ERROR, answer
    assert not [m for m in seen if m.get("params", {}).get("update", {}).get("sessionUpdate") == "user_message"]


def test_a_stored_value_json_cannot_hold_is_never_written(tmp_path):
    """A database written before the check (a prompt stored with `Infinity` in it) is replayed without a non-JSON
    byte: the message that cannot be written is left out, and the request is still answered."""

    async def scenario() -> list[dict[str, Any]]:
        harness = _Harness(tmp_path / "agent.db")
        session_id = (await harness.call("new", "session/new", {"cwd": "/", "mcpServers": []}))["result"]["sessionId"]
        with harness.agent.store.transaction() as conn:
            conn.execute(
                "INSERT INTO ref_messages (session_id, message_id, role, content) VALUES (?, 'm-old', 'user', ?)",
                (session_id, '[{"type": "text", "text": "old", "_meta": {"n": Infinity}}]'),
            )
        params = {"sessionId": session_id, "cwd": "/", "mcpServers": [], "replayFrom": {"type": "start"}}
        answer = await harness.call("resume", "session/resume", params)
        assert "result" in answer, answer
        return harness.messages()  # each line parsed strictly

    messages = asyncio.run(scenario())
    assert not [m for m in messages if m.get("params", {}).get("update", {}).get("messageId") == "m-old"]


# -- storage faults ------------------------------------------------------------------------------------------------


class _Harness:
    """A reference Agent driven in this process, so that its connection's storage can be made to fail."""

    def __init__(self, db: Path) -> None:
        self.agent = Agent(str(db), ignore_keys=False, lease=30.0, crash_after=None)
        self.out = io.BytesIO()
        self.agent.out = self.out  # type: ignore[assignment]
        self.agent.closed = False

    def messages(self) -> list[dict[str, Any]]:
        return [strict_json(raw) for raw in self.out.getvalue().splitlines()]

    async def call(self, rid: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.agent.receive(line(id=rid, method=method, params=params))
        await asyncio.wait_for(self.agent.requests[rid], 30) if rid in self.agent.requests else None
        (answer,) = [m for m in self.messages() if m.get("id") == rid and "method" not in m]
        return answer


def _storage_fault_scenario(db: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[Any]]:
    unhandled: list[Any] = []

    async def scenario() -> tuple[list[dict[str, Any]], Agent]:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: unhandled.append(context))
        harness = _Harness(db)
        conn = harness.agent.store.connection()
        session_id = (await harness.call("new", "session/new", {"cwd": "/", "mcpServers": []}))["result"]["sessionId"]
        # A full disk: the database may not grow by a page, and a large prompt needs many.
        (pages,) = conn.execute("PRAGMA page_count").fetchone()
        conn.execute(f"PRAGMA max_page_count = {pages}")
        big = [{"type": "text", "text": "x" * 200_000}]
        params = {"sessionId": session_id, "prompt": big, "idempotencyKey": "k-full"}
        full = await harness.call("full", "session/prompt", params)
        conn.execute("PRAGMA max_page_count = 1073741823")
        again = await harness.call("again", "session/prompt", params)  # the key stayed unused
        # A storage error while the turn stores its answer: the prompt goes in, the turn's own write fails (a
        # trigger of this connection alone refuses the Agent's message).
        worker = harness.agent.active[session_id].worker
        if worker is not None:
            await worker
        conn.execute(
            "CREATE TEMP TRIGGER refuse_answers BEFORE INSERT ON ref_messages WHEN NEW.role = 'agent' "
            "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
        )
        ok = await harness.call("ok", "session/prompt", {"sessionId": session_id, "prompt": PROMPT})
        worker = harness.agent.active[session_id].worker
        assert worker is not None
        await asyncio.wait_for(worker, 30)
        conn.execute("DROP TRIGGER refuse_answers")
        return [full, again, ok], harness.messages()

    answers, messages = asyncio.run(scenario())
    gc.collect()
    return answers, messages, unhandled


def test_storage_errors_end_the_request_or_the_turn_with_an_error_and_leave_nothing_running(tmp_path):
    answers, messages, unhandled = _storage_fault_scenario(tmp_path / "agent.db")
    full, again, ok = answers
    assert full["error"]["code"] == Code.INTERNAL_ERROR, full
    assert "messageId" in again["result"] and "messageId" in ok["result"], (again, ok)
    states = [
        m["params"]["update"]
        for m in messages
        if m.get("params", {}).get("update", {}).get("sessionUpdate") == "state_update"
    ]
    last = states[-1]
    assert last["state"] == "idle" and last["stopReason"] == "error", states
    assert last["error"]["code"] == Code.INTERNAL_ERROR
    assert not check("UpdateSessionNotification", {"sessionId": "s", "update": last}, "params")[1]
    assert unhandled == [], unhandled  # no "Task exception was never retrieved", no other loop error


def test_a_locked_database_waits_briefly_without_blocking_the_connection(agent):
    session_id = start_session(agent)
    holder = sqlite3.connect(agent_db_path(agent), isolation_level=None, timeout=0)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    try:
        started = time.monotonic()
        agent.send(
            line(
                id="keyed",
                method="session/prompt",
                params={"sessionId": session_id, "prompt": PROMPT, "idempotencyKey": "k-lock"},
            )
        )
        agent.send(line(id="plain", method="session/prompt", params={"sessionId": session_id, "prompt": PROMPT}))
        agent.send(line(method="$/cancel_request", params={"requestId": "plain"}))
        agent.send(line(id="list", method="session/list", params={}))
        answered: dict[str, tuple[float, dict[str, Any]]] = {}
        while len(answered) < 3:
            message = agent.next_message(timeout=30)
            assert isinstance(message, dict)
            if message.get("id") in ("keyed", "plain", "list") and "method" not in message:
                answered[message["id"]] = (time.monotonic() - started, message)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    # Served while the lock was held: the listing at once, the cancelled prompt with -32800.
    assert answered["list"][0] < LOCK_WAIT_SECONDS / 2 and "result" in answered["list"][1]
    assert answered["plain"][0] < LOCK_WAIT_SECONDS / 2
    assert answered["plain"][1]["error"]["code"] == Code.REQUEST_CANCELLED
    # The keyed prompt waited a bounded, short time, then got the code the spec gives an unavailable store.
    elapsed, keyed = answered["keyed"]
    assert LOCK_WAIT_SECONDS * 0.9 <= elapsed < LOCK_WAIT_SECONDS + 5, elapsed
    assert keyed["error"]["code"] == Code.INTERNAL_ERROR and "locked" in keyed["error"]["message"]
    # Nothing was inserted, so the key is still unused and the same prompt goes in now.
    retry = agent.call("session/prompt", {"sessionId": session_id, "prompt": PROMPT, "idempotencyKey": "k-lock"}, "r")
    assert "messageId" in retry["result"], retry


def agent_db_path(agent: RawAgent) -> str:
    command = agent.proc.args
    assert isinstance(command, list)
    return str(command[command.index("--db") + 1])


# -- error data, text, ids, numbers --------------------------------------------------------------------------------
TOO_LONG = "x" * (IDEMPOTENCY_KEY_MAX_LENGTH + 1)  # one code point over the spec's bound


@pytest.mark.parametrize(
    ("key", "reason"),
    [("", "malformed-key"), (5, "malformed-key"), (TOO_LONG, "malformed-key"), ("\ud800", "malformed-key")],
    ids=["empty", "number", "too-long", "lone-surrogate"],
)
def test_key_errors_carry_invalid_params_error_data(agent, key, reason):
    session_id = start_session(agent)
    answer = agent.request("session/prompt", {"sessionId": session_id, "prompt": PROMPT, "idempotencyKey": key}, "k")
    assert answer["error"]["code"] == Code.INVALID_PARAMS
    data = answer["error"]["data"]
    assert data == {"param": "idempotencyKey", "reason": reason}, data
    assert not check("InvalidParamsErrorData", data, "data")[1]


@pytest.mark.parametrize("key", ["", "\ud800"], ids=["empty", "lone-surrogate"])
def test_a_malformed_key_is_refused_before_the_session_is_looked_up(agent, key):
    """Every malformed key is a params problem, found by the generated reader before any work: even for a session
    this connection never opened, the answer is -32602 with the key's error data, never -32002."""
    params = {"sessionId": "sess_never_opened", "prompt": PROMPT, "idempotencyKey": key}
    answer = agent.request("session/prompt", params, "early")
    assert answer["error"]["code"] == Code.INVALID_PARAMS, answer
    assert answer["error"]["data"] == {"param": "idempotencyKey", "reason": "malformed-key"}, answer


def test_a_reused_key_carries_key_reused(agent):
    session_id = start_session(agent)
    first = agent.request("session/prompt", {"sessionId": session_id, "prompt": PROMPT, "idempotencyKey": "k-r"}, "1")
    assert "result" in first
    other = [{"type": "text", "text": "something else"}]
    answer = agent.request("session/prompt", {"sessionId": session_id, "prompt": other, "idempotencyKey": "k-r"}, "2")
    assert answer["error"]["code"] == Code.INVALID_PARAMS
    assert answer["error"]["data"] == {"param": "idempotencyKey", "reason": "key-reused"}


def test_a_lone_surrogate_in_text_is_accepted_and_replayed(agent):
    session_id = start_session(agent)
    raw = (
        b'{"jsonrpc":"2.0","id":"s","method":"session/prompt","params":{"sessionId":"%s",'
        b'"prompt":[{"type":"text","text":"a\\ud800b"}],"_meta":{"\\udfff":"\\udc00"}}}' % session_id.encode()
    )
    answers = [m for m in agent.exchange(raw) if m.get("id") == "s"]
    assert len(answers) == 1 and "messageId" in answers[0]["result"], answers
    replay = {"sessionId": session_id, "cwd": "/", "mcpServers": [], "replayFrom": {"type": "start"}}
    replayed = agent.exchange(line(id="r", method="session/resume", params=replay))
    texts = [
        m["params"]["update"]["content"][0]["text"]
        for m in replayed
        if m.get("params", {}).get("update", {}).get("sessionUpdate") == "user_message"
    ]
    assert texts == ["a\ud800b"], texts


def test_an_error_in_a_line_with_a_lone_surrogate_names_no_column_of_another_text(agent):
    raw = (
        b'{"jsonrpc":"2.0","id":"c","method":"session/prompt","params":{"sessionId":"s",'
        b'"prompt":[{"type":5,"text":"\\ud800"}]}}'
    )
    (answer,) = agent.exchange(raw)
    assert answer["error"]["code"] == Code.INVALID_PARAMS
    message = answer["error"]["message"]
    assert "column" not in message and "surrogate" not in message and "hex escape" not in message, message


@pytest.mark.parametrize("request_id", [2**63, -(2**63) - 1, 10**30], ids=["2**63", "-2**63-1", "10**30"])
def test_ids_beyond_the_spec_range_are_refused_and_not_echoed(agent, request_id):
    (answer,) = agent.exchange(line(id=request_id, method="session/list", params={}))
    assert answer["id"] is None and answer["error"]["code"] == Code.INVALID_REQUEST, answer
    assert "range" in answer["error"]["message"]


@pytest.mark.parametrize("request_id", [2**63 - 1, -(2**63)], ids=["max", "min"])
def test_ids_at_the_ends_of_the_range_are_answered(agent, request_id):
    answer = agent.request("session/list", {}, request_id)
    assert "result" in answer


def test_a_retry_spelling_a_number_otherwise_is_the_same_prompt(agent):
    session_id = start_session(agent)
    first = [{"type": "text", "text": "n", "_meta": {"n": 1, "m": [100]}}]
    retry = [{"type": "text", "text": "n", "_meta": {"m": [1e2], "n": 1.0}}]
    a = agent.request("session/prompt", {"sessionId": session_id, "prompt": first, "idempotencyKey": "k-n"}, "1")
    b = agent.request("session/prompt", {"sessionId": session_id, "prompt": retry, "idempotencyKey": "k-n"}, "2")
    assert a["result"]["messageId"] == b["result"]["messageId"], (a, b)
    other = [{"type": "text", "text": "n", "_meta": {"n": 1.5, "m": [100]}}]
    c = agent.request("session/prompt", {"sessionId": session_id, "prompt": other, "idempotencyKey": "k-n"}, "3")
    assert c["error"]["code"] == Code.INVALID_PARAMS


# -- session/resume and replayFrom ---------------------------------------------------------------------------------


def _replayed(agent: RawAgent, session_id: str, **extra: Any) -> tuple[dict[str, Any], list[str]]:
    params = {"sessionId": session_id, "cwd": "/", "mcpServers": [], **extra}
    seen = agent.exchange(line(id="resume", method="session/resume", params=params))
    (answer,) = [m for m in seen if m.get("id") == "resume"]
    kinds = [m["params"]["update"]["sessionUpdate"] for m in seen if m.get("method") == "session/update"]
    return answer, kinds


def test_resume_replays_only_when_replay_from_asks(agent):
    session_id = start_session(agent)
    agent.call("session/prompt", {"sessionId": session_id, "prompt": PROMPT}, "p")
    agent.exchange(b"")  # let the turn finish
    for extra in ({}, {"replayFrom": None}):
        answer, kinds = _replayed(agent, session_id, **extra)
        assert "result" in answer and "user_message" not in kinds and "agent_message" not in kinds, (extra, kinds)
        assert kinds == ["state_update"], kinds
    answer, kinds = _replayed(agent, session_id, replayFrom={"type": "start"})
    assert "result" in answer and kinds[:2] == ["user_message", "agent_message"] and kinds[-1] == "state_update"


def test_resume_with_an_unknown_replay_kind_is_invalid_params(agent):
    session_id = start_session(agent)
    answer, kinds = _replayed(agent, session_id, replayFrom={"type": "message", "messageId": "m"})
    assert answer["error"]["code"] == Code.INVALID_PARAMS and kinds == [], (answer, kinds)
    assert answer["error"]["data"]["param"] == "replayFrom"


# -- --lease -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("lease", ["-5", "0", "nan", "inf", "-inf", "soon"])
def test_lease_must_be_a_positive_finite_number(tmp_path, lease):
    done = subprocess.run(
        agent_command(tmp_path / "agent.db", f"--lease={lease}"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=environment(),
        timeout=30,
        check=False,
    )
    assert done.returncode == 2, done
    assert b"argument --lease" in done.stderr and b"Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "agent.db").exists()  # refused before anything was made


def test_lease_parser_accepts_a_fraction():
    assert reference_agent._seconds("0.25") == 0.25


def test_a_cancel_read_right_behind_its_prompt_withdraws_it(agent):
    """A `$/cancel_request` read in the same chunk as its prompt, before the prompt's task ran, still withdraws it."""
    session_id = start_session(agent)
    hold = {"_meta": {reference_agent.HOOKS_KEY: {"holdInsert": True}}}
    params = {"sessionId": session_id, "prompt": PROMPT, "idempotencyKey": "k-early", **hold}
    agent.send(
        line(id="p", method="session/prompt", params=params)
        + b"\n"
        + line(method="$/cancel_request", params={"requestId": "p"})
    )  # one write: the Agent reads both lines before the prompt's task first runs
    while True:
        message = agent.next_message(timeout=30)
        assert isinstance(message, dict), message
        if message.get("id") == "p":
            break
        assert message.get("params", {}).get("update", {}).get("sessionUpdate") != "user_message", message
    assert message["error"]["code"] == Code.REQUEST_CANCELLED, message
    # Nothing was inserted: the key is unused, and the retry inserts the message now.
    retry = {"sessionId": session_id, "prompt": PROMPT, "idempotencyKey": "k-early"}
    answer = agent.call("session/prompt", retry, "r")
    inserted = answer["result"]["messageId"]
    while not any(
        m.get("params", {}).get("update", {}).get("messageId") == inserted for m in agent.seen if isinstance(m, dict)
    ):
        assert agent.next_message(timeout=30) is not None
