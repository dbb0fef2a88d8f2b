"""A small ACP v2 Agent over stdio, built on the key ledger with an SQL store: the conformance reference.

    python -m acp_v2_runtime.reference_agent --db agent.db [--ignore-keys] [--lease SECONDS] [--offers NAMES]
    python -m acp_v2_runtime.reference_agent --db postgresql://user@host/agents ...

It speaks newline-delimited JSON-RPC on stdin/stdout and keeps sessions, messages and keys in one SQLite file or
one PostgreSQL database (`--db` a `postgresql://` URL, whose password is never shown), so a restarted process, or
any other one on the same database, sees what the first inserted: several Agents can serve one Client. It
handles `initialize`, `session/new`, `session/resume` (replays the stored messages when `replayFrom` asks, then
reports the state), `session/list`, `session/close`, `session/prompt`, `session/cancel` and `$/cancel_request`.
Work is deliberately tiny: `running`, one `agent_message`, `idle`.

Test hooks, for the conformance traces only, ride in the prompt's `_meta["acp-v2-retry/conformance"]` (the
handshake key of the traces document): `holdInsert` keeps the prompt before insertion and `holdWork` keeps the
work running, both until a `_conformance/release` notification for the session; `failInsert` rejects the
prompt before insertion (-32603). The `initialize` result offers them, and `storedSessions`, under the same key
(`"offers": [...]`), which is how the conformance runner knows it may run the traces that need them; `--offers`
names fewer (`--offers ''` none), to show the runner skipping what an Agent does not offer. `--crash-after claim`
or `--crash-after insert` kills the process with SIGKILL at that point of the first keyed prompt.
`--ignore-keys` makes it behave like an Agent that knows nothing of keys, so the runner can prove it fails.

Bad input costs one error answer, never the process. The generated `acp_v2_schema.reader.MessageReader` classifies
every line (framing is in `jsonrpc`), and each `Invalid` is answered with the code and the id it names: -32700 for
a line that is not UTF-8 JSON (or nests deeper than Python parses, or holds a number a float cannot, such as
1e999), -32600 for anything that is not a valid Request object (a batch, a line over 16 MiB, `jsonrpc` other than
"2.0", a non-string `method`, an id that is not a string or an integer within the range of `RequestId`, params
neither object nor array), -32601 for a method it does not handle (`HANDLERS`: this Agent's own), and -32602 when
the params do not fit the generated model the spec names for the method (a malformed key among them), checked
before any work. Those answers carry the request's id when it was valid, else null (`answer_id`). Responses from
the Client are never answered, nor are notifications. A `--db` file that exists but is not this Agent's database
(empty, corrupted, another program's) is refused at startup with one line on stderr and exit status 2. Standard
input may be of any kind (a regular file, /dev/null, closed): it is read to its end, then the process exits.
Storage never blocks the connection: a locked database is tried again for at most LOCK_WAIT_SECONDS, a database
server's call is waited for at most STORE_WAIT_SECONDS (in a worker thread), then -32603 (a COMMIT sent by then is
waited for instead: its outcome is the answer); a failed write ends the request with -32603, or the turn with the
`idle` state and stopReason `error`. A prompt the generated models read only by salvaging (ACP's lenient rules) is
acted on, stored and replayed without what they set aside.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import json
import math
import os
import signal
import sqlite3
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from acp_v2_schema import protocol as M  # method names, as the spec spells them
from acp_v2_schema.protocol import KnownErrorCode as Code
from acp_v2_schema.reader import KEY_PARAMS, Invalid, MessageReader, Notification, Request, line_too_long

from . import jsonrpc
from .agent_db import DatabaseRefused, insert_user_message, is_url, open_store, redacted, sql
from .conformance import handshake_key
from .idempotency import KeyLedger, LedgerError
from .idempotency.calls import CommitGate, run_gated
from .idempotency.keys import InvalidKey, KeyReused, validate_key

T = TypeVar("T")
PROTOCOL_VERSION = 2
RELEASE = "_conformance/release"  # the test hook's notification (an extension method, so not in the spec)


# How long a store call waits for a database that another process has locked before the request gets -32603, which
# the spec gives to a store that is briefly unavailable. The wait never blocks the connection: each try fails at
# once (SQLite's busy timeout is 0 on this connection) and the next is awaited, so other lines are served meanwhile.
LOCK_WAIT_SECONDS = 2.0
_FIRST_RETRY_SECONDS = 0.005
_LAST_RETRY_SECONDS = 0.05
# How long the Agent's own call to a database server (`--db postgresql://...`) may take before its request gets
# -32603 (or its turn ends in error): a server that is slow, frozen or unreachable costs one bounded answer.
STORE_WAIT_SECONDS = 5.0
FINISH_SECONDS = 2 * STORE_WAIT_SECONDS  # at the end of the input, how long a keyed insertion under way may take
STORE_THREADS = 32  # worker threads for a server's calls: those stuck on a frozen server leave others free
# The kinds of history replay (`replayFrom.type`) this Agent implements; any other is refused with -32602.
REPLAY_KINDS = frozenset({"start"})


class RpcError(Exception):
    """An error answer to a request: `code` (from KnownErrorCode), `message` and `data` go into the response."""

    def __init__(self, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


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
        # A bounded wait at startup; on a server, every call is bounded by STORE_WAIT_SECONDS, the ledger's too.
        self.store = open_store(db, lease=lease, busy_timeout=LOCK_WAIT_SECONDS, server_wait=STORE_WAIT_SECONDS)
        # A database server (`--db postgresql://...`) is reached over the network and shared with other Agents: its
        # calls run in worker threads, each bounded by STORE_WAIT_SECONDS, so a slow or frozen server never holds up
        # the lines that need no store.
        self.remote = is_url(db)
        if not self.remote:
            # From here on, a locked database fails each try at once and `stored` awaits the next, never the loop.
            self.store.connection().execute("PRAGMA busy_timeout = 0")
        # SQLite's calls run on the event loop, as every other write of this Agent does: a transaction on the local
        # file takes microseconds, less than handing it to a worker thread and back.
        self.ledger = KeyLedger(self.store, threaded=self.remote)
        # The generated reader classifies every line. This Agent sends no requests, so it remembers none; it refuses
        # what JSON cannot write back, acts on the parsed params (`raw`; what a lenient read salvaged is dropped, see
        # `_validated`), and with --ignore-keys never sees a key.
        self.reader = MessageReader(remember_requests=False, strict_json=True, keep_raw=True, ignore_keys=ignore_keys)
        self.crash_after = crash_after
        self.active: dict[str, Session] = {}
        self.requests: dict[Hashable, asyncio.Task[Any]] = {}
        self.keyed_ids: set[Hashable] = set()  # the ids of keyed prompts in flight
        self.out = getattr(sys.stdout, "buffer", None)
        self.closed = self.out is None  # stdout closed at start: nothing can be answered, but the input is read

    # -- transport ---------------------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        if self.closed:
            return
        try:
            line = jsonrpc.encode({"jsonrpc": "2.0", **message})
        except ValueError:  # not JSON (NaN or an infinity, say): never written; a request still gets an answer
            log("a message that JSON cannot hold was not sent")
            if "id" in message and "method" not in message and "error" not in message:
                self.fail(message["id"], Code.INTERNAL_ERROR, "Internal error")
            return
        try:
            assert self.out is not None
            self.out.write(line)
            self.out.flush()
        except (OSError, ValueError):  # the Client went away (ValueError: stdout already closed)
            self.closed = True

    def fail(self, rid: int | str | None, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        self.send(jsonrpc.error(rid, code, message, data))

    def notify_update(self, session_id: str, update: dict[str, Any]) -> None:
        self.send({"method": M.SESSION_UPDATE, "params": {"sessionId": session_id, "update": update}})

    async def serve(self) -> None:
        if self.remote:  # store calls wait in threads; enough of them that a stalled server cannot starve the rest
            asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(STORE_THREADS, "store"))
        reader = jsonrpc.LineReader(read_stdin())
        while (line := await reader.next_line()) is not None:
            try:
                self.receive(line)
            except Exception as exc:  # a bug must cost one answer, never the connection
                log(f"error reading a line: {type(exc).__name__}")
                self.fail(None, Code.INTERNAL_ERROR, "Internal error")
            await asyncio.sleep(0)  # let the request start before the next line, so a cancel finds it registered
        await self.finish()

    async def finish(self) -> None:
        """The end of the input: requests still running are withdrawn or cancelled (-32800), except a keyed prompt
        in the middle of its insertion, which may finish (for at most FINISH_SECONDS) so that its answer is true.
        After that nothing more is written: an answer left out is a lost answer, which a Client can handle, never a
        false one."""
        for rid, task in list(self.requests.items()):
            if rid in self.keyed_ids:
                self.ledger.cancel(rid)  # withdrawn unless it is being inserted
            else:
                task.cancel()
        for session in self.active.values():
            if session.worker is not None:
                session.worker.cancel()
        # What is left (the requests, and the ledger's own work: a withdrawal being recorded, a claim given back)
        # gets a bounded time to end.
        running = asyncio.all_tasks() - {asyncio.current_task()}
        if running:
            await asyncio.wait(running, timeout=FINISH_SECONDS)
        self.closed = True
        if self.remote:
            # Worker threads may still wait on a server that does not answer: the process does not wait for them (the
            # server rolls back whatever was not committed when the connections close).
            os._exit(0)

    def receive(self, line: bytes | jsonrpc.Oversized) -> None:
        """Handle one line: answer it at once when it is not a valid call, else start its work.

        The generated reader classifies the line; this Agent adds only what is its own: the methods it handles."""
        # nothing for a blank line, one message for any other
        found = [line_too_long(line.size)] if isinstance(line, jsonrpc.Oversized) else self.reader.read_line(line)
        for message in found:
            if isinstance(message, Request):
                log(f"<- {message.method!a} id={message.id!a}")
                self.dispatch(message.id, message.method, _validated(message))
            elif isinstance(message, Notification):
                log(f"<- {message.method!a} id=None")
                try:
                    self.on_notification(message.method, message.raw.get("params"))
                except Exception as exc:  # a notification is never answered, not even when acting on it fails
                    log(f"error acting on {message.method!a}: {type(exc).__name__}")
            elif isinstance(message, Invalid):
                self.refuse(message)
            else:  # a response (with no request pending, it reads as an Invalid with no code, refused alike)
                log("<- a response; this Agent sends no requests, so it is dropped")

    def refuse(self, message: Invalid) -> None:
        """Answer an `Invalid` as the reader says: its code, with its answer id; nothing for what is never answered."""
        if message.code is None:
            log("<- a response; this Agent sends no requests, so it is dropped")  # answering could loop forever
            return
        if not message.answered:  # a notification whose method or params are wrong: nothing can answer it
            log(f"ignored {message.method!a}: {message.problems[0]}")
            return
        rid, code = message.answer_id, message.code
        if code == Code.PARSE_ERROR:
            self.fail(rid, code, f"Parse error: {'; '.join(message.problems)}")
        elif code == Code.INVALID_REQUEST:
            self.fail(rid, code, f"Invalid Request: {'; '.join(message.problems)}")
        elif code == Code.INVALID_PARAMS and message.method in HANDLERS:
            params = message.raw.get("params") if isinstance(message.raw, dict) else None
            data = _key_error_data(message.method, params)
            self.fail(rid, code, jsonrpc.invalid_params_message(list(message.problems)), data)
        else:  # a request of a method ACP lacks, or one this Agent does not handle (its params are not its concern)
            self.fail(rid, Code.METHOD_NOT_FOUND, f"Method not found: {str(message.method)[:200]}")

    def dispatch(self, rid: int | str, method: str, params: Any) -> None:
        """Start the work of a request whose params the generated model accepted."""
        if method not in HANDLERS:
            self.fail(rid, Code.METHOD_NOT_FOUND, f"Method not found: {method[:200]}")  # a name may be megabytes
            return
        assert isinstance(params, dict | type(None))  # every handled method's params type is an object
        params = params or {}
        # Hold latches are taken when the request is read, so a release read later applies to it.
        hold = None
        if method == M.SESSION_PROMPT:
            session = self.active.get(params["sessionId"])
            if _hooks(params).get("holdInsert") and session is not None:
                hold = session.release
        task = asyncio.get_running_loop().create_task(self.answer(rid, method, params, hold))
        self.requests[rid] = task
        if method == M.SESSION_PROMPT and params.get(KEY_PARAMS.get(method, "")) is not None:
            self.keyed_ids.add(rid)  # at the end of the input it is withdrawn through the ledger, never cut off
        task.add_done_callback(lambda _: (self.requests.pop(rid, None), self.keyed_ids.discard(rid)))

    async def answer(self, rid: Any, method: str, params: dict[str, Any], hold: asyncio.Event | None) -> None:
        handler = HANDLERS[method]
        try:
            result = await (handler(self, params, rid, hold) if method == M.SESSION_PROMPT else handler(self, params))
        except RpcError as exc:
            self.fail(rid, exc.code, exc.message, exc.data)
        except LedgerError as exc:
            reason = KEY_ERROR_REASONS.get(type(exc))
            data = {"param": KEY_PARAMS.get(method), "reason": reason} if reason else None
            self.fail(rid, exc.code, exc.message, data)
        except asyncio.CancelledError:
            self.fail(rid, Code.REQUEST_CANCELLED, "Request cancelled")
        except Exception as exc:  # a bug or a storage failure: answer it, never crash the connection
            log(f"error in {method}: {type(exc).__name__}")
            self.fail(rid, Code.INTERNAL_ERROR, _internal_message(exc))
        else:
            self.send({"id": rid, "result": result})

    def on_notification(self, method: str, raw: Any) -> None:
        """Act on a notification the reader accepted (`raw`: its params as sent); any other is ignored."""
        params = raw if isinstance(raw, dict) else {}
        if method == RELEASE:
            # An extension method, so no generated type checks it: only a string can name a session.
            sid = params.get("sessionId")
            session = self.active.get(sid) if isinstance(sid, str) else None
            if session is not None:
                session.release.set()
                session.release = asyncio.Event()
            return
        if method == M.CANCEL_REQUEST:
            rid = params["requestId"]
            if self.ledger.cancel(rid):
                return  # a keyed prompt: the ledger answers every attempt with its key
            for session in self.active.values():
                for task in list(session.held):
                    if task is self.requests.get(rid):
                        task.cancel()  # an unkeyed prompt that is not inserted yet
        elif method == M.SESSION_CANCEL:
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

    async def stored(self, call: Callable[[], T]) -> T:
        """The Agent's own database work (`call()`, which uses the store's connection), in bounded time.

        SQLite: tried again while another process holds the database lock, for at most LOCK_WAIT_SECONDS. A
        database server: run in a worker thread, waited for at most STORE_WAIT_SECONDS, then RpcError -32603;
        except that a COMMIT already sent by then is waited for, as its outcome is unknown (see CommitGate)."""
        if not self.remote:
            return await self.locked(call)
        # As the ledger does: a write sends COMMIT within 0.6 of the bound and the server refuses one that lands
        # more than 0.3 of it after its transaction began; the gate settles whether a write still running at the
        # bound may commit (then its outcome is the answer) or never will (then -32603 is true).
        gate = CommitGate(time.monotonic() + 0.6 * STORE_WAIT_SECONDS, 0.3 * STORE_WAIT_SECONDS, STORE_WAIT_SECONDS)
        work = asyncio.ensure_future(asyncio.to_thread(run_gated, gate, call, ()))
        work.add_done_callback(lambda done: done.cancelled() or done.exception())  # a late failure is seen
        finished, _ = await asyncio.wait({work}, timeout=STORE_WAIT_SECONDS)
        if not finished:
            if gate.give_up():
                raise RpcError(Code.INTERNAL_ERROR, "Internal error: the database did not answer in time")
            await asyncio.wait({work})  # its COMMIT was sent: the answer is that COMMIT's outcome
        return work.result()

    async def keyed(self, call: Callable[[], Awaitable[T]]) -> T:
        """A ledger call: on SQLite tried again while the file is locked; on a server the ledger bounds each store
        call by the store's answer timeout (STORE_WAIT_SECONDS here) and answers -32603 after it."""
        return await (call() if self.remote else self.locked(call))

    async def locked(self, call: Callable[[], Awaitable[T]] | Callable[[], T]) -> T:
        """`call()` (awaited when it gives an awaitable), tried again while another process holds the SQLite
        file's lock, for at most LOCK_WAIT_SECONDS; then RpcError -32603. Only the waits between tries are awaited,
        so the request stays cancellable and every other line is served meanwhile."""
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        delay = _FIRST_RETRY_SECONDS
        while True:
            try:
                result = call()
                return await result if inspect.isawaitable(result) else result  # type: ignore[no-any-return]
            except sqlite3.OperationalError as exc:
                if not _locked(exc):
                    raise
                if time.monotonic() + delay > deadline:
                    raise RpcError(
                        Code.INTERNAL_ERROR, "Internal error: the database is locked by another process; try again"
                    ) from None
            await asyncio.sleep(delay)
            delay = min(delay * 2, _LAST_RETRY_SECONDS)

    def _read(self, text: str, args: tuple[Any, ...] = ()) -> list[Any]:
        conn = self.store.connection()
        try:
            return list(conn.execute(sql(conn, text), args).fetchall())
        except Exception:
            if not getattr(conn, "broken", False):
                raise
        # The server dropped this connection (a restart): a read can safely go again, on a new one.
        conn = self.store.connection()
        return list(conn.execute(sql(conn, text), args).fetchall())

    def _write(self, text: str, args: tuple[Any, ...]) -> None:
        with self.store.transaction() as conn:
            conn.execute(sql(conn, text), args)

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
        hooks = _hooks(params)
        key_name = KEY_PARAMS.get(M.SESSION_PROMPT)
        # --ignore-keys removed it already. The value is checked once, by the ledger (InvalidKey, -32602), before
        # anything else happens to the prompt; None (omitted or null) means no key.
        key = params.get(key_name) if key_name else None
        sid = session.session_id
        prepared: list[bool] = []

        async def prepare() -> None:
            if prepared:
                return  # a try again after a locked database: the hooks ran already
            prepared.append(True)
            if key is not None and self.crash_after == "claim":
                os.kill(os.getpid(), signal.SIGKILL)
            if hooks.get("failInsert"):
                raise RpcError(Code.INTERNAL_ERROR, "Internal error: a pre-insertion hook failed")
            if hold is not None:
                await hold.wait()

        def write(conn: Any, message_id: str) -> None:
            insert_user_message(conn, sid, message_id, prompt)

        if key is None:
            # Without a key, the request task itself is what session/cancel and $/cancel_request withdraw; the
            # ledger runs `prepare`, then inserts with no key bookkeeping.
            task = asyncio.current_task()
            assert task is not None
            session.held.add(task)
            try:
                submitted = await self.keyed(
                    lambda: self.ledger.submit(sid, None, rid, prompt=prompt, prepare=prepare, write=write)
                )
            finally:
                session.held.discard(task)
        else:
            # Without pre-insertion work the ledger claims the key and inserts the message in one transaction.
            needs_prepare = hold is not None or hooks.get("failInsert") or self.crash_after == "claim"
            step = prepare if needs_prepare else None
            submitted = await self.keyed(
                lambda: self.ledger.submit(sid, key, rid, prompt=prompt, prepare=step, write=write)
            )
        message_id = submitted.message_id
        fresh = submitted.inserted  # False for a retry, and for an attempt that joined another one
        if key is not None and fresh and self.crash_after == "insert":
            os.kill(os.getpid(), signal.SIGKILL)
        if fresh:
            self.notify_update(sid, {"sessionUpdate": "user_message", "messageId": message_id, "content": prompt})
            session.queue.put_nowait("hold" if hooks.get("holdWork") else "")
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
                mode = session.queue.get_nowait()
                if mode == "hold":
                    await session.release.wait()
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
                (exc.code, exc.message) if isinstance(exc, RpcError) else (Code.INTERNAL_ERROR, _internal_message(exc))
            )
            error = {"code": int(code), "message": message}
            self.notify_update(
                sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "error", "error": error}
            )
            return
        self.notify_update(sid, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})


HOOKS_KEY = handshake_key()
"""The `_meta` key of the conformance handshake and of the prompt hooks (from the traces document)."""
OFFERS = ("failInsert", "holdInsert", "holdWork", "storedSessions")
"""What this Agent offers the conformance traces beyond the protocol (names from the traces document's `needs`)."""


KEY_ERROR_REASONS: dict[type[LedgerError], str] = {InvalidKey: "malformed-key", KeyReused: "key-reused"}
"""The `reason` of the InvalidParamsErrorData sent with each key error (the spec's words)."""


def _validated(message: Request) -> Any:
    """The params a request is acted on with: as sent, or, when the lenient read salvaged something, as the model
    writes them. What was set aside is then dropped before anything is stored, replayed or compared, so the
    Agent's own updates hold only valid values, and a retry sent as the models write it is the same prompt."""
    model = message.params
    if getattr(model, "model_salvaged", ()):
        return model.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return message.raw.get("params")


def _key_error_data(method: str, params: Any) -> dict[str, Any] | None:
    """The data of a -32602 answer whose params hold a key that is not a valid idempotency key, else None."""
    name = KEY_PARAMS.get(method)
    if name is None or not isinstance(params, dict) or params.get(name) is None:
        return None
    try:
        validate_key(params[name])
    except InvalidKey:
        return {"param": name, "reason": KEY_ERROR_REASONS[InvalidKey]}
    return None


def _locked(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite failed because another connection holds the database lock."""
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11 on
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


def _internal_message(exc: BaseException) -> str:
    """The message of a -32603 answer: what kind of failure it was, never data from the request."""
    if isinstance(exc, sqlite3.Error) or type(exc).__module__.startswith("psycopg"):
        return f"Internal error: the database failed ({type(exc).__name__})"
    return "Internal error"


def read_stdin(chunk: int = 64 * 1024) -> asyncio.StreamReader:
    """Standard input as a stream, whatever it is: a pipe, a terminal, a socket, a regular file, /dev/null, or
    closed (then it is at its end at once). A thread does the blocking reads, since the event loop can watch
    only some kinds of file (not regular files, and /dev/null never says it is readable)."""
    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader(loop=loop)
    try:
        fd = sys.stdin.fileno() if sys.stdin is not None else -1
    except (OSError, ValueError):
        fd = -1

    def pump() -> None:
        try:
            while fd >= 0:
                data = os.read(fd, chunk)
                if not data:
                    break
                loop.call_soon_threadsafe(stream.feed_data, data)
        except OSError:
            pass  # closed or unreadable: the same as its end
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is gone already
                loop.call_soon_threadsafe(stream.feed_eof)

    threading.Thread(target=pump, name="stdin", daemon=True).start()
    return stream


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


def _seconds(text: str) -> float:
    """A positive, finite number of seconds (argparse turns the ValueError into a usage error, exit 2)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m acp_v2_runtime.reference_agent", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--db",
        required=True,
        help="where sessions, messages and keys live: an SQLite file, or a postgresql:// URL that several Agents share",
    )
    parser.add_argument("--ignore-keys", action="store_true", help="ignore idempotencyKey (to prove the runner fails)")
    parser.add_argument(
        "--lease", type=_seconds, default=30.0, help="seconds before an abandoned claim expires (a positive number)"
    )
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
        print(f"{parser.prog}: cannot use --db {redacted(args.db)}: {exc}", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt, BrokenPipeError):
        asyncio.run(agent.serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
