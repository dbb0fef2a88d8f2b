"""What an idempotency key costs the reference Agent end to end: keyed against unkeyed `session/prompt`s over stdio.

One Agent process per side (`python -m acp_v2_runtime.reference_agent`, each with a new SQLite file of its own),
started, initialized and given a session before the clock starts. The client works request-response, as a user's
editor does: it sends one `session/prompt` and reads until the Agent has answered it and finished the turn it
started (its `agent_message`, then the session's `idle` state), then sends the next. A round is a batch of such
prompts on one side; the two sides take turns, round by round. Both send the same prompt (a text block and a
resource link) with fresh JSON-RPC ids; the keyed side adds a fresh `idempotencyKey` (a UUID string) to each.
Every line is made before the clock starts. Goal: the keyed side completes at least 0.9 times as many prompts per
second."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import IO, Any

from .common import Ratio, interleaved

GOAL = 0.9
BATCH = 20
ROUNDS = 61
PROMPT = [
    {"type": "text", "text": "Rename load_config to load_settings everywhere."},
    {"type": "resource_link", "uri": "file:///home/user/project/config.py", "name": "config.py"},
]
INITIALIZE = {"protocolVersion": 2, "info": {"name": "bench", "version": "1"}}


class _Agent:
    """One reference Agent process with an open session, driven by whole lines of bytes."""

    def __init__(self, db: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "acp_v2_runtime.reference_agent", "--db", str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        self.stdin: IO[bytes] = self.proc.stdin  # type: ignore[assignment]
        self.stdout: IO[bytes] = self.proc.stdout  # type: ignore[assignment]
        self._call("initialize", INITIALIZE, "init")
        self.session = self._call("session/new", {"cwd": "/", "mcpServers": []}, "new")["sessionId"]

    def _call(self, method: str, params: dict[str, Any], rid: str) -> Any:
        self.stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode() + b"\n")
        self.stdin.flush()
        while line := self.stdout.readline():
            message = json.loads(line)
            if message.get("id") == rid and "method" not in message:
                if "result" not in message:
                    raise RuntimeError(f"the Agent refused {method}: {message.get('error')}")
                return message["result"]
        raise RuntimeError(f"the Agent exited before answering {method}")

    def prompts(self, count: int, *, keyed: bool) -> list[bytes]:
        """`count` prompt lines with fresh ids (and fresh keys when `keyed`), joined into batches later."""
        lines = []
        for _ in range(count):
            params: dict[str, Any] = {"sessionId": self.session, "prompt": PROMPT}
            if keyed:
                params["idempotencyKey"] = str(uuid.uuid4())
            request = {"jsonrpc": "2.0", "id": f"p-{uuid.uuid4().hex}", "method": "session/prompt", "params": params}
            lines.append(json.dumps(request).encode() + b"\n")
        return lines

    def turns(self, lines: list[bytes]) -> None:
        """Send each prompt once the previous one is answered and the turn it started is over."""
        for line in lines:
            self.exchange(line, 1)

    def exchange(self, batch: bytes, count: int) -> None:
        """Send `count` prompts at once; return when each is answered and the work they started is done."""
        self.stdin.write(batch)
        self.stdin.flush()
        answered = worked = 0
        idle = False
        while not (answered == count and worked == count and idle):
            line = self.stdout.readline()
            if not line:
                raise RuntimeError("the Agent exited during the benchmark")
            message = json.loads(line)
            if "method" not in message:
                if "result" not in message:
                    raise RuntimeError(f"the Agent refused a prompt: {message.get('error')}")
                answered += 1
                continue
            update = message["params"]["update"]
            kind = update["sessionUpdate"]
            worked += kind == "agent_message"
            if kind == "state_update":
                idle = update["state"] == "idle"

    def close(self) -> None:
        self.stdin.close()
        self.proc.wait(timeout=30)


def run() -> list[Ratio]:
    with tempfile.TemporaryDirectory() as tmp:
        keyed, plain = _Agent(Path(tmp) / "keyed.db"), _Agent(Path(tmp) / "plain.db")
        try:
            # One warm-up round each (first statements, caches), then fresh lines for every measured round.
            keyed.turns(keyed.prompts(BATCH, keyed=True))
            plain.turns(plain.prompts(BATCH, keyed=False))
            keyed_rounds = iter([keyed.prompts(BATCH, keyed=True) for _ in range(ROUNDS)])
            plain_rounds = iter([plain.prompts(BATCH, keyed=False) for _ in range(ROUNDS)])
            ours, reference = interleaved(
                lambda: keyed.turns(next(keyed_rounds)), lambda: plain.turns(next(plain_rounds)), rounds=ROUNDS
            )
        finally:
            keyed.close()
            plain.close()
    name = (
        "reference Agent over stdio: keyed vs unkeyed session/prompt (text + resource link; one process per side; "
        "request-response, each prompt answered and its turn over before the next), prompts/s"
    )
    return [Ratio(name, BATCH / ours, BATCH / reference, "prompts/s", GOAL, True)]
