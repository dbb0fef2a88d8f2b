"""One Agent process of a conformance trace: what it answered, what it notified, and what it got wrong.

Every line the Agent writes is classified as it arrives by the generated reader (`acp_v2_schema.reader`, told of
each request the runner sends): responses are kept by id, with the problems of a result that does not fit its
method's type, notifications in order, and the first line that is not a valid message becomes
`Connection.problem`, which fails the next wait on the connection (and so the trace) with the reason; later lines
are still read, so that the answers sent after it are kept. So does a
key of the trace found in a `session/update` or a `session/list` result: the check walks the parsed values, so
escapes hide nothing.

What the runner holds stays bounded whatever the Agent writes: a line is at most the reader's `MAX_LINE_BYTES`,
the messages kept per connection at most `MAX_KEPT_MESSAGES` and `MAX_KEPT_BYTES`, and stderr is read as it comes
and only its last `STDERR_TAIL` bytes are kept (to say why an Agent exited).

The runner is a Client, so it answers what the Agent asks: `session/request_permission` gets an outcome by the
user's policy (`PERMISSION_POLICIES`), and every other request (`fs/*` and `terminal/*` included, which the
runner's `initialize` does not offer) gets -32601. A request that arrives after the runner closed the connection
is not answered, as on any Client that has gone; that is never a problem of the trace.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from acp_v2_schema import protocol as M
from acp_v2_schema.protocol import KnownErrorCode as Code
from acp_v2_schema.reader import ErrorResponse, Invalid, MessageReader, Notification, Request, Response, line_too_long

from .. import jsonrpc

MAX_KEPT_MESSAGES = 10_000
"""Messages one connection may write before the runner stops keeping them (and fails the trace)."""
MAX_KEPT_BYTES = 64 * 1024 * 1024
"""Bytes of messages one connection may write before the runner stops keeping them (and fails the trace)."""
STDERR_TAIL = 4096
"""The bytes of the Agent's stderr kept: its last line says why it exited."""
_CHUNK = 64 * 1024
PERMISSION_POLICIES = ("allow", "reject", "cancelled")
"""How the runner answers `session/request_permission`: the first option whose kind is allow_* (the default), the
first reject_* option, or the `cancelled` outcome. When no option of the wanted kind is offered: `cancelled`."""


@dataclass(frozen=True)
class Answer:
    """The Agent's answer to a request of the runner, as sent: `result` (plain JSON) or `error` (an error object,
    already checked), and `problems`: why the result does not fit the result type of the request's method."""

    id: int | str
    result: Any
    error: dict[str, Any] | None
    problems: tuple[str, ...] = ()


class TraceFailure(Exception):
    """What the runner saw instead of what the trace expects."""


class TraceSkipped(Exception):
    """The trace needs something the Agent does not offer; the message names it."""


class AgentNotStarted(Exception):
    """The Agent command could not be started at all (no such program, not executable)."""


@dataclass
class Connection:
    """One Agent process: responses by id, notifications in arrival order, and the first problem it caused.

    `problem` is the first thing the Agent wrote that is not a valid JSON-RPC message (not JSON, too long, an
    error that is not an error object, a session/update whose params do not fit the generated model, a key of
    the trace echoed where the protocol forbids it...); once set, every wait on this connection fails with it,
    so it becomes the FAIL reason of the trace. `secrets` is the trace's set of keys, shared by its connections.
    """

    name: str
    process: asyncio.subprocess.Process
    secrets: set[str] = field(default_factory=set)
    permission: str = "allow"
    responses: dict[Any, Answer] = field(default_factory=dict)
    notifications: list[dict[str, Any]] = field(default_factory=list)
    consumed: set[int] = field(default_factory=set)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    readers: list[asyncio.Task[None]] = field(default_factory=list)
    sent: dict[Any, str] = field(default_factory=dict)  # id -> method of each request written to this Agent
    problem: str | None = None
    asked: list[str] = field(default_factory=list)  # the method of each request the Agent sent, in order
    sent_time: dict[Any, float] = field(default_factory=dict)  # id -> when the request was written
    slowest: float = 0.0  # the longest the Agent took to answer a request of the runner's, in seconds
    stderr_tail: bytearray = field(default_factory=bytearray)
    kept_messages: int = 0
    kept_bytes: int = 0
    # Reads what the Agent writes: told of each request sent (`expect`), refusing what JSON cannot write back,
    # and keeping the parsed values the traces compare.
    reader: MessageReader = field(
        default_factory=lambda: MessageReader(remember_requests=False, strict_json=True, keep_raw=True)
    )

    @classmethod
    async def start(
        cls, name: str, command: list[str], secrets: set[str] | None = None, permission: str = "allow"
    ) -> Connection:
        """Start the Agent process and read what it writes; AgentNotStarted when it cannot be started."""
        try:
            process = await asyncio.create_subprocess_exec(
                *command,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            raise AgentNotStarted(f"cannot start the Agent command {command[0]!r}: {exc.strerror or exc}") from None
        conn = cls(name, process, secrets if secrets is not None else set(), permission)
        conn.readers = [asyncio.create_task(conn._read_stdout()), asyncio.create_task(conn._read_stderr())]
        return conn

    @property
    def last_error(self) -> str:
        """The last non-empty line the Agent wrote on stderr (at most 200 characters), or ""."""
        lines = [line for line in self.stderr_tail.decode("utf-8", "replace").splitlines() if line.strip()]
        return lines[-1].strip()[:200] if lines else ""

    async def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        reader = jsonrpc.LineReader(self.process.stdout)
        try:
            while (line := await reader.next_line()) is not None:
                # After the first problem the lines are still read: the answers the Agent did send are answers (a
                # history judges each one), though every wait of a trace now fails with that first problem.
                self._take(line)
                self._wake()
        except Exception as exc:  # a broken pipe or a runner bug: report it on the trace, never abort the run
            self._flag(f"reading the Agent's output failed ({type(exc).__name__}: {exc})")
        self._wake()

    async def _read_stderr(self) -> None:
        """Drain stderr as it comes, whatever its size and whether it has newlines; keep only its tail."""
        assert self.process.stderr is not None
        with contextlib.suppress(Exception):
            while chunk := await self.process.stderr.read(_CHUNK):
                self.stderr_tail += chunk
                del self.stderr_tail[:-STDERR_TAIL]

    def _flag(self, problem: str) -> None:
        if self.problem is None:
            self.problem = f"{problem} (on {self.name})"

    def _keep(self, size: int) -> bool:
        self.kept_messages += 1
        self.kept_bytes += size
        if self.kept_messages > MAX_KEPT_MESSAGES or self.kept_bytes > MAX_KEPT_BYTES:
            self._flag(
                f"the Agent wrote more than {MAX_KEPT_MESSAGES} messages or {MAX_KEPT_BYTES} bytes of them, far"
                " more than the trace asks for"
            )
            return False
        return True

    def _take(self, line: bytes | jsonrpc.Oversized) -> None:
        """Sort one line the Agent wrote into responses and notifications, or flag it as a problem."""
        if isinstance(line, jsonrpc.Oversized):
            self._flag(f"the Agent wrote {line_too_long(line.size).problems[0]}")
            return
        found = self.reader.read_line(line)
        if not found or not self._keep(len(line)):
            return
        (message,) = found
        if isinstance(message, Response | ErrorResponse):
            self._answer(message.id, message.raw)
        elif isinstance(message, Notification):
            self._notification(message.method, message.raw)
        elif isinstance(message, Request):
            self._request(message.id, message.method, message.raw.get("params"))
        else:
            self._invalid(message)

    def _invalid(self, message: Invalid) -> None:
        """What an `Invalid` line of the Agent's means for the trace: usually its problem, flagged."""
        raw, problem = message.raw, message.problems[0]
        rid = message.id if isinstance(message.id, int | str) else None  # a valid id, or one that could be
        if message.code == Code.PARSE_ERROR:
            self._flag(f"the Agent wrote a line that is not JSON: {problem}")
        elif message.code is None and rid is not None and rid in self.responses:
            self._flag(f"the Agent answered request {rid!r} twice")
        elif message.code is None and rid is not None and rid not in self.sent:
            self._flag(f"the Agent answered id {rid!r}, which no request on this connection had")
        elif message.code is None and message.method is not None and "error" not in raw and "result" in raw:
            # an answer whose result does not fit its method's type: the step waiting for it says so
            self.responses[message.id] = Answer(message.id, raw["result"], None, message.problems)
        elif message.code in (Code.METHOD_NOT_FOUND, Code.INVALID_PARAMS) and message.answered:
            # a request for a method the runner does not know, or with params that do not fit: said so
            self.asked.append(str(message.method))
            self._reply(jsonrpc.error(message.answer_id, message.code, problem[:200]))
        elif message.code == Code.METHOD_NOT_FOUND:
            self._notification(message.method, raw)  # a notification no trace looks at
        elif message.code == Code.INVALID_PARAMS:
            self._flag(f"the Agent sent {message.method} with invalid params: {problem}")
        else:
            self._flag(f"the Agent wrote an invalid JSON-RPC message: {'; '.join(message.problems)}")

    def _answer(self, rid: int | str | None, raw: dict[str, Any]) -> None:
        error = raw.get("error")
        if rid is None:  # an error answer: the reader refuses a result with a null id
            self._flag(f"the Agent answered error {raw['error']['code']} with a null id (it could not read us)")
            return
        if rid in self.sent_time:  # how busy the machine is, as this Agent's answers show it
            self.slowest = max(self.slowest, time.monotonic() - self.sent_time.pop(rid))
        if self.sent[rid] == M.SESSION_LIST and error is None:
            self._private(raw["result"], f"the {M.SESSION_LIST} result", "result")
        self.responses[rid] = Answer(rid, raw.get("result"), error)

    def _request(self, rid: int | str, method: str, params: Any) -> None:
        """Answer a request of the Agent's as a Client would: a permission by the policy, the rest with -32601."""
        self.asked.append(method)
        if method == M.SESSION_REQUEST_PERMISSION and isinstance(params, dict):
            self._reply({"id": rid, "result": {"outcome": permission_outcome(self.permission, params)}})
        else:  # fs/*, terminal/*, elicitation...: the runner's initialize offers none of them
            self._reply(jsonrpc.error(rid, Code.METHOD_NOT_FOUND, "Method not found"))

    def _reply(self, message: dict[str, Any]) -> None:
        # An Agent may ask after the runner closed its stdin; a Client that has gone answers nothing.
        if self.process.stdin is not None and not self.process.stdin.is_closing():
            self.write(message)

    def _notification(self, method: str | None, raw: dict[str, Any]) -> None:
        params = raw.get("params")
        if method == M.SESSION_UPDATE:
            self._private(params, f"a {M.SESSION_UPDATE} notification", "params")
        self.notifications.append({"method": method, "params": params or {}})

    def _private(self, value: Any, what: str, root: str) -> None:
        """Flag a key of this trace found anywhere in `value` (object keys and strings, at any depth)."""
        if not self.secrets:
            return
        for path, text in _strings(value, root):
            if any(key in text for key in self.secrets):
                self._flag(f"an idempotency key of the trace appeared in {what}, at {path}; keys never do")
                return

    def _wake(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()

    def write(self, message: dict[str, Any]) -> None:
        if self.process.stdin is None or self.process.stdin.is_closing():
            raise TraceFailure(f"connection {self.name} is closed")
        if "method" in message and "id" in message:
            self.sent[message["id"]] = message["method"]
            if message["method"] != M.SESSION_PROMPT:  # a prompt may wait on purpose (a hook, a permission)
                self.sent_time[message["id"]] = time.monotonic()
            self.reader.expect(message["id"], message["method"])  # so that the answer is read as its method's
        self.process.stdin.write(jsonrpc.encode({"jsonrpc": "2.0", **message}))

    async def wait(self, found: Any, what: str, timeout: float) -> Any:
        """Wait until `found()` returns something other than None, at most `timeout` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while (value := found()) is None:
            if self.problem is not None:
                raise TraceFailure(f"{what}: {self.problem}")
            if self.process.stdout is not None and self.process.stdout.at_eof() and self.process.returncode is not None:
                said = f": {self.last_error}" if self.last_error else ""
                raise TraceFailure(f"{what}: the Agent on {self.name} exited (status {self.process.returncode}){said}")
            left = deadline - loop.time()
            if left <= 0:
                raise TraceFailure(f"{what}: nothing within {timeout:g}s on {self.name}")
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.changed.wait(), min(left, 0.5))
        return value

    async def settle(self, found: Any, seconds: float, limit: float) -> Any:
        """Watch whether `found()` returns something other than None (something the Agent should not have done);
        return it at once, or None when the time passed. A problem of the connection fails.

        The watch lasts `seconds`, or longer on a machine so busy that this Agent took half of that to answer a
        request (twice its slowest answer), but never more than `limit`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + min(max(seconds, 2 * self.slowest), limit)
        while (value := found()) is None:
            if self.problem is not None:
                raise TraceFailure(self.problem)
            left = deadline - loop.time()
            if left <= 0 or (
                self.process.returncode is not None and self.process.stdout is not None and self.process.stdout.at_eof()
            ):
                return None
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.changed.wait(), min(left, 0.5))
        return value

    async def close(self, *, kill: bool = False) -> None:
        """End the process (closing its stdin, or SIGKILL) and stop reading; never raises, whatever its state."""
        if self.process.returncode is None:
            if kill:
                _signal(self.process.kill)
            elif self.process.stdin is not None:
                with contextlib.suppress(Exception):  # already closed, or its pipe already broken
                    self.process.stdin.close()
            try:
                await asyncio.wait_for(self.process.wait(), 5)
            except asyncio.TimeoutError:
                _signal(self.process.kill)
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self.process.wait(), 30)
        for reader in self.readers:
            try:
                await asyncio.wait_for(reader, 5)
            except (asyncio.TimeoutError, Exception):  # a grandchild may hold the pipes open: stop reading
                reader.cancel()


def _signal(send: Any) -> None:
    """Signal a process that may have exited already (not yet reaped: ProcessLookupError), quietly."""
    with contextlib.suppress(ProcessLookupError, OSError):
        send()


def permission_outcome(policy: str, params: dict[str, Any]) -> dict[str, Any]:
    """The outcome of a `session/request_permission` under a policy of PERMISSION_POLICIES."""
    options = params.get("options") if isinstance(params.get("options"), list) else []
    prefix = {"allow": "allow_", "reject": "reject_"}.get(policy)
    for option in options:
        kind = option.get("kind") if isinstance(option, dict) else None
        if prefix and isinstance(kind, str) and kind.startswith(prefix):
            return {"outcome": "selected", "optionId": option.get("optionId")}
    return {"outcome": "cancelled"}


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    """(path, text) of every object key and string value in a parsed JSON value, depth first, without recursion."""
    stack = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            yield where, item
        elif isinstance(item, dict):
            for key, inner in item.items():
                yield f"{where}.{key} (the member name)", key
                stack.append((f"{where}.{key}", inner))
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", inner) for i, inner in enumerate(item))
