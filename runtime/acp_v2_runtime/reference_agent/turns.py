"""The reference Agent's sessions and turns: the handlers of `initialize` and the `session/*` requests.

`session/prompt` goes through the key ledger, which inserts the user message at most once per key; each inserted
prompt queues a turn on its session's worker, and the work is deliberately tiny: `running`, one `agent_message`,
`idle`. `session/cancel` and `session/close` withdraw what is not inserted yet and cancel the running turn.

Two things come from the layers above: `send`, which writes a message to the Client (the transport's), and the
test hooks' points (`before_insert`, `after_insert`, `turn_mode`, `before_turn`), which do nothing here.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from acp_v2_schema import protocol as M  # method names, as the spec spells them
from acp_v2_schema.protocol import KnownErrorCode as Code
from acp_v2_schema.reader import KEY_PARAMS

from .bounds import RpcError, StoreCalls, internal_message
from .storage import insert_user_message

PROTOCOL_VERSION = 2
# The kinds of history replay (`replayFrom.type`) this Agent implements; any other is refused with -32602.
REPLAY_KINDS = frozenset({"start"})


@dataclass
class Session:
    """A session open on this connection: its work queue and worker, its release latch and held prompts."""

    session_id: str
    queue: asyncio.Queue[str] = field(default_factory=asyncio.Queue)
    worker: asyncio.Task[None] | None = None
    release: asyncio.Event = field(default_factory=asyncio.Event)
    held: set[asyncio.Task[Any]] = field(default_factory=set)


class Turns(StoreCalls):
    """The sessions open on this connection (`active`) and the handlers that keep them."""

    def __init__(self, db: str, *, lease: float) -> None:
        super().__init__(db, lease=lease)
        self.active: dict[str, Session] = {}

    def send(self, message: dict[str, Any]) -> None:
        """Write one message to the Client; the transport does (transport.Agent)."""
        raise NotImplementedError

    def notify_update(self, session_id: str, update: dict[str, Any]) -> None:
        self.send({"method": M.SESSION_UPDATE, "params": {"sessionId": session_id, "update": update}})

    # -- the test hooks' points (hooks.HookedTurns fills them) ---------------------------------------------------

    def before_insert(
        self, params: dict[str, Any], key: Any, hold: asyncio.Event | None
    ) -> Callable[[], Awaitable[None]] | None:
        """What the ledger runs before it inserts the prompt, or None: then a keyed prompt is claimed and inserted
        in one transaction."""
        return None

    def after_insert(self, key: Any) -> None:
        """Called when this attempt inserted the prompt, before anything is sent about it."""

    def turn_mode(self, params: dict[str, Any]) -> str:
        """What the prompt's turn is queued with ("" for a plain turn)."""
        return ""

    async def before_turn(self, session: Session, mode: str) -> None:
        """Awaited when a turn queued with `mode` starts."""

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
        }

    async def session_new(self, params: dict[str, Any]) -> dict[str, Any]:
        session_id = f"sess_{uuid.uuid4().hex[:16]}"
        row = (session_id, params["cwd"], time.time())
        await self.stored(lambda: self._write("INSERT INTO ref_sessions VALUES (?, ?, NULL, ?)", row))
        self.open(session_id)
        return {"sessionId": session_id}

    async def session_resume(self, params: dict[str, Any]) -> dict[str, Any]:
        replay = params.get("replayFrom")  # omitted or null: no replay (the generated model checked the rest)
        if replay is not None and replay.get("type") not in REPLAY_KINDS:
            raise RpcError(
                Code.INVALID_PARAMS,
                "Invalid params: replayFrom.type is not a kind of replay this Agent supports (only start)",
                {"param": "replayFrom", "reason": "unsupported-replay"},
            )
        session_id = await self.require_stored(params)
        session = self.open(session_id)
        if replay is not None:
            sql = "SELECT message_id, role, content FROM ref_messages WHERE session_id = ? ORDER BY seq"
            rows = await self.stored(lambda: self._read(sql, (session_id,)))
            for message_id, role, content in rows:
                kind = "user_message" if role == "user" else "agent_message"
                self.notify_update(
                    session_id, {"sessionUpdate": kind, "messageId": message_id, "content": json.loads(content)}
                )
        running = session.worker is not None and not session.worker.done()
        self.notify_update(session_id, {"sessionUpdate": "state_update", "state": "running" if running else "idle"})
        return {}

    async def session_list(self, params: dict[str, Any]) -> dict[str, Any]:
        rows = await self.stored(
            lambda: self._read("SELECT session_id, cwd, title, updated_at FROM ref_sessions ORDER BY 4")
        )
        sessions = [
            {"sessionId": sid, "cwd": cwd, "title": title, "updatedAt": _iso(updated)}
            for sid, cwd, title, updated in rows
        ]
        return {"sessions": sessions}

    async def session_close(self, params: dict[str, Any]) -> dict[str, Any]:
        session_id = params["sessionId"]
        self.cancel_session(session_id)  # prompts not inserted yet get -32800
        self.active.pop(session_id, None)
        return {}

    async def require_stored(self, params: dict[str, Any]) -> str:
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            raise RpcError(Code.INVALID_PARAMS, "Invalid params: sessionId must be a string")
        rows = await self.stored(lambda: self._read("SELECT 1 FROM ref_sessions WHERE session_id = ?", (session_id,)))
        if not rows:
            raise RpcError(Code.RESOURCE_NOT_FOUND, "Resource not found: no such session")
        return session_id

    # -- prompts ---------------------------------------------------------------------------------------------

    async def session_prompt(self, params: dict[str, Any], rid: Any, hold: asyncio.Event | None) -> dict[str, Any]:
        # The params passed the generated PromptRequest model, so sessionId is a string and prompt a list of blocks.
        session = self.active.get(params["sessionId"])
        if session is None:
            raise RpcError(Code.RESOURCE_NOT_FOUND, "Resource not found: the session is not active on this connection")
        prompt = params["prompt"]
        key_name = KEY_PARAMS.get(M.SESSION_PROMPT)
        # --ignore-keys removed it already. The value is checked once, by the ledger (InvalidKey, -32602), before
        # anything else happens to the prompt; None (omitted or null) means no key.
        key = params.get(key_name) if key_name else None
        sid = session.session_id
        step = self.before_insert(params, key, hold)

        def write(conn: Any, message_id: str) -> None:
            insert_user_message(conn, sid, message_id, prompt)

        if key is None:
            # Without a key, the request task itself is what session/cancel and $/cancel_request withdraw; the
            # ledger runs `step`, then inserts with no key bookkeeping.
            task = asyncio.current_task()
            assert task is not None
            session.held.add(task)
            try:
                submitted = await self.keyed(
                    lambda: self.ledger.submit(sid, None, rid, prompt=prompt, prepare=step, write=write)
                )
            finally:
                session.held.discard(task)
        else:
            submitted = await self.keyed(
                lambda: self.ledger.submit(sid, key, rid, prompt=prompt, prepare=step, write=write)
            )
        message_id = submitted.message_id
        if submitted.inserted:  # False for a retry, and for an attempt that joined another one
            self.after_insert(key)
            self.notify_update(sid, {"sessionUpdate": "user_message", "messageId": message_id, "content": prompt})
            session.queue.put_nowait(self.turn_mode(params))
            if session.worker is None or session.worker.done():
                session.worker = asyncio.get_running_loop().create_task(self.work(session))
        return {"messageId": message_id}

    async def work(self, session: Session) -> None:
        """The session's turns, one queued prompt after another; never ends with an exception (nobody awaits it)."""
        sid = session.session_id
        self.notify_update(sid, {"sessionUpdate": "state_update", "state": "running"})
        insert = "INSERT INTO ref_messages (session_id, message_id, role, content) VALUES (?, ?, 'agent', ?)"
        try:
            while not session.queue.empty():
                await self.before_turn(session, session.queue.get_nowait())
                message_id = f"msg_agent_{uuid.uuid4().hex[:12]}"
                content = [{"type": "text", "text": "Done."}]
                row = (sid, message_id, json.dumps(content, allow_nan=False))
                await self.stored(lambda row=row: self._write(insert, row))  # type: ignore[misc]
                self.notify_update(sid, {"sessionUpdate": "agent_message", "messageId": message_id, "content": content})
                await asyncio.sleep(0)
        except asyncio.CancelledError:
            self.notify_update(sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"})
            return
        except Exception as exc:  # the store failed (a full disk, a locked database): the turn ends in error
            log(f"error in a turn: {type(exc).__name__}")
            while not session.queue.empty():
                session.queue.get_nowait()  # the turns queued behind it end with it
            code, message = (
                (exc.code, exc.message) if isinstance(exc, RpcError) else (Code.INTERNAL_ERROR, internal_message(exc))
            )
            error = {"code": int(code), "message": message}
            self.notify_update(
                sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "error", "error": error}
            )
            return
        self.notify_update(sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def log(text: str) -> None:
    """Diagnostics on stderr: method names and request ids only, never params (they may hold keys)."""
    if os.environ.get("ACP_REFERENCE_AGENT_LOG"):
        print(f"reference-agent: {text}", file=sys.stderr, flush=True)
