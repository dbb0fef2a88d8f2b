"""Serve an ACP Agent over the remote transport (Streamable HTTP and WebSocket on one endpoint), as the
TypeScript SDK 2.4.0's `AcpServer` serves it: an ASGI application.

The Agent is made once per connection by a factory you pass, called with the connection's `send` callback:

    def factory(send: Callable[[dict], None]) -> AgentConnection: ...   # or `async def`, awaited

    class AgentConnection(Protocol):
        def receive(self, data: bytes) -> None: ...   # the JSON text of one message (an object) from the Client
        async def close(self) -> None: ...             # the connection ended

`send(message)` takes one JSON-RPC message (a dict) and never blocks; the server routes it to the stream the
Client reads it on. `receive` must not block either: start the work and return. Serving it:

    from acp_v2_runtime.remote import AcpServer, serve
    app = AcpServer(factory)                    # an ASGI app: mount it in Starlette or FastAPI ...
    await serve(app, "127.0.0.1", 8000)         # ... or serve it alone (uvicorn, HTTP/1.1 and WebSocket)

The reference Agent is served by `python -m acp_v2_runtime.reference_agent --listen HOST:PORT --db URL`
(`acp_v2_runtime.reference_agent.remote.factory` is its factory).

HTTP, one endpoint (each answer as the SDK gives it):

    POST   Content-Type application/json (else 415); a body over Limits.max_request_body_bytes 413; not JSON
           400 "Invalid JSON"; a batch 400 with one -32600 error (id null); not an object 400.
           `initialize` without Acp-Connection-Id: a new connection, answered 200 with the Agent's answer as JSON
           and the Acp-Connection-Id header (initialize on an existing connection: 400).
           Anything else needs Acp-Connection-Id (400 missing, 404 unknown) and, for a session's methods or
           params naming a session, Acp-Session-Id (400 missing or not the params' sessionId); answered 202, the
           answer arriving on the event stream of the session the request came on (none: the connection's).
           A request waits while the connection's output is full; a client that gives up meanwhile gets 499.
    GET    Accept text/event-stream (else 406): the connection's event stream, or with Acp-Session-Id that
           session's; a second reader 409. Each message is one `data:` event; `:` comments keep it alive.
    DELETE ends the connection: 202, 404 unknown. So does Limits.max_idle_seconds with no stream open and no POST
           (ours alone: the SDK keeps such a connection until its DELETE).
    WebSocket upgrade on the same endpoint: Acp-Connection-Id on the 101; every message a text frame; the first
           must be `initialize` (else closed 1002); limits close it with 1008.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from acp_v2_schema.protocol import KnownErrorCode as Code

from .connections import AgentFactory, Connection, ConnectionClosed, Lease, Registry
from .limits import LimitExceeded, Limits
from .protocol import (
    BATCH_REFUSED,
    CONNECTION_HEADER,
    CONNECTION_HEADER_NAME,
    EVENT_STREAM,
    JSON_TYPE,
    SESSION_HEADER,
    SESSION_SCOPED,
    Route,
    encode,
    id_key,
    is_initialize,
    is_notification,
    is_response,
    params_session,
    parse_json,
)
from .websocket import serve_websocket

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
ASGISend = Callable[[MutableMapping[str, Any]], Awaitable[None]]
log = logging.getLogger("acp_v2_runtime.remote")

KEEP_ALIVE_SECONDS = 15.0  # a comment on an idle event stream, as often as the SDK sends one


class Aborted(Exception):
    """The client went away while its request waited."""


class Refused(Exception):
    """An HTTP request answered with an error status and a plain-text body."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status, self.text = status, text


class AcpServer:
    """The ASGI application: one endpoint serving `factory`'s Agents over Streamable HTTP and WebSocket."""

    def __init__(self, factory: AgentFactory, *, limits: Limits | None = None) -> None:
        self.limits = limits or Limits()
        self.registry = Registry(factory, self.limits)

    async def __call__(self, scope: Scope, receive: Receive, send: ASGISend) -> None:
        kind = scope["type"]
        if kind == "http":
            await self.http(scope, receive, send)
        elif kind == "websocket":
            await serve_websocket(self.registry, receive, send)
        elif kind == "lifespan":
            await self.lifespan(receive, send)

    async def close(self) -> None:
        """End every connection (the ASGI lifespan's shutdown does this when the app is served alone)."""
        await self.registry.close_all()

    async def lifespan(self, receive: Receive, send: ASGISend) -> None:
        while True:
            event = await receive()
            if event["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif event["type"] == "lifespan.shutdown":
                await self.close()
                await send({"type": "lifespan.shutdown.complete"})
                return

    # -- HTTP -----------------------------------------------------------------------------------------------------

    async def http(self, scope: Scope, receive: Receive, send: ASGISend) -> None:
        request = Request(scope, receive)
        try:
            method = scope["method"]
            body = b"" if method in ("GET", "HEAD") else await request.body(self.limits.max_request_body_bytes)
            if method == "POST":
                await self.post(request, body, send)
            elif method == "GET":
                await self.get(request, send)
            elif method == "DELETE":
                if not (connection_id := request.header(CONNECTION_HEADER)):
                    raise Refused(400, "Missing Acp-Connection-Id")
                if not self.registry.remove(connection_id):
                    raise Refused(404, "Unknown Acp-Connection-Id")
                await respond(send, 202)
            else:
                raise Refused(405, "Method Not Allowed")
        except Refused as exc:
            await respond_text(send, exc.status, exc.text)
        except LimitExceeded as exc:  # over-long ids
            await respond_text(send, 400, str(exc))
        except ConnectionClosed:  # shut down while the request was on its way
            await respond_text(send, 404, "Unknown Acp-Connection-Id")
        except Aborted:
            await respond_text(send, 499, "Request aborted")
        finally:
            request.stop()

    async def post(self, request: Request, body: bytes, send: ASGISend) -> None:
        content_type = request.header("content-type") or ""
        if content_type.split(";", 1)[0].strip().lower() != JSON_TYPE:
            raise Refused(415, "Unsupported Media Type")
        text = body.decode("utf-8-sig", errors="replace")  # as the SDK reads a body: bad bytes replaced
        try:
            message = parse_json(text)
        except (ValueError, RecursionError):
            raise Refused(400, "Invalid JSON") from None
        if isinstance(message, list):
            # Refused as the ACP TypeScript SDK 2.4.0 refuses it (ACP's transports page follows JSON-RPC 2.0; see the
            # behaviours in spec/upstream-differences.yaml): one -32600 answer with id null, none of the entries read.
            await respond_json(send, 400, BATCH_REFUSED)
            return
        if not isinstance(message, dict):
            raise Refused(400, "Invalid JSON-RPC message")
        data = text.encode("utf-8", errors="surrogatepass")
        connection_id = request.header(CONNECTION_HEADER)
        if is_initialize(message):
            if connection_id:
                raise Refused(400, "Initialize not allowed on existing connection")
            await self.initialize(request, message, data, send)
            return
        if not connection_id:
            raise Refused(400, "Missing Acp-Connection-Id")
        connection = self.registry.get(connection_id)
        if connection is None:
            raise Refused(404, "Unknown Acp-Connection-Id")
        connection.touch()
        if is_response(message):
            self.forward_response(connection, request, message)
        else:
            await self.forward_call(connection, request, message)
        connection.write(data)
        await respond(send, 202)

    async def initialize(self, request: Request, message: dict[str, Any], data: bytes, send: ASGISend) -> None:
        if message.get("id") is None:
            raise Refused(400, "Initialize request must include an ID")
        connection: Connection | None = None
        try:
            connection = await self.registry.create("http")  # makes the Agent, which may fail (its database, say)
            answer = await request.unless_gone(connection.initialize(data, message["id"]))
        except Aborted:
            if connection is not None:
                connection.shutdown()
            raise
        except Exception as exc:
            log.warning("initialize failed: %s", type(exc).__name__)
            if connection is not None:
                connection.shutdown()
            failed = {"code": int(Code.INTERNAL_ERROR), "message": "Initialize failed", "data": str(exc) or None}
            await respond_json(send, 500, {"jsonrpc": "2.0", "id": message["id"], "error": failed})
            return
        self.registry.register(connection)
        connection.touch()  # the idle clock starts: the Client opens its stream next
        await respond_json(send, 200, answer, [(CONNECTION_HEADER_NAME.encode(), connection.id.encode())])

    async def forward_call(self, connection: Connection, request: Request, message: dict[str, Any]) -> None:
        """Check a request's or notification's session header, remember where its answer goes, and wait while the
        connection's output is full (a notification is never answered, so it does not wait)."""
        route = _route(message, request.header(SESSION_HEADER))
        if route is not None:
            connection.validate_id("Session ID", route)
        if not is_notification(message):
            connection.validate_id("Request ID", message.get("id"))
            if connection.backlogged():
                await request.unless_gone(connection.wait_for_capacity())
        connection.track_request(message, route)

    def forward_response(self, connection: Connection, request: Request, message: dict[str, Any]) -> None:
        """A Client's answer to the Agent's request: it must come with the session header that request went on."""
        key = id_key(message["id"])
        routed = key is not None and key in connection.client_routes
        route = connection.client_routes.get(key or "")
        header = request.header(SESSION_HEADER)
        if routed and route is not None and not header:
            raise Refused(400, "Missing Acp-Session-Id")
        if routed and route is not None and header != route:
            raise Refused(400, "Mismatched Acp-Session-Id")
        if key is not None:
            connection.client_routes.pop(key, None)

    async def get(self, request: Request, send: ASGISend) -> None:
        if (request.header("upgrade") or "").lower() == "websocket":
            raise Refused(426, "WebSocket upgrade is not implemented")
        if EVENT_STREAM not in (request.header("accept") or "").lower():
            raise Refused(406, "Not Acceptable")
        if not (connection_id := request.header(CONNECTION_HEADER)):
            raise Refused(400, "Missing Acp-Connection-Id")
        connection = self.registry.get(connection_id)
        if connection is None:
            raise Refused(404, "Unknown Acp-Connection-Id")
        session = request.header(SESSION_HEADER)
        lease = connection.acquire_session_stream(session) if session else connection.connection_stream.try_acquire()
        if lease is None:
            raise Refused(409, "Outbound stream already has an active receiver")
        try:
            await stream_events(request, lease, send)
        finally:
            lease.release()


def _route(message: dict[str, Any], header: str | None) -> Route:
    """Where the answer to a Client's request goes, from its session header and its params (Refused 400 when they
    are missing or disagree)."""
    named = params_session(message.get("params"))
    if (message.get("method") in SESSION_SCOPED or named is not None) and not header:
        raise Refused(400, "Missing Acp-Session-Id")
    if header is not None and named is not None and header != named:
        raise Refused(400, "Mismatched Acp-Session-Id")
    return header or named or None


class Request:
    """An HTTP request's headers, body and disconnection, read through ASGI (the server parsed the HTTP)."""

    def __init__(self, scope: Scope, receive: Receive) -> None:
        self.receive = receive
        self.headers: dict[str, str] = {}
        for raw_name, raw_value in scope["headers"]:
            name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
            # repeated headers are one comma-separated value, as a Fetch Headers object reads them
            self.headers[name] = f"{self.headers[name]}, {value}" if name in self.headers else value
        self._gone: asyncio.Task[None] | None = None

    def header(self, name: str) -> str | None:
        return self.headers.get(name)

    async def body(self, limit: int) -> bytes:
        """The whole body, refused with 413 past `limit` bytes (by its Content-Length, or as it arrives)."""
        declared = self.header("content-length")
        if declared is not None and declared.strip().isdigit() and int(declared) > limit:
            raise Refused(413, f"Request body exceeds {limit} bytes")
        chunks, size = [], 0
        while True:
            event = await self.receive()
            if event["type"] == "http.disconnect":
                raise Aborted
            chunk = event.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise Refused(413, f"Request body exceeds {limit} bytes")
            chunks.append(chunk)
            if not event.get("more_body", False):
                return b"".join(chunks)

    def gone(self) -> asyncio.Task[None]:
        """A task that ends when the client disconnects (read once the body has been read)."""
        if self._gone is None:

            async def watch() -> None:
                while (await self.receive())["type"] != "http.disconnect":
                    pass

            self._gone = asyncio.get_running_loop().create_task(watch())
        return self._gone

    async def unless_gone(self, work: Awaitable[Any]) -> Any:
        """`work`'s result, or Aborted when the client disconnects first."""
        task = asyncio.ensure_future(work)
        gone = self.gone()
        await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            return task.result()
        task.cancel()
        raise Aborted

    def stop(self) -> None:
        if self._gone is not None:
            self._gone.cancel()


async def stream_events(request: Request, lease: Lease, send: ASGISend) -> None:
    """An event stream: each message the lease yields as one `data:` event, until the stream ends or the client
    goes away; a comment every KEEP_ALIVE_SECONDS while nothing comes."""
    headers = [
        (b"content-type", EVENT_STREAM.encode()),
        (b"cache-control", b"no-cache"),
        (b"connection", b"keep-alive"),
    ]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    gone = request.gone()
    taking: asyncio.Task[str | None] | None = None
    try:
        while True:
            if taking is None:
                taking = asyncio.get_running_loop().create_task(lease.next())
            await asyncio.wait({taking, gone}, timeout=KEEP_ALIVE_SECONDS, return_when=asyncio.FIRST_COMPLETED)
            if gone.done():
                return
            if not taking.done():
                await send({"type": "http.response.body", "body": b":\n\n", "more_body": True})
                continue
            text, taking = taking.result(), None
            if text is None:
                break
            await send({"type": "http.response.body", "body": f"data: {text}\n\n".encode(), "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        if taking is not None:
            taking.cancel()


async def respond(
    send: ASGISend, status: int, body: bytes = b"", headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers or []})
    await send({"type": "http.response.body", "body": body})


async def respond_text(send: ASGISend, status: int, text: str) -> None:
    with contextlib.suppress(OSError, RuntimeError):  # the client may be gone (499)
        await respond(send, status, text.encode(), [(b"content-type", b"text/plain")])


async def respond_json(
    send: ASGISend, status: int, message: Any, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await respond(send, status, encode(message).encode(), [(b"content-type", JSON_TYPE.encode()), *(headers or [])])
