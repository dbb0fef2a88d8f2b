"""Each ambiguous failure of the remote transport made on purpose between a Client and an Agent, both ways:

- the SDK's own Client (sdk_client_remote.ts: createHttpStream / createWebSocketStream) against our reference Agent
  served by `python -m acp_v2_runtime.reference_agent --listen`;
- our RemoteClient (acp_v2_runtime.remote) against the SDK's AcpServer serving its keyed Agent (sdk_server.ts).

A fault proxy (acp_v2_runtime.conformance.network) stands between them, armed for the cell's one keyed prompt.
Then the Client opens a new connection, resumes the session and sends the prompt again with its key. Each cell
checks: the proxy made the fault (and, where the prompt reached the Agent, saw the answer the Agent gave and kept
it from the Client); the prompt ended with that original messageId; a resume on a fresh connection replays exactly
one user message of the prompt's text, with that id; and what the Client was told on the first attempt: the SDK
reports a JSON-RPC -32603 it makes up itself (or a closed connection, or nothing until the application's own
timeout), ours reports NoResponse and never ErrorResponse. The matrix of what each side saw is printed at the end
of the run (see conftest's `pytest_terminal_summary`).

One server process per side and one proxy per (direction, profile) serve every cell; the TypeScript is compiled
once per session. A fault that shows itself only by silence costs the Client's timeout (`QUIET_TIMEOUT`); the
others get a long one, so a slow machine makes no spurious timeout where the test expects another failure.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from acp_v2_runtime.client import ErrorResponse, NoResponse, SendFailure
from acp_v2_runtime.conformance.network import APPLIES_TO, Fault, RunningProxy, running_proxy
from acp_v2_runtime.conformance.network.faults import KILLS
from acp_v2_runtime.remote.client import RemoteClient

from tests.interop.remote.conftest import MATRIX

QUIET_TIMEOUT = 1.5
"""Seconds a Client waits for an answer in the cells where the fault is silence (swallowed answer, held POST)."""
TIMEOUT = 20.0
"""Seconds a Client waits elsewhere: a fault there announces itself, and a loaded machine must not look like one."""
WAIT = 30.0
"""Seconds the test waits for the proxy to have made the fault, after the Client is done."""
QUIET = {Fault.SWALLOW_ANSWER, Fault.HOLD_POST_FORWARDED, Fault.HOLD_POST_UNFORWARDED}

CELLS = [(fault, profile) for fault in Fault if fault not in KILLS for profile in APPLIES_TO[fault]]
"""Every fault but the node kills, which need a cluster to kill a node of (runtime/tests/test_history_remote.py)."""

SDK_TOLD: dict[Fault, tuple[str, int | None]] = {
    Fault.POST_502: ("error", -32603),  # the SDK's own -32603, with data {status: 502, body}
    Fault.CUT_STREAM_CLEAN: ("error", -32603),  # "ACP session SSE stream closed", made up by the SDK
    Fault.CUT_STREAM_ABRUPT: ("closed", None),  # the whole connection fails: the fetch body's "terminated"
    Fault.SWALLOW_ANSWER: ("timeout", None),  # the SDK would wait for ever; the application's timeout ends it
    Fault.HOLD_POST_FORWARDED: ("timeout", None),
    Fault.HOLD_POST_UNFORWARDED: ("timeout", None),
    Fault.WS_CLOSE_AFTER_PROMPT: ("closed", None),  # "ACP connection closed"
}
"""What the SDK's Client reports on the first attempt, per fault: never an error the Agent sent."""


@pytest.fixture(scope="module")
def proxies(sdk_agent_url: str, our_agent_url: str) -> Iterator[Callable[[str], RunningProxy]]:
    """One proxy per upstream for the whole module: `proxies(direction)`."""
    upstreams = {"sdk-client->our-agent": our_agent_url, "our-client->sdk-agent": sdk_agent_url}
    running: dict[str, RunningProxy] = {}
    contexts = []
    try:
        for direction, url in upstreams.items():
            context = running_proxy(url, hold_limit=WAIT)
            running[direction] = context.__enter__()
            contexts.append(context)
        yield running.__getitem__
    finally:
        for context in reversed(contexts):
            context.__exit__(None, None, None)


def _texts(messages: list[dict[str, Any]], text: str) -> list[dict[str, Any]]:
    return [message for message in messages if message["text"] == text]


def _check_proxy(fault: Fault, armed: Any) -> None:
    assert armed.wait(WAIT), f"the proxy never made {fault.value}"
    if fault is Fault.HOLD_POST_UNFORWARDED:
        assert armed.forwarded is False and armed.answer is None
    else:
        assert armed.forwarded is True
        assert armed.message_id is not None, f"the Agent's answer was not seen by the proxy: {armed.as_dict()}"


@pytest.mark.parametrize(("fault", "profile"), CELLS, ids=[f"{f.value}-{p}" for f, p in CELLS])
def test_sdk_client_against_our_agent(
    fault: Fault, profile: str, proxies: Callable[[str], RunningProxy], sdk_client: Callable[..., Any]
) -> None:
    proxy = proxies("sdk-client->our-agent")
    armed = proxy.arm(fault, profile)
    text = f"{fault.value} over {profile}, {uuid.uuid4()}"
    timeout = QUIET_TIMEOUT if fault in QUIET else TIMEOUT
    lines = sdk_client(proxy.url, profile, "--timeout", str(int(timeout * 1000)), "--attempts", "6", "--text", text)
    _check_proxy(fault, armed)
    failures = [line for line in lines if line["event"] == "failure"]
    answers = [line for line in lines if line["event"] == "answer"]
    final = next(line for line in lines if line["event"] == "final")
    replayed = _texts(final["userMessages"], text)
    original = armed.message_id or answers[-1]["messageId"]
    MATRIX.append(
        {
            "fault": fault.value,
            "profile": profile,
            "direction": "SDK client -> our Agent",
            "proxy": armed.told,
            "first": _sdk_told(failures[0]) if failures else "answered",
            "attempts": len(failures) + len(answers),
            "same": final["messageId"] == original,
            "replayed": len(replayed),
        }
    )
    assert failures and failures[0]["n"] == 1, f"the first attempt did not fail: {lines}"
    kind, code = SDK_TOLD[fault]
    assert (failures[0]["kind"], failures[0].get("code")) == (kind, code), failures[0]
    assert final["messageId"] == original, "the resend did not get the messageId of the first insertion"
    assert [message["messageId"] for message in replayed] == [original], final["userMessages"]


def _sdk_told(failure: dict[str, Any]) -> str:
    if failure["kind"] == "error":
        data = failure.get("data")
        status = f" (HTTP {data['status']})" if isinstance(data, dict) and "status" in data else ""
        return f"{failure['code']}{status}: {failure['message'][:40]}"
    if failure["kind"] == "closed":
        return f"connection closed: {failure['message'][:40]}"
    return "nothing until its own timeout"


@pytest.mark.parametrize(("fault", "profile"), CELLS, ids=[f"{f.value}-{p}" for f, p in CELLS])
def test_our_client_against_the_sdk_agent(fault: Fault, profile: str, proxies: Callable[[str], RunningProxy]) -> None:
    proxy = proxies("our-client->sdk-agent")
    armed = proxy.arm(fault, profile)
    text = f"{fault.value} over {profile}, {uuid.uuid4()}"
    timeout = QUIET_TIMEOUT if fault in QUIET else TIMEOUT
    told, message_id, replayed = asyncio.run(_our_client(proxy.url, profile, text, timeout))
    _check_proxy(fault, armed)
    original = armed.message_id or message_id
    MATRIX.append(
        {
            "fault": fault.value,
            "profile": profile,
            "direction": "our client -> SDK Agent",
            "proxy": armed.told,
            "first": told[0],
            "attempts": len(told),
            "same": message_id == original,
            "replayed": len(_texts(replayed, text)),
        }
    )
    assert told[0].startswith(NoResponse.__name__), f"the first attempt was not a NoResponse: {told}"
    assert not [seen for seen in told if seen.startswith(ErrorResponse.__name__)], told
    assert message_id == original, "the resend did not get the messageId of the first insertion"
    assert [message["messageId"] for message in _texts(replayed, text)] == [original], replayed


async def _our_client(url: str, profile: str, text: str, timeout: float) -> tuple[list[str], str, list[dict[str, Any]]]:
    """One keyed prompt through our RemoteClient: what each attempt was told, the messageId it ended with, and the
    user messages a resume on a fresh connection replays afterwards."""
    client = RemoteClient(url, profile=profile, timeout=timeout, max_attempts=6, base_delay=0.05, max_delay=0.2)
    told: list[str] = []
    send = client.resender.send

    async def recorded(method: str, params: dict[str, Any], request_id: int) -> Any:
        try:
            result = await send(method, params, request_id)
        except SendFailure as failure:
            if method == "session/prompt":
                told.append(f"{type(failure).__name__}: {str(failure)[:60]}")
            raise
        if method == "session/prompt":
            told.append("answered")
        return result

    client.resender.send = recorded
    async with client:
        session = await client.new_session(str(Path.cwd()))
        answer = await client.prompt(session["sessionId"], [{"type": "text", "text": text}])
    replayed: list[dict[str, Any]] = []

    def collect(method: str, params: Any) -> None:
        update = params.get("update", {}) if isinstance(params, dict) else {}
        if method == "session/update" and update.get("sessionUpdate") == "user_message":
            words = "".join(block.get("text", "") for block in update.get("content", []))
            replayed.append({"messageId": update.get("messageId"), "text": words})

    async with RemoteClient(url, profile=profile, timeout=TIMEOUT, on_notification=collect) as check:
        await check.resume_session(session["sessionId"], str(Path.cwd()), replayFrom={"type": "start"})
    return told, answer["messageId"], replayed


def test_the_bench_mode_of_the_sdk_client_measures_each_side(
    sdk_agent_url: str, our_agent_url: str, sdk_client: Callable[..., Any]
) -> None:
    """`make bench` (bench_remote) drives both servers with this mode; a short run keeps it from rotting unseen."""
    sides = ("--side", f"{our_agent_url}|keyed", "--side", f"{sdk_agent_url}|unkeyed")
    lines = sdk_client(our_agent_url, "http", "--bench", "1", "--batch", "2", "--warmup", "0", *sides)
    figures = [(line["target"], line["keyed"], line["promptsPerSecond"] > 0) for line in lines]
    assert figures == [(our_agent_url, True, True), (sdk_agent_url, False, True)]
