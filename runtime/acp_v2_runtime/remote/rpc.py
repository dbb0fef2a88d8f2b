"""What both remote profiles of the Client share: requests waiting for their answers, and what the Agent sends.

A `ClientConnection` is one ACP connection to an Agent. `request(method, params, id)` returns the result or raises
one of the Client's three failures (`acp_v2_runtime.client`), and says only what it knows:

- `ErrorResponse`: a JSON-RPC error answer that came for this request's id: the Agent refused it;
- `NotSent`: nothing of this request left (the connection was refused, or was already broken, or the request was
  still queued behind another one when its time ran out);
- `NoResponse`: it may have left and no answer came (a POST answered other than 2xx, a stream or a socket that
  ended before the answer, a timeout). The Agent may have acted on it.

The profiles (`HttpConnection`, `WebSocketConnection`) supply `_open` (the first exchange, `initialize`) and
`_transmit` (send one message); this class matches answers to ids, times requests out, delivers notifications,
and answers the Agent's own requests through `on_request` (by default: method not found).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

from acp_v2_schema import protocol as M
from acp_v2_schema.protocol import KnownErrorCode as Code

from ..client import ErrorResponse, NoResponse, NotSent

log = logging.getLogger("acp_v2_runtime.remote")

Message = dict[str, Any]
OnNotification = Callable[[str, Any], object]
"""Called with (method, params) for each notification the Agent sends, `session/update` among them."""
OnRequest = Callable[[str, Any], Awaitable[Any]]
"""Answers a request the Agent sends (method, params) with its result, or raises `ErrorResponse` to refuse it."""

DEFAULT_TIMEOUT = 30.0
"""Seconds a request waits for its answer unless the caller says otherwise."""


def session_of(params: Any) -> str | None:
    """The session a message belongs to: its params' string `sessionId`, as the SDK routes it."""
    if isinstance(params, dict) and isinstance(params.get("sessionId"), str):
        return params["sessionId"]
    return None


class ClientConnection:
    """One ACP connection; the first request must be `initialize`. Subclasses carry the messages."""

    def __init__(
        self,
        *,
        on_notification: OnNotification | None = None,
        on_request: OnRequest | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.on_notification = on_notification
        self.on_request = on_request
        self.timeout = timeout
        self.connection_id: str | None = None
        self.initialized = False
        self.failure: str | None = None  # why the connection is unusable, once it is
        self.closed = False
        self._waiting: dict[Hashable, tuple[asyncio.Future[Message], str | None]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    # -- the public face ------------------------------------------------------------------------------------------

    async def request(self, method: str, params: Any, request_id: int | str, *, timeout: float | None = None) -> Any:
        """Send one request and return its result; raise `NotSent`, `NoResponse` or `ErrorResponse`."""
        limit = self.timeout if timeout is None else timeout
        started = asyncio.Event()  # set once any byte of the request may have left
        try:
            answer = await asyncio.wait_for(self._exchange(method, params, request_id, started), limit)
        except asyncio.TimeoutError:
            if not started.is_set():
                raise NotSent(f"{method}: still queued after {limit:g} s, never sent") from None
            raise NoResponse(f"{method}: no answer within {limit:g} s") from None
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {}
            raise ErrorResponse(
                error.get("code", Code.INTERNAL_ERROR), str(error.get("message", "")), error.get("data")
            )
        result = answer.get("result")
        if isinstance(result, dict) and session_of(result) is not None:
            self._session_announced(result["sessionId"])
        return result

    async def notify(self, method: str, params: Any) -> None:
        """Send a notification (`session/cancel`, `$/cancel_request`); raise `NotSent` or `NoResponse` on failure."""
        if not self.initialized or self.failure is not None:
            raise NotSent(
                f"{method}: the connection is {'unusable: ' + self.failure if self.failure else 'not initialized'}"
            )
        await self._transmit({"jsonrpc": "2.0", "method": method, "params": params}, asyncio.Event())

    async def close(self) -> None:
        """End the connection: every request still waiting gets `NoResponse`. A second call does nothing."""
        self.closed = True
        self._fail("closed by the Client")
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task

    def abort(self, why: str = "aborted by the Client") -> asyncio.Task[None]:
        """Give up on the connection at once: every waiting request gets `NoResponse` before anything else is read.

        Its sockets close in the background (the returned task); nothing more is read from them.
        """
        self._fail(why)
        return asyncio.ensure_future(self.close())

    # -- for the profiles -----------------------------------------------------------------------------------------

    async def _open(self, message: Message, started: asyncio.Event) -> Message:
        """Send `initialize` as the connection's first message and return its answer."""
        raise NotImplementedError

    async def _transmit(self, message: Message, started: asyncio.Event) -> None:
        """Send one message on the open connection; set `started` before any byte may leave."""
        raise NotImplementedError

    def _session_announced(self, session_id: str) -> None:
        """A result named a session (`session/new`): a profile may get ready for its messages."""

    def _spawn(self, coroutine: Awaitable[Any]) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _fail(self, why: str) -> None:
        """The connection can carry nothing more: every waiting request learns that its answer will not come."""
        if self.failure is None:
            self.failure = why
        for request_id in list(self._waiting):
            self._give_up(request_id, why)

    def _fail_session(self, session_id: str, why: str) -> None:
        """A session's stream ended: its waiting requests will get no answer on this connection."""
        for request_id, (_, session) in list(self._waiting.items()):
            if session == session_id:
                self._give_up(request_id, why)

    def _give_up(self, request_id: Hashable, why: str) -> None:
        future, _ = self._waiting.pop(request_id)
        if not future.done():
            future.set_exception(NoResponse(f"{why} before the answer"))

    def _received(self, message: Any, session_id: str | None = None) -> None:
        """Route one message from the Agent; `session_id` names the stream it came on, if any."""
        if self.failure is not None:
            return  # given up: its requests were already told that no answer comes
        if not isinstance(message, dict):
            log.warning("ignored a message from the Agent that is not a JSON object")
            return
        if "method" in message:
            if "id" in message:
                self._spawn(self._answer_agent_request(message, session_id))
            elif self.on_notification is not None:
                self.on_notification(message["method"], message.get("params"))
            return
        request_id = message.get("id")
        if isinstance(request_id, Hashable) and request_id in self._waiting:
            future, _ = self._waiting.pop(request_id)
            if not future.done():
                future.set_result(message)
        else:
            log.warning("ignored an answer to no request of this connection (id %r)", request_id)

    async def _answer_agent_request(self, message: Message, session_id: str | None) -> None:
        method, params = message["method"], message.get("params")
        try:
            if self.on_request is None:
                raise ErrorResponse(Code.METHOD_NOT_FOUND, f"Method not found: {method}")
            reply: Message = {"jsonrpc": "2.0", "id": message["id"], "result": await self.on_request(method, params)}
        except ErrorResponse as refusal:
            error = {"code": refusal.code, "message": refusal.message}
            if refusal.data is not None:
                error["data"] = refusal.data
            reply = {"jsonrpc": "2.0", "id": message["id"], "error": error}
        try:
            await self._transmit_reply(reply, session_id)
        except (NotSent, NoResponse) as lost:
            log.warning("the answer to the Agent's %s was lost: %s", method, lost)

    async def _transmit_reply(self, reply: Message, session_id: str | None) -> None:
        await self._transmit(reply, asyncio.Event())

    # -- one exchange ---------------------------------------------------------------------------------------------

    async def _exchange(self, method: str, params: Any, request_id: int | str, started: asyncio.Event) -> Message:
        message: Message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        if not self.initialized:
            if method != M.INITIALIZE:
                raise NotSent(f"{method}: the connection is not initialized (the first request is initialize)")
            if self.failure is not None:
                raise NotSent(f"{method}: the connection is unusable ({self.failure})")
            answer = await self._open(message, started)
            self.initialized = True
            return answer
        if self.failure is not None:
            raise NotSent(f"{method}: the connection is unusable ({self.failure})")
        if request_id in self._waiting:
            raise ValueError(f"request id {request_id!r} is already waiting for an answer on this connection")
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = (future, session_of(params))
        try:
            try:
                await self._transmit(message, started)
            except (NotSent, NoResponse):
                # The answer may have come on a stream before the POST's own status was seen: it is the truth.
                if future.done() and future.exception() is None:
                    return future.result()
                raise
            return await future
        finally:
            self._waiting.pop(request_id, None)
            if future.done() and not future.cancelled():
                future.exception()  # seen: a failure nobody awaits is not reported as lost
