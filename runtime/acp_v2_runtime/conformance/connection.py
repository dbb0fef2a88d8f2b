"""One Agent process of a conformance trace: what it answered, what it notified, and what it got wrong.

Every line the Agent writes is checked as it arrives (`acp_v2_runtime.jsonrpc`): responses are kept by id,
notifications in order, and the first line that is not a valid message becomes `Connection.problem`, which
fails the next wait on the connection (and so the trace) with the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

from acp_v2_schema.protocol import KnownErrorCode as Code

from .. import jsonrpc


class TraceFailure(Exception):
    """What the runner saw instead of what the trace expects."""


class AgentNotStarted(Exception):
    """The Agent command could not be started at all (no such program, not executable)."""


@dataclass
class Connection:
    """One Agent process: responses by id, notifications in arrival order, and everything it wrote.

    `problem` is the first thing the Agent wrote that is not a valid JSON-RPC message (not JSON, too long, an
    error that is not an error object, a session/update whose params do not fit the generated model...); once
    set, every wait on this connection fails with it, so it becomes the FAIL reason of the trace.
    """

    name: str
    process: asyncio.subprocess.Process
    responses: dict[Any, jsonrpc.Response] = field(default_factory=dict)
    notifications: list[dict[str, Any]] = field(default_factory=list)
    consumed: set[int] = field(default_factory=set)
    output: list[str] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    readers: list[asyncio.Task[None]] = field(default_factory=list)
    sent: set[Any] = field(default_factory=set)  # ids of the requests written to this Agent
    problem: str | None = None
    last_error: str = ""  # the last line the Agent wrote on stderr, to say why it exited

    @classmethod
    async def start(cls, name: str, command: list[str]) -> Connection:
        try:
            process = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            raise AgentNotStarted(f"cannot start the Agent command {command[0]!r}: {exc.strerror or exc}") from None
        conn = cls(name, process)
        conn.readers = [asyncio.create_task(conn._read_stdout()), asyncio.create_task(conn._read_stderr())]
        return conn

    async def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        reader = jsonrpc.LineReader(self.process.stdout)
        try:
            while (line := await reader.next_line()) is not None:
                self._take(line)
                self._wake()
        except Exception as exc:  # a broken pipe or a runner bug: report it on the trace, never abort the run
            self._flag(f"reading the Agent's output failed ({type(exc).__name__}: {exc})")
        self._wake()

    def _flag(self, problem: str) -> None:
        if self.problem is None:
            self.problem = f"{problem} (on {self.name})"

    def _take(self, line: bytes | jsonrpc.Oversized) -> None:
        """Sort one line the Agent wrote into responses and notifications, or flag it as a problem."""
        if isinstance(line, jsonrpc.Oversized):
            self._flag(f"the Agent wrote {line}")
            return
        self.output.append(line.decode("utf-8", "replace"))
        if not line.strip(jsonrpc.JSON_WHITESPACE):
            return
        try:
            incoming = jsonrpc.classify(jsonrpc.parse_line(line))
        except jsonrpc.ParseError as exc:
            self._flag(f"the Agent wrote a line that is not JSON: {exc}")
            return
        except jsonrpc.InvalidMessage as exc:
            self._flag(f"the Agent wrote an invalid JSON-RPC message: {exc.reason}")
            return
        if isinstance(incoming, jsonrpc.Response):
            if incoming.id is None:
                assert incoming.error is not None  # a result with a null id is rejected by classify
                self._flag(f"the Agent answered error {incoming.error['code']} with a null id (it could not read us)")
            else:
                if incoming.id not in self.sent:
                    self._flag(f"the Agent answered id {incoming.id!r}, which no request on this connection had")
                elif incoming.id in self.responses:
                    self._flag(f"the Agent answered request {incoming.id!r} twice")
                else:
                    self.responses[incoming.id] = incoming
        elif incoming.id is not None:
            # A request from the Agent (permission, elicitation): these traces never expect one.
            self.write(jsonrpc.error(incoming.id, Code.METHOD_NOT_FOUND, "Method not found"))
        else:
            problems = jsonrpc.params_problems(incoming.method, incoming.kind, incoming.params)
            if problems:
                self._flag(f"the Agent sent {incoming.method} with invalid params: {problems[0]}")
                return
            self.notifications.append({"method": incoming.method, "params": incoming.params or {}})

    async def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        reader = jsonrpc.LineReader(self.process.stderr)
        with contextlib.suppress(Exception):
            while (line := await reader.next_line()) is not None:
                if isinstance(line, bytes):
                    self.output.append(line.decode("utf-8", "replace"))
                    if line.strip():
                        self.last_error = line.decode("utf-8", "replace").strip()

    def _wake(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    def write(self, message: dict[str, Any]) -> None:
        if self.process.stdin is None or self.process.stdin.is_closing():
            raise TraceFailure(f"connection {self.name} is closed")
        if "method" in message and "id" in message:
            self.sent.add(message["id"])
        self.process.stdin.write(jsonrpc.encode({"jsonrpc": "2.0", **message}))

    async def wait(self, found: Any, what: str, timeout: float) -> Any:
        """Wait until `found()` returns something other than None."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while (value := found()) is None:
            if self.problem is not None:
                raise TraceFailure(f"{what}: {self.problem}")
            if self.process.stdout is not None and self.process.stdout.at_eof() and self.process.returncode is not None:
                said = f": {self.last_error[:200]}" if self.last_error else ""
                raise TraceFailure(f"{what}: the Agent on {self.name} exited (status {self.process.returncode}){said}")
            left = deadline - loop.time()
            if left <= 0:
                raise TraceFailure(f"{what}: nothing within {timeout:g}s on {self.name}")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.changed.wait(), min(left, 0.5))
        return value

    async def close(self, *, kill: bool = False) -> None:
        if self.process.returncode is None:
            if kill:
                self.process.kill()
            elif self.process.stdin is not None:
                self.process.stdin.close()
            try:
                await asyncio.wait_for(self.process.wait(), 5)
            except asyncio.TimeoutError:
                self.process.kill()
                await self.process.wait()
        for reader in self.readers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(reader, 5)
