"""Run the keyed-prompt conformance traces against an Agent command over stdio.

    python -m acp_v2_runtime.conformance -- python -m acp_v2_runtime.reference_agent --db '{tmp}/agent.db'

Each connection of a trace is one Agent process speaking newline-delimited JSON-RPC on stdin/stdout; `{tmp}`
in the command becomes a temporary directory shared by every process of the run, so a restarted Agent finds
its stored sessions. One line is printed per trace (PASS, or FAIL with what was seen instead), then a summary
(`N passed, M failed, of T traces`). Waiting for an answer is bounded by `--timeout`, so a silent Agent fails
rather than hangs.

Everything the Agent writes is checked as it arrives: a line that is not JSON or is longer than 16 MiB, a
message that is not valid JSON-RPC 2.0 (an `error` that is not an error object, a bad `id`), a result or a
notification whose params do not fit the types the spec names for that method: each fails the trace that saw
it, with the reason, and the run goes on with the next trace."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from acp_v2_schema import protocol as M  # method names, as the spec spells them
from acp_v2_schema.protocol import KnownErrorCode as Code

from .. import jsonrpc

PROTOCOL_VERSION = 2


def load_traces() -> dict[str, Any]:
    """The traces document shipped with the package (the same as generated/conformance/idempotency-traces.json)."""
    text = resources.files("acp_v2_schema").joinpath("data", "idempotency-traces.json")
    return json.loads(text.read_text(encoding="utf-8"))


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


class TraceRun:
    """The state of one trace: connections, saved values, keys and request ids."""

    def __init__(self, command: list[str], timeout: float, workdir: str) -> None:
        self.command, self.timeout, self.workdir = command, timeout, workdir
        self.conns: dict[str, Connection] = {}
        self.closed: list[Connection] = []
        self.values: dict[str, Any] = {}
        self.keys: dict[str, str] = {}
        self.requests: dict[str, tuple[Connection, int, str]] = {}
        self.next_id = 0

    def resolve(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self.resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if isinstance(value, str) and value.startswith("$") and value not in (M.CANCEL_REQUEST,):
            ref = value[1:]
            if ref.startswith("key:"):
                return self.keys.setdefault(ref[4:], f"k-{uuid.uuid4()}")
            if ref.startswith("id:"):
                return self.requests[ref[3:]][1]
            if ref not in self.values:
                raise TraceFailure(f"nothing saved as {ref!r} yet")
            return self.values[ref]
        return value

    async def call(self, conn: Connection, method: str, params: dict[str, Any], what: str) -> dict[str, Any]:
        rid = self.send(conn, method, params)
        answer = await conn.wait(lambda: conn.responses.get(rid), what, self.timeout)
        if answer.error is not None:
            raise TraceFailure(f"{what}: error {answer.error['code']} {answer.error['message']!r}")
        problems = jsonrpc.result_problems(method, answer.result)
        if problems:
            raise TraceFailure(f"{what}: the result does not fit the spec: {problems[0]}")
        assert isinstance(answer.result, dict)  # every result type of the methods called here is an object
        return answer.result

    def send(self, conn: Connection, method: str, params: Any) -> int:
        self.next_id += 1
        conn.write({"id": self.next_id, "method": method, "params": params})
        return self.next_id

    def conn(self, name: str) -> Connection:
        if name not in self.conns:
            raise TraceFailure(f"connection {name} is not open")
        return self.conns[name]

    async def step(self, kind: str, body: Any) -> None:
        handler = getattr(self, f"do_{kind}")
        await handler(body)

    async def do_connect(self, name: str) -> None:
        command = [part.replace("{tmp}", self.workdir) for part in self.command]
        conn = await Connection.start(name, command)
        self.conns[name] = conn
        await self.call(
            conn,
            M.INITIALIZE,
            {"protocolVersion": PROTOCOL_VERSION, "info": {"name": "acp-v2-conformance", "version": "1"}},
            f"initialize on {name}",
        )

    async def do_disconnect(self, name: str) -> None:
        conn = self.conns.pop(name)
        await conn.close()
        self.closed.append(conn)

    async def do_crash(self, name: str) -> None:
        conn = self.conns.pop(name)
        await conn.close(kill=True)
        self.closed.append(conn)

    async def do_newSession(self, body: dict[str, Any]) -> None:
        result = await self.call(
            self.conn(body["conn"]), M.SESSION_NEW, {"cwd": self.workdir, "mcpServers": []}, M.SESSION_NEW
        )
        self.values[body["as"]] = result.get("sessionId")

    async def do_resume(self, body: dict[str, Any]) -> None:
        params = {"sessionId": self.values[body["session"]], "cwd": self.workdir, "mcpServers": []}
        await self.call(self.conn(body["conn"]), M.SESSION_RESUME, params, M.SESSION_RESUME)

    async def do_send(self, body: dict[str, Any]) -> None:
        conn = self.conn(body["conn"])
        method = body["method"]
        self.requests[body["as"]] = (conn, self.send(conn, method, self.resolve(body["params"])), method)

    async def do_notify(self, body: dict[str, Any]) -> None:
        self.conn(body["conn"]).write({"method": body["method"], "params": self.resolve(body["params"])})

    async def do_expect(self, body: dict[str, Any]) -> None:
        conn, rid, method = self.requests[body["request"]]
        what = f"answer to {body['request']}"
        answer = await conn.wait(lambda: conn.responses.get(rid), what, self.timeout)
        problems = [] if answer.error is not None else jsonrpc.result_problems(method, answer.result)
        if problems:
            raise TraceFailure(f"{what}: the result does not fit the spec: {problems[0]}")
        options = body.get("anyOf") or [{k: v for k, v in body.items() if k in ("result", "error")}]
        problems = [self.mismatch(answer, option) for option in options]
        if all(problems):
            raise TraceFailure(f"{what}: {'; or '.join(p for p in problems if p)}")
        for option in options:
            if self.mismatch(answer, option) is None:
                for field_name, rule in (option.get("result") or {}).items():
                    if isinstance(rule, dict) and "save" in rule:
                        self.values[rule["save"]] = answer.result.get(field_name)

    def mismatch(self, answer: jsonrpc.Response, option: dict[str, Any]) -> str | None:
        if "error" in option:
            code = option["error"].get("code")
            got = answer.error["code"] if answer.error is not None else None
            return None if got == code else f"expected error {code}, got {_brief(answer)}"
        if answer.error is not None or not isinstance(answer.result, dict):
            return f"expected a result, got {_brief(answer)}"
        for field_name, rule in (option.get("result") or {}).items():
            value = answer.result.get(field_name)
            if isinstance(rule, dict) and "equals" in rule and value != self.values.get(rule["equals"]):
                return f"expected {field_name} {self.values.get(rule['equals'])!r}, got {value!r}"
            if isinstance(rule, dict) and "save" in rule and not isinstance(value, str):
                return f"expected a {field_name}, got {value!r}"
        return None

    async def do_awaitUpdate(self, body: dict[str, Any]) -> None:
        conn = self.conn(body["conn"])
        session_id = self.values[body["session"]]

        def find() -> int | None:
            for i, update in _updates(conn, session_id):
                if (
                    i not in conn.consumed
                    and update.get("sessionUpdate") == body["update"]
                    and ("state" not in body or update.get("state") == body["state"])
                ):
                    return i
            return None

        index = await conn.wait(find, f"{body['update']} update", self.timeout)
        conn.consumed.add(index)
        update = conn.notifications[index]["params"]["update"]
        for field_name, name in (body.get("save") or {}).items():
            self.values[name] = update.get(field_name)

    async def do_history(self, body: dict[str, Any]) -> None:
        conn = self.conn(body["conn"])
        session_id = self.values[body["session"]]
        start = len(conn.notifications)
        params = {"sessionId": session_id, "cwd": self.workdir, "mcpServers": []}
        await self.call(conn, M.SESSION_RESUME, params, "session/resume for history")
        ids = set()
        for _, update in _updates(conn, session_id, start):
            if update.get("sessionUpdate") == "user_message":
                ids.add(update.get("messageId"))
        conn.consumed.update(range(start, len(conn.notifications)))
        if len(ids) != body["userMessages"]:
            raise TraceFailure(f"expected {body['userMessages']} user message(s) in the session, found {len(ids)}")

    async def finish(self) -> str | None:
        for conn in list(self.conns.values()):
            await conn.close()
            self.closed.append(conn)
        self.conns.clear()
        for conn in self.closed:
            if conn.problem is not None:  # seen after the last wait, or on a connection nobody waited on
                return conn.problem
        written = "".join(line for conn in self.closed for line in conn.output)
        if any(key in written for key in self.keys.values()):
            return "an idempotency key appeared in what the Agent wrote"
        return None


def _updates(conn: Connection, session_id: Any, start: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
    """(index, update) of each session/update for the session from `start` on; their params were checked."""
    for i in range(start, len(conn.notifications)):
        note = conn.notifications[i]
        if note["method"] == M.SESSION_UPDATE and note["params"]["sessionId"] == session_id:
            yield i, note["params"]["update"]


def _brief(answer: jsonrpc.Response) -> str:
    if answer.error is not None:
        return f"error {answer.error['code']}"
    return f"result {json.dumps(answer.result)[:80]}"


async def run_trace(trace: dict[str, Any], command: list[str], timeout: float, workdir: str) -> str | None:
    """Run one trace; None when it passes, else what went wrong. Raises AgentNotStarted (the whole run stops)."""
    run = TraceRun(command, timeout, workdir)
    failure = None
    try:
        for number, step in enumerate(trace["steps"], 1):
            kind, body = next(iter(step.items()))
            try:
                await run.step(kind, body)
            except TraceFailure as exc:
                failure = f"step {number} ({kind}): {exc}"
                break
            except (AgentNotStarted, asyncio.CancelledError):
                raise
            except Exception as exc:  # whatever the Agent did, it fails this trace and the run goes on
                failure = f"step {number} ({kind}): the runner could not go on ({type(exc).__name__}: {exc})"
                break
    finally:
        leak = await run.finish()
    return failure or leak


async def run_all(command: list[str], *, timeout: float, traces: list[dict[str, Any]]) -> int:
    """Run the traces one after another, print one verdict line each and a summary; the exit status."""
    failed = 0
    with tempfile.TemporaryDirectory(prefix="acp-conformance-") as workdir:
        for trace in traces:
            problem = await run_trace(trace, command, timeout, workdir)
            failed += problem is not None
            verdict = "PASS" if problem is None else "FAIL"
            print(f"{verdict} {trace['id']}: {trace['title']}" + (f" — {problem}" if problem else ""), flush=True)
    print(f"{len(traces) - failed} passed, {failed} failed, of {len(traces)} traces")
    return 1 if failed else 0


EPILOG = """\
exit status: 0 when every trace passes, 1 when any fails, 2 on a usage error (an unknown trace id, no command)
or an Agent command that cannot be started.
"""


def main(argv: list[str] | None = None) -> int:
    """The command line: parse, pick the traces, run them; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m acp_v2_runtime.conformance",
        usage="%(prog)s [-h] [--timeout SECONDS] [--only ID]... [--list] -- AGENT COMMAND...",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--timeout", type=float, default=10.0, metavar="SECONDS", help="seconds to wait for each answer (default 10)"
    )
    parser.add_argument("--only", action="append", default=[], metavar="ID", help="run only this trace (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the traces and exit")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the Agent command; {tmp} is a shared dir")
    args = parser.parse_args(argv)
    every = load_traces()["traces"]
    if args.list:
        for trace in every:
            flag = "key-dependent" if trace["keyDependent"] else "any Agent"
            print(f"{trace['id']}: {trace['title']} ({trace['origin']}, {flag})")
        return 0
    if not args.timeout > 0:
        parser.error("--timeout must be a positive number of seconds")
    known = [trace["id"] for trace in every]
    unknown = [name for name in args.only if name not in known]
    if unknown:
        parser.error(f"no trace named {', '.join(map(repr, unknown))}; known: {', '.join(known)}")
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the Agent command after --")
    traces = [trace for trace in every if not args.only or trace["id"] in args.only]
    try:
        return asyncio.run(run_all(command, timeout=args.timeout, traces=traces))
    except AgentNotStarted as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of our output went away (`| head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
