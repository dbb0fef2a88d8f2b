"""What an idempotency key costs the reference Agent end to end: keyed against unkeyed `session/prompt`s over stdio.

Four Agent processes per side (`python -m acp_v2_runtime.reference_agent`, each with a new SQLite file of its
own), started, initialized and given a session before the clock starts; a side's rounds go to its processes in
turn. The client works request-response, as a user's
editor does: it sends one `session/prompt` and reads until the Agent has answered it and finished the turn it
started (its `agent_message`, then the session's `idle` state), then sends the next. A round is a batch of such
prompts on each side, the two batches in an order drawn per round (`paired`). Both send the same prompt (a text
block and a resource link) with fresh JSON-RPC ids; the keyed side adds a fresh `idempotencyKey` (a UUID string)
to each. Every line is made before the clock starts. Goal: the keyed side completes at least 0.9 times as many
prompts per second."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from .common import Ratio
from .paired import shuffled_pairs

GOAL = 0.9
BATCH = 20
ROUNDS = 128  # a median over this many pairs moves by a few hundredths from run to run on a shared machine
PROCESSES = 4
# Every Agent runs on the same processor, so that where the system would place each one cannot favour a side.
CPU = max(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
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
        if CPU is not None:
            os.sched_setaffinity(self.proc.pid, {CPU})
        self.stdin: IO[bytes] = self.proc.stdin  # type: ignore[assignment]
        self.stdout: IO[bytes] = self.proc.stdout  # type: ignore[assignment]
        self.session = ""

    def open(self) -> None:
        """Initialize the connection and open the session that every prompt goes to."""
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
        # Several processes per side, started together: where the system places a process can change its speed by
        # a quarter for its whole life here (measured with both sides unkeyed), so each side's rounds go to its
        # processes in turn and the median sees them all.
        keyed = [_Agent(Path(tmp) / f"keyed-{n}.db") for n in range(PROCESSES)]
        plain = [_Agent(Path(tmp) / f"plain-{n}.db") for n in range(PROCESSES)]
        try:
            for agent in keyed + plain:
                agent.open()
                # One warm-up round each (first statements, caches), then fresh lines for every measured round.
                agent.turns(agent.prompts(BATCH, keyed=agent in keyed))
            keyed_rounds = iter([(a, a.prompts(BATCH, keyed=True)) for a in keyed * (ROUNDS // PROCESSES + 1)])
            plain_rounds = iter([(a, a.prompts(BATCH, keyed=False)) for a in plain * (ROUNDS // PROCESSES + 1)])

            def next_round(rounds: Iterator[tuple[_Agent, list[bytes]]]) -> None:
                agent, lines = next(rounds)
                agent.turns(lines)

            ours, reference = shuffled_pairs(
                lambda: next_round(keyed_rounds), lambda: next_round(plain_rounds), rounds=ROUNDS
            )
        finally:
            for agent in keyed + plain:
                agent.close()
    name = (
        f"reference Agent over stdio: keyed vs unkeyed session/prompt (text + resource link; {PROCESSES} processes "
        "per side, taking rounds in turn; request-response, each prompt answered and its turn over before the "
        "next), prompts/s"
    )
    return [Ratio(name, BATCH / ours, BATCH / reference, "prompts/s", GOAL, True)]
