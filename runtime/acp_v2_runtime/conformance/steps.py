"""The steps of a conformance trace (`connect`, `send`, `expect`, `awaitUpdate`, ...), run against Agent processes.

Each step kind of the traces document is a `do_<kind>` method of `TraceRun`; a step that sees something other
than what the trace expects raises TraceFailure with what it saw, and one that finds the Agent lacks what the
trace needs raises TraceSkipped naming it.

The protocol comes first: whether sessions outlive the process is learned by resuming one from a new process
(SKIP only when that process answers that it does not know the session), and a method the Agent answers with
-32601 skips the trace, naming the method (unless the trace cannot mean anything without it: `REQUIRED`). Only
the test hooks with no protocol equivalent are learned from the handshake (the `initialize` result's `_meta`,
see the traces document's `handshake` and `needs`), and each one offered is checked: a held prompt must not be
answered before its release, held work must not end before it, a stored session must be found by a new process.

Every form of report the prompt lifecycle allows is accepted: the inserted user message as one `user_message`
update or as `user_message_chunk` updates with one messageId, before or after the answer. A messageId answered
and never reported fails the trace, quoting the rule (the traces document's `rules`).
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
REQUIRED = frozenset({M.INITIALIZE, M.SESSION_NEW, M.SESSION_PROMPT})
"""Methods every trace relies on: -32601 for one of them is a FAIL, not a SKIP."""
USER_MESSAGE = ("user_message", "user_message_chunk")
"""The two forms of the report of an inserted user message (one messageId; chunks append content)."""
WORK_OUTPUT = ("agent_message", "agent_message_chunk", "agent_thought", "agent_thought_chunk")
RELEASE = "_conformance/release"
SETTLE = 1.0
"""Seconds given an Agent to show that a hook does not hold, or that a retry started work, before the runner
goes on (longer when its answers show a busy machine: `Connection.settle`). It bounds how slow a wrong Agent may
be and still be caught; a right Agent is never judged by it."""


KEY_FORMS = {
    "": lambda key: key,
    "upper": str.upper,
    "padded": lambda key: f" {key} ",
    "nfc": lambda key: f"{key}-\u00e9",
    "nfd": lambda key: f"{key}-e\u0301",
}
"""`$key:NAME/FORM`: another key that differs from NAME's key only in how it looks: its case (`upper`), white space
around it (`padded`), or a letter composed (`nfc`) or decomposed (`nfd`), which Unicode normalisation would make
equal. Keys are opaque and compared exactly, so each form is a key of its own."""


def key_form(key: str, form: str) -> str:
    """The FORM of `key` (`KEY_FORMS`); an unknown form is the trace's mistake, said as a failure."""
    if form not in KEY_FORMS:
        raise TraceFailure(f"no key form {form!r} (known: {', '.join(sorted(f for f in KEY_FORMS if f))})")
    return KEY_FORMS[form](key)


class TraceRun:
    """The state of one trace: connections, saved values, keys and request ids."""

    def __init__(
        self,
        command: list[str],
        timeout: float,
        workdir: str,
        document: dict[str, Any] | None = None,
        needs: list[str] | None = None,
        permission: str = "allow",
    ) -> None:
        self.command, self.timeout, self.workdir, self.permission = command, timeout, workdir, permission
        document = document or {}
        self.rules: dict[str, Any] = document.get("rules") or {}
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
        self.sent_at: dict[str, int] = {}  # request name -> how many notifications its connection had then
        self.born: dict[Any, Connection] = {}  # session id -> the connection (process) that created it
        self.answered: dict[Any, str] = {}  # messageId -> the request whose answer first carried it
        self.held: list[tuple[str, str]] = []  # (request name, hook) of each prompt held until a release

    def resolve(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self.resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if isinstance(value, str) and value.startswith("$") and value not in (M.CANCEL_REQUEST,):
            ref = value[1:]
            if ref.startswith("key:"):
                name, _, form = ref[4:].partition("/")
                key = key_form(self.keys.setdefault(name, f"k-{uuid.uuid4()}"), form)
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
            if answer.error["code"] == skip_on:
                raise _SkipAnswer(answer.error)
            self._skip_unsupported(method, answer)
            raise TraceFailure(f"{what}: expected a result, got {_brief(answer)}")
        if answer.problems:
            raise TraceFailure(f"{what}: the result does not fit the spec: {answer.problems[0]}")
        assert isinstance(answer.result, dict)  # every result type of the methods called here is an object
        return answer.result

    @staticmethod
    def _skip_unsupported(method: str, answer: Answer) -> None:
        """-32601 for a method the trace could do without: SKIP naming it."""
        if answer.error is not None and answer.error["code"] == Code.METHOD_NOT_FOUND and method not in REQUIRED:
            raise TraceSkipped(f"needs {method}, which the Agent does not implement: it answered {_brief(answer)}")

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
        conn = await Connection.start(name, command, self.secrets, self.permission)
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
        self.born[result.get("sessionId")] = self.conn(body["conn"])

    async def do_resume(self, body: dict[str, Any]) -> None:
        conn, session_id = self.conn(body["conn"]), self.values[body["session"]]
        params = {"sessionId": session_id, "cwd": self.workdir, "mcpServers": []}
        try:
            await self.call(conn, M.SESSION_RESUME, params, M.SESSION_RESUME, skip_on=Code.RESOURCE_NOT_FOUND)
        except _SkipAnswer as unknown:
            if self.born.get(session_id) is conn:
                raise TraceFailure(
                    f"{M.SESSION_RESUME}: the process that created the session does not know it"
                    f" (error {unknown.error['code']})"
                ) from None
            said = f"error {unknown.error['code']} {str(unknown.error.get('message'))[:120]!r}"
            if "storedSessions" in (self.offers or ()):
                raise TraceFailure(
                    f"{M.SESSION_RESUME}: the Agent offers storedSessions, but a new process answered {said}:"
                    " the storedSessions offer does not hold"
                ) from None
            raise TraceSkipped(
                f"needs storedSessions: a new Agent process answered {M.SESSION_RESUME} for the session with"
                f" {said}, so its sessions do not outlive the process"
            ) from None

    async def do_send(self, body: dict[str, Any]) -> None:
        conn = self.conn(body["conn"])
        method = body["method"]
        params = self.resolve(body["params"])
        key_name = KEY_PARAMS.get(method)
        if key_name and isinstance(params, dict) and is_valid_idempotency_key(params.get(key_name)):
            self.secrets.add(params[key_name])  # a literal key is as private as a generated one
        self.sent_at[body["as"]] = len(conn.notifications)
        self.requests[body["as"]] = (conn, self.send(conn, method, params), method, params)
        self.held.extend((body["as"], hook) for hook in self._hooks(params) if hook in ("holdInsert", "holdWork"))

    async def do_notify(self, body: dict[str, Any]) -> None:
        conn, params = self.conn(body["conn"]), self.resolve(body["params"])
        if self.held:  # before anything ends a hold, check that the hold held
            await self._check_holds(conn)
        conn.write({"method": body["method"], "params": params})
        if body["method"] == RELEASE:
            session_id = params.get("sessionId") if isinstance(params, dict) else None
            self.held = [(name, hook) for name, hook in self.held if self._session_of(name) != session_id]

    def _session_of(self, name: str) -> Any:
        params = self.requests[name][3]
        return params.get("sessionId") if isinstance(params, dict) else None

    async def _check_holds(self, conn: Connection) -> None:
        """Each offered hook that holds a prompt or its work must hold it until the release: FAIL naming it."""

        def broken() -> str | None:
            for name, hook in self.held:
                held_conn, rid, _, _ = self.requests[name]
                session_id, start = self._session_of(name), self.sent_at[name]
                if hook == "holdInsert":
                    answer = held_conn.responses.get(rid)
                    if answer is not None and answer.error is None:
                        return f"answered {name} with {_brief(answer)}"
                    for _, update in _updates(held_conn, session_id, start):
                        if update.get("sessionUpdate") in USER_MESSAGE:
                            return f"reported a user message ({update.get('messageId')!r}) for {name}'s session"
                if hook == "holdWork":
                    for _, update in _updates(held_conn, session_id, start):
                        if update.get("sessionUpdate") == "state_update" and update.get("state") == "idle":
                            return f"reported the session idle after {name}, whose work should still be running"
            return None

        wrong = await conn.settle(broken, SETTLE, self.timeout)
        if wrong is not None:
            hooks = sorted({hook for _, hook in self.held})
            raise TraceFailure(
                f"the Agent offers {', '.join(hooks)}, but before the runner ended the hold it {wrong}:"
                " the hook does not hold"
            )

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
            self._skip_unsupported(self.requests[body["request"]][2], answer)
            raise TraceFailure(f"{what}: {'; or '.join(p for p in problems if p)}")
        message_id = answer.result.get("messageId") if isinstance(answer.result, dict) else None
        if self.requests[body["request"]][2] == M.SESSION_PROMPT and isinstance(message_id, str):
            self.answered.setdefault(message_id, body["request"])
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

        kinds = USER_MESSAGE if body["update"] in USER_MESSAGE else (body["update"],)

        def find() -> int | None:
            for i, update in _updates(conn, session_id):
                if (
                    i not in conn.consumed
                    and update.get("sessionUpdate") in kinds
                    and ("state" not in body or update.get("state") == body["state"])
                ):
                    return i
            return None

        what = " or ".join(kinds) + " update" + (f" with state {body['state']}" if "state" in body else "")
        try:
            index = await conn.wait(find, what, self.timeout)
        except TraceFailure as exc:
            if kinds == USER_MESSAGE and "nothing within" in str(exc):
                raise TraceFailure(f"{exc}; {self.rule('userMessageReport')}") from None
            raise
        if kinds == USER_MESSAGE:  # every chunk of that message is part of this one report
            message_id = conn.notifications[index]["params"]["update"].get("messageId")
            conn.consumed.update(
                i
                for i, u in _updates(conn, session_id)
                if u.get("sessionUpdate") in kinds and u.get("messageId") == message_id
            )
        conn.consumed.add(index)
        update = conn.notifications[index]["params"]["update"]
        for field_name, name in (body.get("save") or {}).items():
            self.values[name] = update.get(field_name)

    async def do_history(self, body: dict[str, Any]) -> None:
        conn = self.conn(body["conn"])
        session_id = self.values[body["session"]]
        await self.await_reports()
        start = len(conn.notifications)
        params = {"sessionId": session_id, "cwd": self.workdir, "mcpServers": [], "replayFrom": REPLAY_FROM_START}
        what = "session/resume with replayFrom {type: start}, to read the history"
        where = "in the replayed history"
        try:
            await self.call(conn, M.SESSION_RESUME, params, what, skip_on=Code.INVALID_PARAMS)
        except (_SkipAnswer, TraceSkipped) as refused:
            if self.born.get(session_id) is not conn:  # this connection did not see every report live
                if isinstance(refused, TraceSkipped):
                    raise
                raise TraceSkipped(
                    f"needs replay: the Agent answered {what} with error {refused.error['code']}"
                    f" {str(refused.error.get('message'))[:120]!r}, so it replays no history"
                ) from None
            # The Agent must report every inserted message live, so the connection that created the session saw
            # them all: count those instead of a replay.
            start, where = 0, "reported live (the Agent replays no history)"
        ids: list[Any] = []
        for _, update in _updates(conn, session_id, start):
            if update.get("sessionUpdate") in USER_MESSAGE and update.get("messageId") not in ids:
                ids.append(update.get("messageId"))
        conn.consumed.update(range(start, len(conn.notifications)))
        if len(ids) != body["userMessages"]:
            found = f": {', '.join(map(repr, ids))}" if ids else ""
            raise TraceFailure(f"expected {body['userMessages']} user message(s) {where}, found {len(ids)}{found}")

    async def do_noSecondRound(self, body: dict[str, Any]) -> None:
        """A retry answered with a recorded messageId starts no new turn: no `running`, no agent output after it."""
        conn, session_id, name = self.conn(body["conn"]), self.values[body["session"]], body["request"]
        start = self.sent_at[name]

        # The foreground state when the retry was sent: work still running then may go on and speak; only work
        # that starts (idle -> running) or speaks while the session is idle after it is a second round.
        states = [
            u.get("state")
            for i, u in _updates(conn, session_id)
            if i < start and u.get("sessionUpdate") == "state_update"
        ]
        at_send = states[-1] if states else "idle"

        def second() -> str | None:
            state = at_send
            for _, update in _updates(conn, session_id, start):
                kind = update.get("sessionUpdate")
                if kind == "state_update":
                    if update.get("state") == "running" and state != "running":
                        return "reported state running"
                    state = update.get("state")
                elif kind in WORK_OUTPUT and state != "running":
                    return f"reported a new {kind} ({update.get('messageId')!r}) while no work was running"
            return None

        wrong = await conn.settle(second, SETTLE, self.timeout)
        if wrong is not None:
            raise TraceFailure(
                f"after {name}, a retry of a message already inserted, the Agent {wrong}: it started a second round"
                f" of work for the message; {self.rule('noSecondRound')}"
            )

    async def await_reports(self) -> None:
        """Every messageId a prompt was answered with must be reported as a user message on some connection."""

        def missing() -> str | None:
            reported = {
                update.get("messageId")
                for conn in [*self.closed, *self.conns.values()]
                for _, update in _all_updates(conn)
                if update.get("sessionUpdate") in USER_MESSAGE
            }
            return next((m for m in self.answered if m not in reported), None)

        while (message_id := missing()) is not None:
            name = self.answered[message_id]
            conn = self.requests[name][0]
            failure = TraceFailure(
                f"the Agent answered {name} with messageId {message_id!r} and reported no user_message or"
                f" user_message_chunk update with it; {self.rule('userMessageReport')}"
            )
            if not any(open_conn is conn for open_conn in self.conns.values()):
                raise failure
            try:
                await conn.wait(lambda: None if missing() == message_id else True, "", self.timeout)
            except TraceFailure:
                if conn.problem is not None:
                    raise
                raise failure from None

    def rule(self, name: str) -> str:
        """A rule of the traces document, quoted with where it comes from."""
        rule = self.rules.get(name) or {}
        return f'{rule.get("source", "the protocol")} says: "{rule.get("text", "")}"'

    async def do_conclude(self, _body: Any) -> None:
        """What is checked after the last step of every trace: every answered message was reported."""
        await self.await_reports()

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


def _all_updates(conn: Connection) -> Iterator[tuple[int, dict[str, Any]]]:
    """(index, update) of every session/update on the connection, whatever the session."""
    for i, note in enumerate(conn.notifications):
        if note["method"] == M.SESSION_UPDATE:
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
