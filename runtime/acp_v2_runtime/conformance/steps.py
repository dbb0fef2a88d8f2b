"""The steps of a conformance trace (`connect`, `send`, `expect`, `awaitUpdate`, ...), run against Agent processes.

Each step kind of the traces document is a `do_<kind>` method of `TraceRun`; a step that sees something other
than what the trace expects raises TraceFailure with what it saw, and one that finds the Agent lacks what the
trace needs raises TraceSkipped naming it. What the Agent offers is read from its `initialize` result, under the
handshake's `_meta` key (see the traces document's `handshake` and `needs`).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

from acp_v2_schema import protocol as M  # method names, as the spec spells them
from acp_v2_schema.protocol import KnownErrorCode as Code
from acp_v2_schema.reader import KEY_PARAMS, json_type
from acp_v2_schema.retry import is_valid_idempotency_key

from .connection import Answer, Connection, TraceFailure, TraceSkipped

PROTOCOL_VERSION = 2
REPLAY_FROM_START = {"type": "start"}


class TraceRun:
    """The state of one trace: connections, saved values, keys and request ids."""

    def __init__(
        self,
        command: list[str],
        timeout: float,
        workdir: str,
        document: dict[str, Any] | None = None,
        needs: list[str] | None = None,
    ) -> None:
        self.command, self.timeout, self.workdir = command, timeout, workdir
        document = document or {}
        self.meta_key: str | None = (document.get("handshake") or {}).get("metaKey")
        self.vocabulary: dict[str, Any] = document.get("needs") or {}
        self.needs = list(needs or [])
        self.offers: set[str] | None = None  # learned from the first connection's `initialize` result
        self.conns: dict[str, Connection] = {}
        self.closed: list[Connection] = []
        self.values: dict[str, Any] = {}
        self.keys: dict[str, str] = {}
        self.secrets: set[str] = set()  # every valid key sent: none may appear in updates or listings
        self.requests: dict[str, tuple[Connection, int, str, dict[str, Any]]] = {}
        self.next_id = 0

    def resolve(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self.resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if isinstance(value, str) and value.startswith("$") and value not in (M.CANCEL_REQUEST,):
            ref = value[1:]
            if ref.startswith("key:"):
                key = self.keys.setdefault(ref[4:], f"k-{uuid.uuid4()}")
                self.secrets.add(key)
                return key
            if ref.startswith("id:"):
                return self.requests[ref[3:]][1]
            if ref not in self.values:
                raise TraceFailure(f"nothing saved as {ref!r} yet")
            return self.values[ref]
        return value

    async def call(
        self, conn: Connection, method: str, params: dict[str, Any], what: str, *, skip_on: int | None = None
    ) -> dict[str, Any]:
        """Send a request and wait for its result; an error answer fails the trace (or skips it, for `skip_on`)."""
        rid = self.send(conn, method, params)
        answer = await conn.wait(lambda: conn.responses.get(rid), what, self.timeout)
        if answer.error is not None:
            if skip_on is not None and answer.error["code"] == skip_on:
                raise _SkipAnswer(answer.error)
            raise TraceFailure(f"{what}: expected a result, got {_brief(answer)}")
        if answer.problems:
            raise TraceFailure(f"{what}: the result does not fit the spec: {answer.problems[0]}")
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
        conn = await Connection.start(name, command, self.secrets)
        self.conns[name] = conn
        params: dict[str, Any] = {
            "protocolVersion": PROTOCOL_VERSION,
            "info": {"name": "acp-v2-conformance", "version": "1"},
        }
        if self.meta_key:
            params["_meta"] = {self.meta_key: {}}  # the handshake: this Client is the conformance runner
        result = await self.call(conn, M.INITIALIZE, params, f"initialize on {name}")
        if self.offers is None:
            self.offers, said = self._offers(result)
            missing = [
                need
                for need in self.needs
                if (self.vocabulary.get(need) or {}).get("from") == "handshake" and need not in self.offers
            ]
            if missing:
                raise TraceSkipped(f"needs {', '.join(missing)}, which the Agent does not offer ({said})")

    def _offers(self, result: dict[str, Any]) -> tuple[set[str], str]:
        """The names the Agent offers in its `initialize` result, and what to say about them in a skip."""
        where = f"_meta[{self.meta_key!r}].offers"
        meta = result.get("_meta")
        entry = meta.get(self.meta_key) if isinstance(meta, dict) and self.meta_key else None
        offers = entry.get("offers") if isinstance(entry, dict) else None
        if not isinstance(offers, list):
            state = "is missing" if offers is None else f"is {json_type(offers)}, not an array of names"
            return set(), f"its initialize result's {where} {state}"
        named = sorted({o for o in offers if isinstance(o, str) and o in self.vocabulary})
        return set(named), f"its initialize result's {where} lists {', '.join(named) or 'nothing the runner knows'}"

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
        params = self.resolve(body["params"])
        key_name = KEY_PARAMS.get(method)
        if key_name and isinstance(params, dict) and is_valid_idempotency_key(params.get(key_name)):
            self.secrets.add(params[key_name])  # a literal key is as private as a generated one
        self.requests[body["as"]] = (conn, self.send(conn, method, params), method, params)

    async def do_notify(self, body: dict[str, Any]) -> None:
        self.conn(body["conn"]).write({"method": body["method"], "params": self.resolve(body["params"])})

    async def do_expect(self, body: dict[str, Any]) -> None:
        conn, rid, _, params = self.requests[body["request"]]
        hooks = self._hooks(params)
        why = f" (the request carried the {', '.join(hooks)} hook, which the Agent offers)" if hooks else ""
        what = f"answer to {body['request']}{why}"
        answer = await conn.wait(lambda: conn.responses.get(rid), what, self.timeout)
        if answer.problems:
            raise TraceFailure(f"{what}: the result does not fit the spec: {answer.problems[0]}")
        options = body.get("anyOf") or [{k: v for k, v in body.items() if k in ("result", "error")}]
        problems = [self.mismatch(answer, option) for option in options]
        if all(problems):
            raise TraceFailure(f"{what}: {'; or '.join(p for p in problems if p)}")
        for option in options:
            if self.mismatch(answer, option) is None:
                for field_name, rule in (option.get("result") or {}).items():
                    if isinstance(rule, dict) and "save" in rule:
                        self.values[rule["save"]] = answer.result.get(field_name)

    def _hooks(self, params: Any) -> list[str]:
        """The names of the prompt hooks a request's params carry under the handshake key."""
        meta = params.get("_meta") if isinstance(params, dict) else None
        hooks = meta.get(self.meta_key) if isinstance(meta, dict) and self.meta_key else None
        return sorted(name for name, on in hooks.items() if on) if isinstance(hooks, dict) else []

    def mismatch(self, answer: Answer, option: dict[str, Any]) -> str | None:
        if "error" in option:
            code = option["error"].get("code")
            got = answer.error["code"] if answer.error is not None else None
            return None if got == code else f"expected error {code} ({_code_name(code)}), got {_brief(answer)}"
        if answer.error is not None or not isinstance(answer.result, dict):
            return f"expected a result, got {_brief(answer)}"
        for field_name, rule in (option.get("result") or {}).items():
            value = answer.result.get(field_name)
            if isinstance(rule, dict) and "equals" in rule and value != self.values.get(rule["equals"]):
                expected, saved = self.values.get(rule["equals"]), rule["equals"]
                return f"expected {field_name} {expected!r} (the one saved as {saved}), got {field_name} {value!r}"
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
        params = {"sessionId": session_id, "cwd": self.workdir, "mcpServers": [], "replayFrom": REPLAY_FROM_START}
        what = "session/resume with replayFrom {type: start}, to read the history"
        try:
            await self.call(conn, M.SESSION_RESUME, params, what, skip_on=Code.INVALID_PARAMS)
        except _SkipAnswer as refused:
            raise TraceSkipped(
                f"needs replay: the Agent answered {what} with error {refused.error['code']}"
                f" {str(refused.error.get('message'))[:120]!r}, so it replays no history"
            ) from None
        ids: list[Any] = []
        for _, update in _updates(conn, session_id, start):
            if update.get("sessionUpdate") == "user_message" and update.get("messageId") not in ids:
                ids.append(update.get("messageId"))
        conn.consumed.update(range(start, len(conn.notifications)))
        if len(ids) != body["userMessages"]:
            found = f": {', '.join(map(repr, ids))}" if ids else ""
            raise TraceFailure(
                f"expected {body['userMessages']} user message(s) in the replayed history, found {len(ids)}{found}"
            )

    async def finish(self) -> str | None:
        for conn in list(self.conns.values()):
            await conn.close()
            self.closed.append(conn)
        self.conns.clear()
        for conn in self.closed:
            if conn.problem is not None:  # seen after the last wait, or on a connection nobody waited on
                return conn.problem
        return None


class _SkipAnswer(Exception):
    """An error answer that means the Agent lacks an optional feature (raised by `call` for `skip_on`)."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("message"))
        self.error = error


def _updates(conn: Connection, session_id: Any, start: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
    """(index, update) of each session/update for the session from `start` on; their params were checked."""
    for i in range(start, len(conn.notifications)):
        note = conn.notifications[i]
        if note["method"] == M.SESSION_UPDATE and note["params"]["sessionId"] == session_id:
            yield i, note["params"]["update"]


def _brief(answer: Answer) -> str:
    """An answer in a few words: its error code and message, or its messageId or its start."""
    if answer.error is not None:
        return f"error {answer.error['code']} {str(answer.error.get('message'))[:120]!r}"
    if isinstance(answer.result, dict) and "messageId" in answer.result:
        return f"a result with messageId {answer.result['messageId']!r}"
    return f"the result {json.dumps(answer.result)[:80]}"


def _code_name(code: Any) -> str:
    """The spec's name of an error code (`REQUEST_CANCELLED` reads as "request cancelled")."""
    try:
        return Code(code).name.lower().replace("_", " ")
    except ValueError:
        return "an error code the spec does not name"
