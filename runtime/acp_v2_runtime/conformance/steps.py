"""The steps of a conformance trace (`connect`, `send`, `expect`, `awaitUpdate`, ...), run against Agent processes.

Each step kind of the traces document is a `do_<kind>` method of `TraceRun`; a step that sees something other
than what the trace expects raises TraceFailure with what it saw.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

from acp_v2_schema import protocol as M  # method names, as the spec spells them

from .. import jsonrpc
from .connection import Connection, TraceFailure

PROTOCOL_VERSION = 2


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
