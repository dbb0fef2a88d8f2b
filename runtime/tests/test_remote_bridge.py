"""The stdio bridge (`python -m acp_v2_runtime.remote.bridge`): messages pass through unchanged, the Agent's own
error answers come out as they are, and a failure of the transport never comes out as an answer: the bridge ends
as a crashed Agent process would (status 3, no line for the request), or stays silent, so the kit reading it sees
"no answer", never "not inserted".

Each fault of the kit's fault proxy is made between the bridge and the reference Agent served on SQLite.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp_v2_schema import protocol as M
from acp_v2_schema.protocol import KnownErrorCode as Code

from acp_v2_runtime.conformance.network import Fault, running_proxy
from acp_v2_runtime.remote.bridge import TRANSPORT_FAILED

PATIENCE = 20.0
INITIALIZE = {"protocolVersion": 2, "info": {"name": "bridge-test", "version": "0"}, "capabilities": {}}


@pytest.fixture(scope="module")
def agent_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The reference Agent served on the remote transport, on an SQLite file."""
    db = tmp_path_factory.mktemp("bridge") / "agent.db"
    argv = [sys.executable, "-m", "acp_v2_runtime.reference_agent", "--listen", "127.0.0.1:0", "--db", str(db)]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    try:
        assert url.startswith("http"), "the served Agent did not print its URL"
        yield url
    finally:
        process.kill()
        process.wait(10)


class Bridged:
    """A bridge process to `url`, spoken to over its stdin and stdout as the kit speaks to an Agent."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[dict[str, Any]] = []

    @classmethod
    async def start(cls, url: str, profile: str = "http") -> Bridged:
        argv = [sys.executable, "-m", "acp_v2_runtime.remote.bridge", "--url", url, "--profile", profile]
        process = await asyncio.create_subprocess_exec(
            *argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        return cls(process)

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())

    async def answer(self, rid: Any, timeout: float = PATIENCE) -> dict[str, Any] | None:
        """The answer to `rid`, or None when the bridge's output ends first (or nothing comes in time)."""
        assert self.process.stdout is not None
        while True:
            try:
                line = await asyncio.wait_for(self.process.stdout.readline(), timeout)
            except asyncio.TimeoutError:
                return None
            if not line:
                return None
            message = json.loads(line)
            self.lines.append(message)
            if message.get("id") == rid and "method" not in message:
                return dict(message)

    async def ready_session(self) -> str:
        self.send({"id": 1, "method": M.INITIALIZE, "params": INITIALIZE})
        assert await self.answer(1) is not None
        self.send({"id": 2, "method": M.SESSION_NEW, "params": {"cwd": "/"}})
        got = await self.answer(2)
        assert got is not None and "result" in got, got
        return str(got["result"]["sessionId"])

    def prompt(self, rid: int, session: str, key: Any) -> None:
        params = {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}], "idempotencyKey": key}
        self.send({"id": rid, "method": M.SESSION_PROMPT, "params": params})

    async def end(self) -> tuple[int, str]:
        """Close stdin (if still open) and return the exit status and stderr."""
        assert self.process.stdin is not None
        if not self.process.stdin.is_closing():
            self.process.stdin.close()
        _, err = await asyncio.wait_for(self.process.communicate(), PATIENCE)
        return int(self.process.returncode or 0), err.decode()


def test_messages_and_the_agents_errors_pass_through(agent_url: str) -> None:
    async def scenario() -> None:
        bridge = await Bridged.start(agent_url)
        session = await bridge.ready_session()
        key = str(uuid.uuid4())
        bridge.prompt(3, session, key)
        first = await bridge.answer(3)
        bridge.prompt(4, session, key)  # a retry: the original messageId
        second = await bridge.answer(4)
        bridge.prompt(5, session, "")  # a malformed key: the Agent's own -32602 comes out as it is
        refused = await bridge.answer(5)
        status, _ = await bridge.end()
        assert first is not None and second is not None and first["result"] == second["result"]
        assert refused is not None and refused["error"]["code"] == Code.INVALID_PARAMS
        updates = [m for m in bridge.lines if m.get("method") == M.SESSION_UPDATE]
        assert updates, "the Agent's notifications came through"
        assert status == 0

    asyncio.run(scenario())


FAILING = [
    (Fault.POST_502, "http"),
    (Fault.CUT_STREAM_ABRUPT, "http"),
    (Fault.CUT_STREAM_CLEAN, "http"),
    (Fault.HOLD_POST_FORWARDED, "http"),
    (Fault.HOLD_POST_UNFORWARDED, "http"),
    (Fault.WS_CLOSE_AFTER_PROMPT, "websocket"),
]


@pytest.mark.parametrize(("fault", "profile"), FAILING, ids=[f"{f.value}-{p}" for f, p in FAILING])
def test_a_transport_failure_is_never_an_answer(agent_url: str, fault: Fault, profile: str) -> None:
    async def scenario() -> None:
        with running_proxy(agent_url, hold_limit=1.0) as proxy:
            bridge = await Bridged.start(proxy.url, profile)
            session = await bridge.ready_session()
            proxy.arm(fault, profile)
            bridge.prompt(3, session, str(uuid.uuid4()))
            answer = await bridge.answer(3)
            status, err = await bridge.end()
        assert answer is None, f"{fault.value}: the bridge made an answer of a transport failure: {answer}"
        assert status == TRANSPORT_FAILED, (status, err)
        assert "no answer given" in err

    asyncio.run(scenario())


def test_a_swallowed_answer_stays_unanswered(agent_url: str) -> None:
    async def scenario() -> None:
        with running_proxy(agent_url) as proxy:
            bridge = await Bridged.start(proxy.url)
            session = await bridge.ready_session()
            armed = proxy.arm(Fault.SWALLOW_ANSWER, "http")
            bridge.prompt(3, session, str(uuid.uuid4()))
            await asyncio.get_running_loop().run_in_executor(None, armed.wait, PATIENCE)
            answer = await bridge.answer(3, timeout=1.0)
            status, _ = await bridge.end()
        assert armed.message_id is not None, "the Agent answered; the proxy dropped it"
        assert answer is None
        assert status == 0  # stdin ended: a polite close

    asyncio.run(scenario())


def test_usage(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "acp_v2_runtime.remote.bridge"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "--url" in done.stderr
    bad = [sys.executable, "-m", "acp_v2_runtime.remote.bridge", "--url", "http://127.0.0.1:9/", "--cookie", "novalue"]
    done = subprocess.run(bad, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "NAME=VALUE" in done.stderr and "Traceback" not in done.stderr


def test_the_kit_runs_against_a_url(agent_url: str) -> None:
    """`conformance --url`: the kit's traces through the bridge, against the served Agent."""
    argv = [sys.executable, "-m", "acp_v2_runtime.conformance", "--url", agent_url, "--only", "retry-after-resume"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS retry-after-resume" in done.stdout
    both = subprocess.run([*argv, "--", "true"], capture_output=True, text=True, timeout=60)
    assert both.returncode == 2 and "not both" in both.stderr
