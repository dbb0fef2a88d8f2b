"""The reference Agent's transport: JSON-RPC messages in and out, dispatch, on top of the hooked turns.

`Agent` reads every message with the generated `MessageReader`, answers at once what is not a valid call, starts a
task for each request it handles (`HANDLERS`), acts on notifications (`$/cancel_request`, `session/cancel`, the
hooks' release) and writes each answer once. Bad input costs one error answer, never the process.

One `Agent` serves one connection, on either transport: on stdio (`serve`) it reads lines from stdin and writes
them to stdout, and at the end of the input the requests still running are withdrawn or cancelled, within a bound,
and the process ends; on the remote transport (`send=` a callback, see `remote.py`) the server hands it each
message (`receive`) and ends it with `close`, which withdraws or cancels the same way and leaves the process be.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from acp_v2_schema import protocol as M  # method names, as the spec spells them
from acp_v2_schema.protocol import KnownErrorCode as Code
from acp_v2_schema.reader import KEY_PARAMS, Invalid, MessageReader, Notification, Request, line_too_long

from .. import jsonrpc
from ..idempotency import LedgerError
from ..idempotency.keys import InvalidKey, KeyReused, validate_key
from . import bounds
from .bounds import RpcError, internal_message
from .hooks import RELEASE, HookedTurns
from .turns import log


class Agent(HookedTurns):
    """One connection's Agent: reads its Client's messages, answers them, keeps its data in its database.

    Without `send` it writes to stdout (`serve` reads stdin); with it, each message goes to `send` as a dict."""

    def __init__(
        self,
        db: str,
        *,
        ignore_keys: bool,
        lease: float,
        crash_after: str | None,
        offers: tuple[str, ...] = (),
        send: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        super().__init__(db, lease=lease, crash_after=crash_after, offers=offers)
        # The generated reader classifies every line. This Agent sends no requests, so it remembers none; it refuses
        # what JSON cannot write back, acts on the parsed params (`raw`; what a lenient read salvaged is dropped, see
        # `_validated`), and with --ignore-keys never sees a key.
        self.reader = MessageReader(remember_requests=False, strict_json=True, keep_raw=True, ignore_keys=ignore_keys)
        self.requests: dict[Hashable, asyncio.Task[Any]] = {}
        self.keyed_ids: set[Hashable] = set()  # the ids of keyed prompts in flight
        self.sink = send
        self.out = getattr(sys.stdout, "buffer", None) if send is None else None
        # stdout closed at start: nothing can be answered, but the input is read
        self.closed = send is None and self.out is None

    def send(self, message: dict[str, Any]) -> None:
        if self.closed:
            return
        full = {"jsonrpc": "2.0", **message}
        try:
            line = jsonrpc.encode(full)
        except ValueError:  # not JSON (NaN or an infinity, say): never written; a request still gets an answer
            log("a message that JSON cannot hold was not sent")
            if "id" in message and "method" not in message and "error" not in message:
                self.fail(message["id"], Code.INTERNAL_ERROR, "Internal error")
            return
        if self.sink is not None:
            self.sink(full)
            return
        try:
            assert self.out is not None
            self.out.write(line)
            self.out.flush()
        except (OSError, ValueError):  # the Client went away (ValueError: stdout already closed)
            self.closed = True

    def fail(self, rid: int | str | None, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        self.send(jsonrpc.error(rid, code, message, data))

    async def serve(self) -> None:
        if self.remote:  # store calls wait in threads; enough of them that a stalled server cannot starve the rest
            asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(bounds.STORE_THREADS, "store"))
        reader = jsonrpc.LineReader(read_stdin())
        while (line := await reader.next_line()) is not None:
            try:
                self.receive(line)
            except Exception as exc:  # a bug must cost one answer, never the connection
                log(f"error reading a line: {type(exc).__name__}")
                self.fail(None, Code.INTERNAL_ERROR, "Internal error")
            await asyncio.sleep(0)  # let the request start before the next line, so a cancel finds it registered
        await self.finish()

    def stop_work(self) -> set[asyncio.Task[Any]]:
        """Withdraw or cancel (-32800) every request still running, except a keyed prompt in the middle of its
        insertion, which may finish so that its answer is true; cancel the turns. Returns this Agent's tasks."""
        for rid, task in list(self.requests.items()):
            if rid in self.keyed_ids:
                self.ledger.cancel(rid)  # withdrawn unless it is being inserted
            else:
                task.cancel()
        workers = set()
        for session in self.active.values():
            if session.worker is not None:
                session.worker.cancel()
                workers.add(session.worker)
        return set(self.requests.values()) | workers

    async def close(self) -> None:
        """The end of a remote connection: `stop_work`, its tasks given at most FINISH_SECONDS, then nothing more is
        sent. The ledger's own work (a withdrawal being recorded) goes on in the process, which keeps serving; the
        database connections are closed once that work's bound has passed too."""
        running = self.stop_work()
        if running:
            await asyncio.wait(running, timeout=bounds.FINISH_SECONDS)
        self.closed = True
        asyncio.get_running_loop().call_later(bounds.FINISH_SECONDS, self.store.close)

    async def finish(self) -> None:
        """The end of the input: `stop_work`, for at most FINISH_SECONDS. After that nothing more is written: an
        answer left out is a lost answer, which a Client can handle, never a false one."""
        self.stop_work()
        # What is left (the requests, and the ledger's own work: a withdrawal being recorded, a claim given back)
        # gets a bounded time to end.
        running = asyncio.all_tasks() - {asyncio.current_task()}
        if running:
            await asyncio.wait(running, timeout=bounds.FINISH_SECONDS)
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
        hold = self.insert_latch(params) if method == M.SESSION_PROMPT else None
        task = asyncio.get_running_loop().create_task(self.answer(rid, method, params, hold))
        self.requests[rid] = task
        if method == M.SESSION_PROMPT and params.get(KEY_PARAMS.get(method, "")) is not None:
            self.keyed_ids.add(rid)  # at the end of the input it is withdrawn through the ledger, never cut off
        task.add_done_callback(lambda _: (self.requests.pop(rid, None), self.keyed_ids.discard(rid)))

    async def answer(self, rid: Any, method: str, params: dict[str, Any], hold: asyncio.Event | None) -> None:
        handler = HANDLERS[method]  # looked up here, so a table entry patched at run time is the one called
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
            self.fail(rid, Code.INTERNAL_ERROR, internal_message(exc))
        else:
            self.send({"id": rid, "result": result})

    def on_notification(self, method: str, raw: Any) -> None:
        """Act on a notification the reader accepted (`raw`: its params as sent); any other is ignored."""
        params = raw if isinstance(raw, dict) else {}
        if method == RELEASE:
            self.release(params)
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


HANDLERS: dict[str, Any] = {
    M.INITIALIZE: Agent.initialize,
    M.SESSION_NEW: Agent.session_new,
    M.SESSION_RESUME: Agent.session_resume,
    M.SESSION_LIST: Agent.session_list,
    M.SESSION_CLOSE: Agent.session_close,
    M.SESSION_PROMPT: Agent.session_prompt,
}
"""The requests this Agent handles, each with its handler (`dispatch` looks here on every request)."""
