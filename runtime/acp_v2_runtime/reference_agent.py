"""A small ACP v2 Agent over stdio, built on the key ledger with the SQLite store: the conformance reference.

    python -m acp_v2_runtime.reference_agent --db agent.db [--ignore-keys] [--lease SECONDS] [--offers NAMES]

It speaks newline-delimited JSON-RPC on stdin/stdout and keeps sessions, messages and keys in one SQLite file,
so a restarted process (or a second one) sees what the first inserted. It handles `initialize`, `session/new`,
`session/resume` (replays the stored messages, then reports the state), `session/list`, `session/close`,
`session/prompt`, `session/cancel` and `$/cancel_request`. Work is deliberately tiny: `running`, one
`agent_message`, `idle`.

Test hooks, for the conformance traces only, ride in the prompt's `_meta["acp-v2-retry/conformance"]` (the
handshake key of the traces document): `holdInsert` keeps the prompt before insertion and `holdWork` keeps the
work running, both until a `_conformance/release` notification for the session; `failInsert` rejects the
prompt before insertion (-32603). The `initialize` result offers them, and `storedSessions`, under the same key
(`"offers": [...]`), which is how the conformance runner knows it may run the traces that need them; `--offers`
names fewer (`--offers ''` none), to show the runner skipping what an Agent does not offer. `--crash-after claim`
or `--crash-after insert` kills the process with SIGKILL at that point of the first keyed prompt.
`--ignore-keys` makes it behave like an Agent that knows nothing of keys, so the runner can prove it fails.

Bad input costs one error answer, never the process (framing and checks are in `jsonrpc`): -32700 for a line
that is not UTF-8 JSON (or nests deeper than Python parses), -32600 for anything that is not a valid Request
object (a batch, a line over 16 MiB, `jsonrpc` other than "2.0", a non-string `method`, an id that is not a
string or an integer, params neither object nor array), -32601 for a method it does not handle, and -32602
when the params do not fit the generated model the spec names for the method, checked before any work. Those
answers carry the request's id when it was valid, else null. Responses from the Client are never answered,
nor are notifications. A `--db` file that exists but is not this Agent's database (empty, corrupted, another
program's) is refused at startup with one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import sys
import time
import uuid
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from acp_v2_schema import protocol as M  # method names, as the spec spells them
from acp_v2_schema.protocol import KnownErrorCode as Code

from . import jsonrpc
from .agent_db import DatabaseRefused, insert_user_message, open_store
from .conformance import handshake_key
from .idempotency import KeyLedger, LedgerError

PROTOCOL_VERSION = 2
RELEASE = "_conformance/release"  # the test hook's notification (an extension method, so not in the spec)


class RpcError(Exception):
    """An error answer to a request: `code` (from KnownErrorCode) and `message` go into the response."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


@dataclass
class Session:
    """A session open on this connection: its work queue and worker, its release latch and held prompts."""

    session_id: str
    queue: asyncio.Queue[str] = field(default_factory=asyncio.Queue)
    worker: asyncio.Task[None] | None = None
    release: asyncio.Event = field(default_factory=asyncio.Event)
    held: set[asyncio.Task[Any]] = field(default_factory=set)


class Agent:
    """One connection's Agent: reads lines from stdin, answers on stdout, keeps its data in the SQLite file."""

    def __init__(
        self, db: str, *, ignore_keys: bool, lease: float, crash_after: str | None, offers: tuple[str, ...] = ()
    ) -> None:
        self.offers = offers
        self.store = open_store(db, lease=lease)
        # Store calls run on the event loop, as every other write of this Agent does: a transaction on the local
        # file takes microseconds, less than handing it to a worker thread and back.
        self.ledger = KeyLedger(self.store, threaded=False)
        self.ignore_keys = ignore_keys
        self.crash_after = crash_after
        self.active: dict[str, Session] = {}
        self.requests: dict[Hashable, asyncio.Task[Any]] = {}
        self.out = sys.stdout.buffer
        self.closed = False

    # -- transport ---------------------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        if self.closed:
            return
        try:
            self.out.write(jsonrpc.encode({"jsonrpc": "2.0", **message}))
            self.out.flush()
        except (BrokenPipeError, ValueError):  # the Client went away (ValueError: stdout already closed)
            self.closed = True

    def fail(self, rid: int | str | None, code: int, message: str) -> None:
        self.send(jsonrpc.error(rid, code, message))

    def notify_update(self, session_id: str, update: dict[str, Any]) -> None:
        self.send({"method": M.SESSION_UPDATE, "params": {"sessionId": session_id, "update": update}})

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        stream = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), sys.stdin)
        reader = jsonrpc.LineReader(stream)
        while (line := await reader.next_line()) is not None:
            try:
                self.receive(line)
            except Exception as exc:  # a bug must cost one answer, never the connection
                log(f"error reading a line: {type(exc).__name__}")
                self.fail(None, Code.INTERNAL_ERROR, "Internal error")
            await asyncio.sleep(0)  # let the request start before the next line, so a cancel finds it registered
        for task in list(self.requests.values()):
            task.cancel()

    def receive(self, line: bytes | jsonrpc.Oversized) -> None:
        """Handle one line: answer it at once when it is not a valid call, else start its work."""
        if isinstance(line, jsonrpc.Oversized):
            self.fail(None, Code.INVALID_REQUEST, f"Invalid Request: {line}")
            return
        if not line.strip(jsonrpc.JSON_WHITESPACE):
            return  # an empty line carries no message
        try:
            message = jsonrpc.parse_line(line)
        except jsonrpc.ParseError as exc:
            self.fail(None, Code.PARSE_ERROR, f"Parse error: {exc}")
            return
        if jsonrpc.is_response_shaped(message):
            log("<- a response; this Agent sends no requests, so it is dropped")
            return  # answering a response could start an endless exchange of errors
        try:
            call = jsonrpc.classify(message)
        except jsonrpc.InvalidMessage as exc:
            self.fail(exc.request_id, Code.INVALID_REQUEST, f"Invalid Request: {exc.reason}")
            return
        assert isinstance(call, jsonrpc.Call)  # responses were dropped above
        log(f"<- {call.method!a} id={call.id!a}")
        if call.id is None:
            self.on_notification(call)
        else:
            self.dispatch(call)

    def dispatch(self, call: jsonrpc.Call) -> None:
        rid, method = call.id, call.method
        assert rid is not None
        if method not in HANDLERS:
            self.fail(rid, Code.METHOD_NOT_FOUND, f"Method not found: {method[:200]}")  # a name may be megabytes
            return
        raw = call.params
        if self.ignore_keys and isinstance(raw, dict):
            # An Agent from before keys existed does not know the parameter, so it never checks it.
            raw = {k: v for k, v in raw.items() if k != jsonrpc.key_param(method)}
        problems = jsonrpc.params_problems(method, call.kind, raw)
        if problems:  # checked with the generated models before any work
            self.fail(rid, Code.INVALID_PARAMS, jsonrpc.invalid_params_message(problems))
            return
        assert isinstance(raw, dict | type(None))  # every handled method's params type is an object
        params = raw or {}
        # Hold latches are taken when the request is read, so a release read later applies to it.
        hold = None
        if method == M.SESSION_PROMPT:
            session = self.active.get(params["sessionId"])
            if _hooks(params).get("holdInsert") and session is not None:
                hold = session.release
        task = asyncio.get_running_loop().create_task(self.answer(rid, method, params, hold))
        self.requests[rid] = task
        task.add_done_callback(lambda _: self.requests.pop(rid, None))

    async def answer(self, rid: Any, method: str, params: dict[str, Any], hold: asyncio.Event | None) -> None:
        handler = HANDLERS[method]
        try:
            result = await (handler(self, params, rid, hold) if method == M.SESSION_PROMPT else handler(self, params))
        except (RpcError, LedgerError) as exc:
            self.fail(rid, exc.code, exc.message)
        except asyncio.CancelledError:
            self.fail(rid, Code.REQUEST_CANCELLED, "Request cancelled")
        except Exception as exc:  # a bug or a storage failure: answer it, never crash the connection
            log(f"error in {method}: {type(exc).__name__}")
            self.fail(rid, Code.INTERNAL_ERROR, "Internal error")
        else:
            self.send({"id": rid, "result": result})

    def on_notification(self, call: jsonrpc.Call) -> None:
        """Act on a notification; an unknown one, or one with invalid params, is ignored (nothing can answer it)."""
        params = call.params if isinstance(call.params, dict) else {}
        if call.method == RELEASE:
            # An extension method, so no generated type checks it: only a string can name a session.
            sid = params.get("sessionId")
            session = self.active.get(sid) if isinstance(sid, str) else None
            if session is not None:
                session.release.set()
                session.release = asyncio.Event()
            return
        if call.method not in (M.CANCEL_REQUEST, M.SESSION_CANCEL):
            return
        problems = jsonrpc.params_problems(call.method, call.kind, call.params)
        if problems:
            log(f"ignored {call.method}: {problems[0]}")
            return
        if call.method == M.CANCEL_REQUEST:
            rid = params["requestId"]
            if self.ledger.cancel(rid):
                return  # a keyed prompt: the ledger answers every attempt with its key
            for session in self.active.values():
                for task in list(session.held):
                    if task is self.requests.get(rid):
                        task.cancel()  # an unkeyed prompt that is not inserted yet
        else:
            self.cancel_session(params["sessionId"])

    # -- sessions --------------------------------------------------------------------------------------------

    def open(self, session_id: str) -> Session:
        session = self.active.get(session_id)
        if session is None:
            session = self.active[session_id] = Session(session_id)
        return session

    def cancel_session(self, session_id: str) -> None:
        self.ledger.cancel_session(session_id)
        session = self.active.get(session_id)
        if session is None:
            return
        for task in list(session.held):
            task.cancel()
        if session.worker is not None and not session.worker.done():
            session.worker.cancel()

    async def initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "protocolVersion": PROTOCOL_VERSION,
            "info": {"name": "acp-v2-reference-agent", "version": "0.1.0"},
            "capabilities": {},  # resume, list and close are part of every v2 Agent
            # The conformance handshake: the test hooks below, and the SQLite file that outlives each process.
            "_meta": {HOOKS_KEY: {"offers": list(self.offers)}},
        }

    async def session_new(self, params: dict[str, Any]) -> dict[str, Any]:
        session_id = f"sess_{uuid.uuid4().hex[:16]}"
        with self.store.transaction() as conn:
            conn.execute("INSERT INTO ref_sessions VALUES (?, ?, NULL, ?)", (session_id, params["cwd"], time.time()))
        self.open(session_id)
        return {"sessionId": session_id}

    async def session_resume(self, params: dict[str, Any]) -> dict[str, Any]:
        session_id = self.require_stored(params)
        session = self.open(session_id)
        rows = self.store.connection().execute(
            "SELECT message_id, role, content FROM ref_messages WHERE session_id = ? ORDER BY seq", (session_id,)
        )
        for message_id, role, content in rows.fetchall():
            kind = "user_message" if role == "user" else "agent_message"
            self.notify_update(
                session_id, {"sessionUpdate": kind, "messageId": message_id, "content": json.loads(content)}
            )
        running = session.worker is not None and not session.worker.done()
        self.notify_update(session_id, {"sessionUpdate": "state_update", "state": "running" if running else "idle"})
        return {}

    async def session_list(self, params: dict[str, Any]) -> dict[str, Any]:
        rows = self.store.connection().execute("SELECT session_id, cwd, title, updated_at FROM ref_sessions ORDER BY 4")
        sessions = [
            {"sessionId": sid, "cwd": cwd, "title": title, "updatedAt": _iso(updated)}
            for sid, cwd, title, updated in rows.fetchall()
        ]
        return {"sessions": sessions}

    async def session_close(self, params: dict[str, Any]) -> dict[str, Any]:
        session_id = params["sessionId"]
        self.cancel_session(session_id)  # prompts not inserted yet get -32800
        self.active.pop(session_id, None)
        return {}

    def require_stored(self, params: dict[str, Any]) -> str:
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            raise RpcError(Code.INVALID_PARAMS, "Invalid params: sessionId must be a string")
        row = self.store.connection().execute("SELECT 1 FROM ref_sessions WHERE session_id = ?", (session_id,))
        if row.fetchone() is None:
            raise RpcError(Code.RESOURCE_NOT_FOUND, "Resource not found: no such session")
        return session_id

    # -- prompts ---------------------------------------------------------------------------------------------

    async def session_prompt(self, params: dict[str, Any], rid: Any, hold: asyncio.Event | None) -> dict[str, Any]:
        # The params passed the generated PromptRequest model, so sessionId is a string and prompt a list of blocks.
        session = self.active.get(params["sessionId"])
        if session is None:
            raise RpcError(Code.RESOURCE_NOT_FOUND, "Resource not found: the session is not active on this connection")
        prompt = params["prompt"]
        hooks = _hooks(params)
        key_name = jsonrpc.key_param(M.SESSION_PROMPT)
        # --ignore-keys removed it already. The value is checked once, by the ledger (InvalidKey, -32602), before
        # anything else happens to the prompt; None (omitted or null) means no key.
        key = params.get(key_name) if key_name else None
        sid = session.session_id
        wrote: list[str] = []

        async def prepare() -> None:
            if key is not None and self.crash_after == "claim":
                os.kill(os.getpid(), signal.SIGKILL)
            if hooks.get("failInsert"):
                raise RpcError(Code.INTERNAL_ERROR, "Internal error: a pre-insertion hook failed")
            if hold is not None:
                await hold.wait()

        def write(conn: sqlite3.Connection, message_id: str) -> None:
            insert_user_message(conn, sid, message_id, prompt)
            wrote.append(message_id)

        if key is None:
            # Without a key, the request task itself is what session/cancel and $/cancel_request withdraw; the
            # ledger runs `prepare`, then inserts with no key bookkeeping.
            task = asyncio.current_task()
            assert task is not None
            session.held.add(task)
            try:
                message_id = await self.ledger.submit(sid, None, rid, prompt=prompt, prepare=prepare, write=write)
            finally:
                session.held.discard(task)
        else:
            # Without pre-insertion work the ledger claims the key and inserts the message in one transaction.
            needs_prepare = hold is not None or hooks.get("failInsert") or self.crash_after == "claim"
            message_id = await self.ledger.submit(
                sid, key, rid, prompt=prompt, prepare=prepare if needs_prepare else None, write=write
            )
        fresh = bool(wrote)  # False for a retry, and for an attempt that joined another one
        if key is not None and fresh and self.crash_after == "insert":
            os.kill(os.getpid(), signal.SIGKILL)
        if fresh:
            self.notify_update(sid, {"sessionUpdate": "user_message", "messageId": message_id, "content": prompt})
            session.queue.put_nowait("hold" if hooks.get("holdWork") else "")
            if session.worker is None or session.worker.done():
                session.worker = asyncio.get_running_loop().create_task(self.work(session))
        return {"messageId": message_id}

    async def work(self, session: Session) -> None:
        sid = session.session_id
        self.notify_update(sid, {"sessionUpdate": "state_update", "state": "running"})
        try:
            while not session.queue.empty():
                mode = session.queue.get_nowait()
                if mode == "hold":
                    await session.release.wait()
                message_id = f"msg_agent_{uuid.uuid4().hex[:12]}"
                content = [{"type": "text", "text": "Done."}]
                with self.store.transaction() as conn:
                    conn.execute(
                        "INSERT INTO ref_messages (session_id, message_id, role, content) VALUES (?, ?, 'agent', ?)",
                        (sid, message_id, json.dumps(content)),
                    )
                self.notify_update(sid, {"sessionUpdate": "agent_message", "messageId": message_id, "content": content})
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            self.notify_update(sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"})
            return
        self.notify_update(sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})


HOOKS_KEY = handshake_key()
"""The `_meta` key of the conformance handshake and of the prompt hooks (from the traces document)."""
OFFERS = ("failInsert", "holdInsert", "holdWork", "storedSessions")
"""What this Agent offers the conformance traces beyond the protocol (names from the traces document's `needs`)."""


def _hooks(params: dict[str, Any]) -> dict[str, Any]:
    """The conformance test hooks of a prompt (`_meta[HOOKS_KEY]`), or {} when there are none."""
    meta = params.get("_meta")
    hooks = meta.get(HOOKS_KEY) if isinstance(meta, dict) else None
    return hooks if isinstance(hooks, dict) else {}


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def log(text: str) -> None:
    """Diagnostics on stderr: method names and request ids only, never params (they may hold keys)."""
    if os.environ.get("ACP_REFERENCE_AGENT_LOG"):
        print(f"reference-agent: {text}", file=sys.stderr, flush=True)


HANDLERS: dict[str, Any] = {
    M.INITIALIZE: Agent.initialize,
    M.SESSION_NEW: Agent.session_new,
    M.SESSION_RESUME: Agent.session_resume,
    M.SESSION_LIST: Agent.session_list,
    M.SESSION_CLOSE: Agent.session_close,
    M.SESSION_PROMPT: Agent.session_prompt,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m acp_v2_runtime.reference_agent", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--db", required=True, help="SQLite file for sessions, messages and keys")
    parser.add_argument("--ignore-keys", action="store_true", help="ignore idempotencyKey (to prove the runner fails)")
    parser.add_argument("--lease", type=float, default=30.0, help="seconds before an abandoned claim expires")
    parser.add_argument("--crash-after", choices=("claim", "insert"), help="SIGKILL itself at this point (tests)")
    parser.add_argument(
        "--offers",
        type=lambda text: tuple(name for name in text.split(",") if name),
        default=OFFERS,
        help=f"what the initialize result offers the conformance runner, comma-separated (default {','.join(OFFERS)})",
    )
    args = parser.parse_args(argv)
    try:
        agent = Agent(
            args.db, ignore_keys=args.ignore_keys, lease=args.lease, crash_after=args.crash_after, offers=args.offers
        )
    except DatabaseRefused as exc:
        print(f"{parser.prog}: cannot use --db {args.db}: {exc}", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
        asyncio.run(agent.serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
