"""The real TypeScript SDK's ClientApp (sdk_client.ts) drives the reference Agent through a whole session, and the
SDK's zod validators accept every line on the wire, both ways. The wire is recorded by the client and read here:
a retry with the same key gets the first messageId, keys never come back, and `session/resume` replays history
only when `replayFrom` asks for it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp_v2_runtime.conformance import handshake_key, load_traces

from tests.interop.conftest import environment


@pytest.fixture(scope="module")
def report(built: Path, node: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    workdir = tmp_path_factory.mktemp("sdk-client")
    agent = [sys.executable, "-m", "acp_v2_runtime.reference_agent", "--db", str(workdir / "agent.db")]
    done = subprocess.run(
        [node, str(built / "sdk_client.js"), *agent],
        cwd=workdir,
        capture_output=True,
        text=True,
        env=environment(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == "", done.stdout[-3000:] + done.stderr[-3000:]
    found: dict[str, Any] = json.loads(done.stdout)
    found["messages"] = [(w["dir"], json.loads(w["line"])) for w in found["wire"]]
    return found


def answer_to(report: dict[str, Any], method: str, nth: int = 0) -> tuple[int, int]:
    """(index of the request, index of its answer) on the wire, for the nth request of `method`."""
    messages = report["messages"]
    requests = [
        i for i, (d, m) in enumerate(messages) if d == "client->agent" and m.get("method") == method and "id" in m
    ]
    start = requests[nth]
    rid = messages[start][1]["id"]
    end = next(
        i for i in range(start + 1, len(messages)) if "method" not in messages[i][1] and messages[i][1]["id"] == rid
    )
    return start, end


def user_messages_between(report: dict[str, Any], start: int, end: int) -> list[str]:
    return [
        m["params"]["update"]["messageId"]
        for d, m in report["messages"][start:end]
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "user_message"
    ]


def test_zod_accepts_every_line_on_the_wire_both_ways(report: dict[str, Any]):
    assert report["refused"] == []
    directions = {d for d, _ in report["messages"]}
    assert directions == {"client->agent", "agent->client"} and len(report["messages"]) > 30
    methods = {m.get("method") for _, m in report["messages"]}
    expected = {"initialize", "session/new", "session/prompt", "session/update", "session/cancel", "$/cancel_request"}
    assert expected | {"session/list", "session/resume", "session/close"} <= methods


def test_the_agent_offers_its_hooks_in_the_handshake(report: dict[str, Any]):
    offers = report["steps"]["initialize"]["_meta"][handshake_key()]["offers"]
    needs = load_traces()["needs"]
    # every hook, and perhaps names the runner now learns by protocol (storedSessions), which it checks too
    assert {name for name, need in needs.items() if need["from"] == "handshake"} <= set(offers) <= set(needs)


def test_a_retry_with_the_same_key_gets_the_first_message_id(report: dict[str, Any]):
    steps = report["steps"]
    assert steps["retry"] == steps["keyed"] != steps["unkeyed"]
    start, end = answer_to(report, "session/prompt", 2)  # the retry: nothing new is inserted
    assert user_messages_between(report, start, end) == []
    sent = report["messages"][start][1]["params"]
    assert sent["idempotencyKey"] == steps["key"]  # the SDK put the key on the wire as it was given


def test_updates_report_the_insertion_and_the_work(report: dict[str, Any]):
    assert report["steps"]["updates"][0] == "user_message" and report["steps"]["updates"][-1] == "state_update"
    assert "agent_message" in report["steps"]["updates"]


def test_session_cancel_ends_a_running_turn_as_cancelled(report: dict[str, Any]):
    assert report["steps"]["cancelledTurn"] == "cancelled"


def test_a_held_prompt_is_withdrawn_by_cancel_request(report: dict[str, Any]):
    assert report["steps"]["cancelRequest"] == -32800


def test_keys_never_come_back_from_the_agent(report: dict[str, Any]):
    key = report["steps"]["key"]
    for direction, message in report["messages"]:
        if direction == "agent->client":
            assert key not in json.dumps(message, ensure_ascii=False), message


def test_list_shows_the_session(report: dict[str, Any]):
    assert [s["sessionId"] for s in report["steps"]["list"]["sessions"]] == [report["steps"]["sessionId"]]


def test_resume_without_replay_from_replays_nothing(report: dict[str, Any]):
    start, end = answer_to(report, "session/resume", 0)
    assert user_messages_between(report, start, end) == []  # replayFrom omitted: no replay


def test_resume_with_replay_from_start_replays_the_history(report: dict[str, Any]):
    start, end = answer_to(report, "session/resume", 1)
    steps = report["steps"]
    replayed = user_messages_between(report, start, end)
    # the unkeyed, the keyed and the long-work prompts; the one withdrawn by $/cancel_request never went in
    assert len(replayed) == 3 and replayed[:2] == [steps["unkeyed"], steps["keyed"]], replayed


def test_close_and_a_clean_exit(report: dict[str, Any]):
    assert report["steps"]["close"] == {} and report["agentExit"] == 0
