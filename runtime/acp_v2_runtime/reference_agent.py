"""A small ACP v2 Agent over stdio, built on the key ledger with the SQLite store: the conformance reference.

    python -m acp_v2_runtime.reference_agent --db agent.db [--ignore-keys] [--lease SECONDS]

It speaks newline-delimited JSON-RPC on stdin/stdout and keeps sessions, messages and keys in one SQLite file,
so a restarted process (or a second one) sees what the first inserted. It handles `initialize`, `session/new`,
`session/resume` (replays the stored messages, then reports the state), `session/list`, `session/close`,
`session/prompt`, `session/cancel` and `$/cancel_request`. Work is deliberately tiny: `running`, one
`agent_message`, `idle`.

Test hooks, for the conformance traces only, ride in the prompt's `_meta.conformance`: `holdInsert` keeps the
prompt before insertion and `holdWork` keeps the work running, both until a `_conformance/release`
notification for the session; `failInsert` rejects the prompt before insertion (-32603). `--crash-after claim`
or `--crash-after insert` kills the process with SIGKILL at that point of the first keyed prompt.
`--ignore-keys` makes it behave like an Agent that knows nothing of keys, so the runner can prove it fails.
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

from .idempotency import KeyLedger, LedgerError, SQLiteStore, validate_key

PROTOCOL_VERSION = 2
SCHEMA = """
CREATE TABLE IF NOT EXISTS ref_sessions (
    session_id TEXT PRIMARY KEY, cwd TEXT NOT NULL, title TEXT, updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS ref_messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, message_id TEXT NOT NULL,
    role TEXT NOT NULL, content TEXT NOT NULL
);
"""


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


@dataclass
class Session:
    session_id: str
    queue: asyncio.Queue[str] = field(default_factory=asyncio.Queue)
    worker: asyncio.Task[None] | None = None
    release: asyncio.Event = field(default_factory=asyncio.Event)
    held: set[asyncio.Task[Any]] = field(default_factory=set)


class Agent:
    def __init__(self, db: str, *, ignore_keys: bool, lease: float, crash_after: str | None) -> None:
        self.store = SQLiteStore(db, lease_seconds=lease, setup=_create_tables)
        self.ledger = KeyLedger(self.store)
        self.ignore_keys = ignore_keys
        self.crash_after = crash_after
        self.active: dict[str, Session] = {}
        self.requests: dict[Hashable, asyncio.Task[Any]] = {}
        self.out = sys.stdout.buffer

    # -- transport ---------------------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        self.out.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.out.flush()

    def notify_update(self, session_id: str, update: dict[str, Any]) -> None:
        self.send({"method": M.SESSION_UPDATE, "params": {"sessionId": session_id, "update": update}})

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=2**24)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while line := await reader.readline():
            try:
                message = json.loads(line)
            except ValueError:
                self.send({"id": None, "error": {"code": Code.PARSE_ERROR, "message": "Parse error"}})
                continue
            self.dispatch(message)
            await asyncio.sleep(0)  # let the request start before the next line, so a cancel finds it registered
        for task in list(self.requests.values()):
            task.cancel()

    def dispatch(self, message: Any) -> None:
        if not isinstance(message, dict) or not isinstance(message.get("id"), str | int | type(None)):
            self.send({"id": None, "error": {"code": Code.INVALID_REQUEST, "message": "Invalid Request"}})
            return
        method, params, rid = message.get("method"), message.get("params") or {}, message.get("id")
        if not isinstance(params, dict):
            params = {}
        log(f"<- {method} id={rid}")
        if rid is None:
            self.on_notification(method, params)
            return
        # Hold latches are taken when the request is read, so a release read later applies to it.
        hold = None
        if method == M.SESSION_PROMPT:
            session = self.active.get(str(params.get("sessionId")))
            if _hooks(params).get("holdInsert") and session is not None:
                hold = session.release
        task = asyncio.get_running_loop().create_task(self.answer(rid, method, params, hold))
        self.requests[rid] = task
        task.add_done_callback(lambda _: self.requests.pop(rid, None))

    async def answer(self, rid: Any, method: str, params: dict[str, Any], hold: asyncio.Event | None) -> None:
        handler = HANDLERS.get(method)
        try:
            if handler is None:
                raise RpcError(Code.METHOD_NOT_FOUND, f"Method not found: {method}")
            result = await (handler(self, params, rid, hold) if method == M.SESSION_PROMPT else handler(self, params))
        except (RpcError, LedgerError) as exc:
            self.send({"id": rid, "error": {"code": exc.code, "message": exc.message}})
        except asyncio.CancelledError:
            self.send({"id": rid, "error": {"code": Code.REQUEST_CANCELLED, "message": "Request cancelled"}})
        except Exception as exc:  # a bug or a storage failure: answer it, never crash the connection
            log(f"error in {method}: {type(exc).__name__}")
            self.send({"id": rid, "error": {"code": Code.INTERNAL_ERROR, "message": "Internal error"}})
        else:
            self.send({"id": rid, "result": result})

    def on_notification(self, method: str | None, params: dict[str, Any]) -> None:
        if method == M.CANCEL_REQUEST:
            rid = params.get("requestId")
            if not isinstance(rid, str | int):
                return
            if self.ledger.cancel(rid):
                return  # a keyed prompt: the ledger answers every attempt with its key
            for session in self.active.values():
                for task in list(session.held):
                    if task is self.requests.get(rid):
                        task.cancel()  # an unkeyed prompt that is not inserted yet
        elif method == M.SESSION_CANCEL:
            self.cancel_session(str(params.get("sessionId")))
        elif method == "_conformance/release":
            session = self.active.get(str(params.get("sessionId")))
            if session is not None:
                session.release.set()
                session.release = asyncio.Event()

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
            "agentCapabilities": {"session": {"resume": True, "list": True, "close": True}},
            "agentInfo": {"name": "acp-v2-reference-agent", "version": "0.1.0"},
        }

    async def session_new(self, params: dict[str, Any]) -> dict[str, Any]:
        session_id = f"sess_{uuid.uuid4().hex[:16]}"
        with self.store.transaction() as conn:
            conn.execute(
                "INSERT INTO ref_sessions VALUES (?, ?, NULL, ?)", (session_id, str(params.get("cwd", "")), time.time())
            )
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
        session_id = str(params.get("sessionId", ""))
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
        session = self.active.get(str(params.get("sessionId")))
        if session is None:
            raise RpcError(Code.RESOURCE_NOT_FOUND, "Resource not found: the session is not active on this connection")
        prompt = params.get("prompt")
        if not isinstance(prompt, list) or not prompt or not all(isinstance(b, dict) and "type" in b for b in prompt):
            raise RpcError(Code.INVALID_PARAMS, "Invalid params: prompt must be a non-empty array of content blocks")
        hooks = _hooks(params)
        key = None if self.ignore_keys else validate_key(params.get("idempotencyKey"))
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
            conn.execute(
                "INSERT INTO ref_messages (session_id, message_id, role, content) VALUES (?, ?, 'user', ?)",
                (sid, message_id, json.dumps(prompt)),
            )
            wrote.append(message_id)
            conn.execute("UPDATE ref_sessions SET updated_at = ? WHERE session_id = ?", (time.time(), sid))

        if key is None:
            # Without a key, the request task itself is what session/cancel and $/cancel_request withdraw.
            task = asyncio.current_task()
            assert task is not None
            session.held.add(task)
            try:
                await prepare()
            finally:
                session.held.discard(task)
            message_id = f"msg_{uuid.uuid4().hex}"
            with self.store.transaction() as conn:
                write(conn, message_id)
        else:
            message_id = await self.ledger.submit(sid, key, rid, prompt=prompt, prepare=prepare, write=write)
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


def _hooks(params: dict[str, Any]) -> dict[str, Any]:
    """The conformance test hooks of a prompt (`_meta.conformance`), or {} when there are none."""
    meta = params.get("_meta")
    hooks = meta.get("conformance") if isinstance(meta, dict) else None
    return hooks if isinstance(hooks, dict) else {}


def _create_tables(conn: sqlite3.Connection) -> None:
    for statement in SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)  # not executescript(), which would commit the open transaction


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
    args = parser.parse_args(argv)
    agent = Agent(args.db, ignore_keys=args.ignore_keys, lease=args.lease, crash_after=args.crash_after)
    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
        asyncio.run(agent.serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
