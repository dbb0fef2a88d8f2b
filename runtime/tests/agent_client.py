"""A minimal line-based JSON-RPC client for driving the reference Agent in tests."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
INITIALIZE = {"protocolVersion": 2, "info": {"name": "runtime-tests", "version": "1"}}
"""Valid `initialize` params (the Agent checks params with the generated models)."""


def agent_command(db: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "acp_v2_runtime.reference_agent", "--db", str(db), *extra]


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # keep generated/ free of caches (the packages are installed editable)
    return env


def run_history(kit: list[str], agent: list[str], *, timeout: float) -> subprocess.CompletedProcess[str]:
    """`python -m acp_v2_runtime.conformance history KIT -- AGENT`, its output captured; it never tracebacks."""
    done = subprocess.run(
        [sys.executable, "-m", "acp_v2_runtime.conformance", "history", *kit, "--", *agent],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=timeout,
        check=False,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done


class AgentProcess:
    """One reference Agent process; `request` waits for the answer, skipping notifications."""

    def __init__(self, db: Path, *extra: str) -> None:
        self.proc = subprocess.Popen(
            agent_command(db, *extra),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=environment(),
            text=True,
        )
        self.next_id = 0
        self.notifications: list[dict[str, Any]] = []

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The response message, or None when the Agent exited before answering."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}))
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()
        while line := self.proc.stdout.readline():
            message = json.loads(line)
            if message.get("id") == self.next_id and "method" not in message:
                return message
            self.notifications.append(message)
        return None

    def close(self) -> int:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        return self.proc.wait(timeout=30)


def start_session(agent: RawAgent) -> str:
    """Initialize a RawAgent and open a session on it; the session id."""
    assert "result" in agent.request("initialize", INITIALIZE, "init")
    return agent.request("session/new", {"cwd": "/", "mcpServers": []}, "new")["result"]["sessionId"]


class RawAgent:
    """A reference Agent driven with raw bytes: `exchange` sends one line and returns everything it caused.

    After the line it sends a `session/list` request with a fresh id (the fence) and collects the messages the
    Agent writes until the fence's answer; the Agent handles lines in order, so whatever the line caused that
    is answered at once comes before it. A reader thread keeps a wait from ever hanging the test.
    """

    FENCE = "session/list"

    def __init__(self, db: Path, *extra: str) -> None:
        self.proc = subprocess.Popen(
            agent_command(db, *extra),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment(),
        )
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.fences = 0
        self.seen: list[Any] = []  # every message read so far, in order

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def next_message(self, timeout: float = 30.0) -> dict[str, Any] | list[Any] | None:
        """The next message the Agent writes, parsed (every line it writes must be JSON); None at its end."""
        line = self.lines.get(timeout=timeout)
        if line is None:
            return None
        message = json.loads(line)
        self.seen.append(message)
        return message

    def exchange(self, line: bytes, timeout: float = 30.0) -> list[Any]:
        """Send `line`, then the fence; every message written before the fence's answer (which must come)."""
        self.send(line)
        self.fences += 1
        fence = f"fence-{self.fences}"
        self.send(json.dumps({"jsonrpc": "2.0", "id": fence, "method": self.FENCE, "params": {}}).encode())
        seen = []
        while True:
            message = self.next_message(timeout)
            assert message is not None, f"the Agent exited (status {self.proc.wait(timeout=30)})"
            if isinstance(message, dict) and message.get("id") == fence:
                assert "result" in message, message
                return seen
            seen.append(message)

    def request(self, method: str, params: Any, request_id: Any = "req") -> dict[str, Any]:
        """Send a well-formed request and return its answer (the one message with its id before the fence)."""
        line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode()
        answers = [m for m in self.exchange(line) if isinstance(m, dict) and m.get("id") == request_id]
        assert len(answers) == 1, answers
        return answers[0]

    def call(self, method: str, params: Any, request_id: Any, timeout: float = 30.0) -> dict[str, Any]:
        """Send a request and wait for its answer however long its work takes, skipping everything else."""
        self.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode())
        while True:
            message = self.next_message(timeout)
            assert message is not None, f"the Agent exited (status {self.proc.wait(timeout=30)})"
            if isinstance(message, dict) and message.get("id") == request_id and "method" not in message:
                return message

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=30)

    def kill(self) -> None:
        """End the process if a failed test left it running."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
