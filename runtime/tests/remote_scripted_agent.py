"""A scripted Agent behind ACP's remote transport, as a bare ASGI app, for the remote Client's unit tests.

It speaks the wire as the TypeScript SDK's server does (initialize answered 200 with `Acp-Connection-Id`, other
POSTs 202 with the answer on the SSE stream of the connection or of the message's session, a WebSocket on the same
endpoint) and keeps a tiny keyed Agent: one insertion per key, the original messageId for every retry. Each
`session/prompt` attempt takes the next entry of `faults`, which says what the transport does to it *after* the
Agent inserted the message:

- None: answered normally;
- "502": the POST is answered 502 with a JSON-RPC error body, as a gateway would, and the answer is dropped;
- "cut": the session's stream ends abruptly before the answer (no closing chunk); "end": it ends cleanly;
- "swallow": the answer is dropped (the request then waits for its timeout);
- "hold": the POST is never answered (HTTP); on WebSocket the answer is dropped;
- "close": the WebSocket is closed right after the prompt frame.

A key the Agent refuses ("bad key" as the key) is answered with the Agent's -32602. It sets an affinity cookie on
initialize (and on the WebSocket upgrade) and records the cookies every request brought.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

CUT, END = object(), object()
BAD_KEY = "bad key"
COOKIE = "affinity=node-7"


class ScriptedAgent:
    """The ASGI app; `faults` is consumed one entry per prompt attempt."""

    def __init__(self, faults: list[str | None] | None = None) -> None:
        self.faults = list(faults or [])
        self.inserted: list[str] = []  # messageIds, in insertion order
        self.keys: dict[str, str] = {}
        self.attempts = 0
        self.cookies: list[str | None] = []  # the Cookie header of each request after the first initialize
        self.connections = 0
        self._ids = itertools.count(1)
        self._streams: dict[tuple[str, str | None], asyncio.Queue[Any]] = {}

    # -- the Agent ------------------------------------------------------------------------------------------------

    def handle(self, message: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        """The Agent's answer to one request, and the fault the transport makes of it."""
        method, params, rid = message["method"], message.get("params") or {}, message["id"]
        if method == "initialize":
            return {"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 2, "info": {"name": "scripted"}}}, None
        if method == "session/new":
            return {"jsonrpc": "2.0", "id": rid, "result": {"sessionId": f"sess_{next(self._ids)}"}}, None
        if method != "session/prompt":
            return {"jsonrpc": "2.0", "id": rid, "result": {}}, None
        self.attempts += 1
        fault = self.faults.pop(0) if self.faults else None
        key = params.get("idempotencyKey")
        if key == BAD_KEY:
            error = {"code": -32602, "message": "Invalid params: the key is refused"}
            return {"jsonrpc": "2.0", "id": rid, "error": error}, None
        if key is None or key not in self.keys:
            message_id = f"msg_{next(self._ids)}"
            self.inserted.append(message_id)
            if key is not None:
                self.keys[key] = message_id
        else:
            message_id = self.keys[key]
        return {"jsonrpc": "2.0", "id": rid, "result": {"messageId": message_id}}, fault

    # -- ASGI -----------------------------------------------------------------------------------------------------

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "websocket":
            await self._websocket(scope, receive, send)
        else:
            await self._http(scope, receive, send)

    async def _http(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        connection, session = headers.get("acp-connection-id"), headers.get("acp-session-id")
        if connection is not None:
            self.cookies.append(headers.get("cookie"))
        if scope["method"] == "GET":
            await self._stream(send, self._queue(connection or "", session))
            return
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        if scope["method"] == "DELETE":
            await _respond(send, 202, b"")
            return
        message = json.loads(body)
        if "method" not in message:
            await _respond(send, 202, b"")  # the Client's answer to a request of ours: none are sent here
            return
        answer, fault = self.handle(message)
        if message["method"] == "initialize":
            self.connections += 1
            extra = [(b"acp-connection-id", f"conn_{self.connections}".encode()), (b"set-cookie", COOKIE.encode())]
            await _respond(send, 200, json.dumps(answer).encode(), "application/json", extra)
            return
        route = self._queue(connection or "", session if session is not None else None)
        if fault == "hold":
            await asyncio.Event().wait()  # until the Client gives up and the server cancels us
        if fault == "502":
            await _respond(send, 502, json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32603}}).encode())
            return
        await _respond(send, 202, b"")
        if fault == "cut":
            route.put_nowait(CUT)
        elif fault == "end":
            route.put_nowait(END)
        elif fault is None:
            route.put_nowait(answer)

    def _queue(self, connection: str, session: str | None) -> asyncio.Queue[Any]:
        return self._streams.setdefault((connection, session), asyncio.Queue())

    async def _stream(self, send: Any, queue: asyncio.Queue[Any]) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        while True:
            item = await queue.get()
            if item is END:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            if item is CUT:
                raise ConnectionAbortedError("the scripted stream is cut")  # the server drops the connection
            frame = f"data: {json.dumps(item)}\n\n".encode()
            await send({"type": "http.response.body", "body": frame, "more_body": True})

    async def _websocket(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await receive()  # websocket.connect
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        self.cookies.append(headers.get("cookie"))
        self.connections += 1
        extra = [(b"acp-connection-id", f"conn_{self.connections}".encode()), (b"set-cookie", COOKIE.encode())]
        await send({"type": "websocket.accept", "headers": extra})
        while True:
            event = await receive()
            if event["type"] != "websocket.receive":
                return
            message = json.loads(event["text"])
            if "method" not in message or "id" not in message:
                continue
            answer, fault = self.handle(message)
            if fault == "close":
                await send({"type": "websocket.close", "code": 1011})
                return
            if fault is None:
                await send({"type": "websocket.send", "text": json.dumps(answer)})


async def _respond(
    send: Any, status: int, body: bytes, content_type: str = "text/plain", extra: list[tuple[bytes, bytes]] = ()
) -> None:
    headers = [(b"content-type", content_type.encode()), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@contextlib.asynccontextmanager
async def served(app: ScriptedAgent) -> AsyncIterator[str]:
    """Serve `app` on a free local port (uvicorn, the remote extra's server) for the block; yield its URL."""
    import socket

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    config = uvicorn.Config(app, log_level="critical", lifespan="off", timeout_graceful_shutdown=0.1)
    server = uvicorn.Server(config)
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        while not server.started:
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/acp"
    finally:
        server.should_exit = True
        server.force_exit = True
        with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(task, 5)
        sock.close()
