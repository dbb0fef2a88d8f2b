"""The WebSocket profile of the remote transport: one connection per socket, every message a text frame.

As the TypeScript SDK 2.4.0's server does: the upgrade is accepted with Acp-Connection-Id on the 101; the first
message must be `initialize` (anything else closes the socket with 1002); a frame that is not JSON, a batch or a
non-object is answered with one error (id null) and the socket stays open; a second `initialize` is answered
-32600. Frames wait their turn while an earlier one is handled; past `max_buffered_bytes` of them (each counted
with WAITING_FRAME_OVERHEAD more) the socket is closed with 1008, as it is when an id is over `max_id_length` or
the client reads nothing for `max_output_stall_seconds`. Binary frames are ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from acp_v2_schema.protocol import KnownErrorCode as Code

from .connections import Connection, ConnectionClosed, Registry
from .limits import LimitExceeded, exceeded, stalled
from .protocol import (
    BATCH_REFUSED,
    CONNECTION_HEADER,
    encode,
    id_key,
    is_initialize,
    is_notification,
    is_request,
    is_response_shaped,
    params_session,
    parse_json,
    protocol_error,
)

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
ASGISend = Callable[[MutableMapping[str, Any]], Awaitable[None]]
log = logging.getLogger("acp_v2_runtime.remote")

WAITING_FRAME_OVERHEAD = 1024
"""What each waiting frame counts toward max_buffered_bytes beyond its text, as the SDK counts it, so that many
small frames add up too."""


async def serve_websocket(registry: Registry, receive: Receive, send: ASGISend) -> None:
    """Serve one WebSocket connection (an ASGI `websocket` scope) until either side closes it."""
    event = await receive()
    if event["type"] != "websocket.connect":
        return
    try:
        connection = await registry.create("websocket")  # makes the Agent, which may fail (its database, say)
    except Exception as exc:
        log.warning("a WebSocket connection could not be made: %s", type(exc).__name__)
        await send({"type": "websocket.close", "code": 1011})  # before the accept: the upgrade is refused
        return
    await send({"type": "websocket.accept", "headers": [(CONNECTION_HEADER.encode(), connection.id.encode())]})
    await Socket(registry, connection, receive, send).run()


class Socket:
    """One accepted socket: a reader of frames, a handler taking them in order, and a pump of the Agent's output."""

    def __init__(self, registry: Registry, connection: Connection, receive: Receive, send: ASGISend) -> None:
        self.registry, self.connection = registry, connection
        self.receive, self._send = receive, send
        self.initialized = False
        self.closed = False
        self.frames: deque[tuple[str, int]] = deque()
        self.waiting_bytes = 0
        self.arrived = asyncio.Event()
        self.lock = asyncio.Lock()  # one frame on the wire at a time
        self.ended = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self.tasks = [loop.create_task(self.read()), loop.create_task(self.handle())]
        try:
            await self.ended.wait()
        finally:
            for task in self.tasks:
                task.cancel()
            self.connection.shutdown()

    async def read(self) -> None:
        """Take frames off the socket as they come, so a slow one being handled does not hide a closed socket."""
        limits = self.connection.limits
        while not self.closed:
            event = await self.receive()
            if event["type"] == "websocket.disconnect":
                self.closed = True
                self.ended.set()
                return
            text = event.get("text")
            if text is None:
                log.warning("ignoring a binary frame on an ACP WebSocket")
                continue
            size = len(text) + WAITING_FRAME_OVERHEAD
            if self.waiting_bytes > 0 and size > limits.max_buffered_bytes - self.waiting_bytes:
                await self.close_for_limit(exceeded(limits, "max_buffered_bytes"))
                return
            self.waiting_bytes += size
            self.frames.append((text, size))
            self.arrived.set()

    async def handle(self) -> None:
        while not self.closed:
            if not self.frames:
                self.arrived.clear()
                await self.arrived.wait()
                continue
            text, size = self.frames.popleft()
            self.waiting_bytes -= size
            try:
                await self.frame(text)
            except LimitExceeded as exc:
                await self.close_for_limit(exc)
            except ConnectionClosed:
                await self.close()
            except Exception:
                log.exception("an ACP WebSocket frame failed")
                await self.close(1011, "Message handling failed")

    async def frame(self, text: str) -> None:
        try:
            message = parse_json(text)
        except (ValueError, RecursionError):
            await self.send(protocol_error(Code.PARSE_ERROR, "Parse error"))
            return
        if isinstance(message, list):
            await self.send(BATCH_REFUSED)
            return
        if not isinstance(message, dict):
            await self.send(protocol_error(Code.INVALID_REQUEST, "Invalid request", message))
            return
        data = text.encode("utf-8", errors="surrogatepass")
        if not self.initialized:
            await self.first(message, data)
            return
        connection = self.connection
        if is_request(message) and is_initialize(message):
            answer = {"code": int(Code.INVALID_REQUEST), "message": "Initialize not allowed on existing connection"}
            await self.send({"jsonrpc": "2.0", "id": message["id"], "error": answer})
            return
        if is_request(message) or is_notification(message):
            session = params_session(message.get("params"))
            if session is not None:
                connection.validate_id("Session ID", session)
            if is_request(message):
                connection.validate_id("Request ID", message["id"])
                connection.track_request(message, session)
        elif is_response_shaped(message):
            key = id_key(message.get("id"))
            if key is not None:
                connection.client_routes.pop(key, None)
        if not is_notification(message) and not is_response_shaped(message):
            await connection.wait_for_capacity()  # a reply adds output: wait until the client has read enough
        connection.write(data)

    async def first(self, message: dict[str, Any], data: bytes) -> None:
        """The first message: it must be `initialize` with an id; its answer starts the connection."""
        if is_response_shaped(message):
            return
        if not is_request(message) and not is_notification(message):
            await self.send(protocol_error(Code.INVALID_REQUEST, "Invalid request", message))
            return
        if not is_initialize(message):
            await self.close(1002, "First message must be initialize")
            return
        if message["id"] is None:
            await self.close(1002, "Initialize request must include an ID")
            return
        try:
            answer = await self.connection.initialize(data, message["id"])
        except Exception as exc:
            failed = {"code": int(Code.INTERNAL_ERROR), "message": "Initialize failed", "data": str(exc) or None}
            await self.send({"jsonrpc": "2.0", "id": message["id"], "error": failed})
            await self.close(1011, "Initialize failed")
            return
        if self.closed:
            return
        self.initialized = True
        self.registry.register(self.connection)
        await self.send(answer)
        self.tasks.append(asyncio.get_running_loop().create_task(self.pump()))

    async def pump(self) -> None:
        """Send the Agent's output in order; a client that takes none of it for the stall limit is closed."""
        lease = self.connection.socket_stream.try_acquire()
        assert lease is not None  # the socket stream's only reader
        try:
            while (text := await lease.next()) is not None:
                try:
                    async with asyncio.timeout(self.connection.limits.max_output_stall_seconds):
                        await self.send_text(text)
                except TimeoutError:
                    await self.close_for_limit(stalled(self.connection.limits))
                    return
        finally:
            lease.release()
        # The connection shut down (DELETE, a limit, the server closing): so does the socket.
        reason = self.connection.close_reason
        await (self.close(1008, str(reason)) if reason is not None else self.close())

    async def send(self, message: dict[str, Any]) -> None:
        await self.send_text(encode(message))

    async def send_text(self, text: str) -> None:
        if self.closed:
            return
        async with self.lock:
            await self._send({"type": "websocket.send", "text": text})

    async def close_for_limit(self, reason: LimitExceeded) -> None:
        log.warning("closing connection %s: %s", self.connection.id[:8], reason)
        self.connection.close_reason = reason
        await self.close(1008, str(reason))

    async def close(self, code: int = 1000, reason: str = "") -> None:
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(Exception):  # the socket may be gone already
            await self._send({"type": "websocket.close", "code": code, "reason": reason[:120]})
        self.connection.shutdown()
        self.ended.set()
