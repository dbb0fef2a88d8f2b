"""The connections of the remote transport: one Agent each, its output routed to the streams its client reads.

A `Connection` owns one Agent (made by the server's factory with the connection's `deliver` as its send callback),
the event streams (`Mailbox`) its output waits on, and the routes that say which stream each answer belongs to:

    Connection ── connection stream   (HTTP: GET without Acp-Session-Id; answers to requests sent without one)
               ├─ session streams     (HTTP: GET with Acp-Session-Id; answers to that session's requests, and the
               │                       Agent's messages whose params name the session)
               └─ socket stream       (WebSocket: every message, in order)

An HTTP connection with no event stream open that gets no POST for `Limits.max_idle_seconds` is ended as a DELETE
would end it: its Client went away without saying so (a live Client keeps its connection's stream open).

Output is counted (`buffered_bytes`, the JSON text waiting on HTTP streams). At `Limits.max_buffered_bytes` new
requests wait before they reach the Agent; if no reader takes anything for `max_output_stall_seconds`, the
connection is closed. Session streams that hold output with no reader are counted against
`max_buffered_session_streams`. A connection's streams hold only what its own Agent sent: routes are per
connection, and nothing is shared between connections but the Agent's database.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import secrets
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from .limits import LimitExceeded, Limits, exceeded, id_too_long, stalled
from .protocol import (
    SESSION_LOAD,
    Route,
    encode,
    id_key,
    is_request,
    is_response,
    params_session,
    result_session,
)

log = logging.getLogger("acp_v2_runtime.remote")


class AgentConnection(Protocol):
    """One connection's Agent, as the server drives it."""

    def receive(self, data: bytes) -> None:
        """Take one message from the Client: the JSON text of one object (the server checked that much)."""

    async def close(self) -> None:
        """The connection ended: stop its work; nothing sent after this is delivered."""


Send = Callable[[dict[str, Any]], None]
AgentFactory = Callable[[Send], AgentConnection | Awaitable[AgentConnection]]
"""Makes one connection's Agent, given the callback it sends each message through (a JSON-RPC object). It may be a
coroutine function: an Agent whose making waits (on a database server, say) is awaited, not run on the event loop,
so the server's other connections go on meanwhile."""


class ConnectionClosed(Exception):
    """The connection shut down while a request was on its way to the Agent."""


class Lease:
    """The one reader of a `Mailbox` (an open event stream, or a WebSocket's sending loop)."""

    def __init__(self, mailbox: Mailbox) -> None:
        self.mailbox = mailbox
        self.released = False

    async def next(self) -> str | None:
        """The next message's JSON text, waiting for one; None when the stream has ended for this reader."""
        return await self.mailbox.take(self)

    def release(self) -> None:
        self.mailbox.release(self)


class Mailbox:
    """One outbound stream: JSON texts queued in order until its single reader takes them."""

    def __init__(
        self, owner: Connection, *, enabled: bool = True, session: str | None = None, counted: bool = True
    ) -> None:
        self.owner = owner
        self.counted = counted  # HTTP streams count their bytes toward max_buffered_bytes; a socket's does not
        self.enabled = enabled
        self.session = session
        self.queue: deque[str] = deque()
        self.reader: Lease | None = None
        self.finished = False
        self.aborted = False
        self._wake = asyncio.Event()

    def push(self, text: str) -> None:
        if not self.enabled or self.finished:
            return
        self.queue.append(text)
        if self.counted:
            self.owner.buffered_bytes += len(text)
        self._wake.set()

    def try_acquire(self) -> Lease | None:
        """The stream's reader, or None when it has one already (or cannot have one)."""
        if not self.enabled or self.aborted or self.reader is not None:
            return None
        self.reader = Lease(self)
        self.owner.reader_changed(self)
        return self.reader

    async def take(self, lease: Lease) -> str | None:
        while True:
            if lease.released or self.reader is not lease or self.aborted:
                return None
            if self.queue:
                text = self.queue.popleft()
                self.owner.taken(text, self.counted)
                return text
            if self.finished:
                return None
            self._wake.clear()
            await self._wake.wait()

    def release(self, lease: Lease) -> None:
        if self.reader is not lease:
            return
        self.reader = None
        lease.released = True
        self._wake.set()
        self.owner.reader_changed(self)

    def finish(self) -> None:
        self.finished = True
        self._wake.set()

    def abort(self) -> None:
        if self.aborted:
            return
        self.aborted = self.finished = True
        if self.counted:
            for text in self.queue:
                self.owner.buffered_bytes -= len(text)
        self.queue.clear()
        self._wake.set()


class Connection:
    """One Client's connection: its Agent, its streams, its routes and its limits."""

    def __init__(self, *, transport: str, limits: Limits) -> None:
        self.id = secrets.token_urlsafe(32)  # unguessable: the only thing that lets a request reach this Agent
        self.transport = transport  # "http" or "websocket"
        self.limits = limits
        http = transport == "http"
        self.connection_stream = Mailbox(self, enabled=http)
        self.socket_stream = Mailbox(self, enabled=not http, counted=False)  # WebSocket: everything, in order
        self.sessions: dict[str, Mailbox] = {}
        self.pending_routes: dict[str, Route] = {}  # the Client's requests, by id: where their answers go
        self.client_routes: dict[str, Route] = {}  # the Agent's requests, by id: where the Client's answers belong
        self.buffered_bytes = 0
        self.buffered_sessions = 0  # session streams without a reader
        self.closed = False
        self.close_reason: LimitExceeded | None = None
        self.done = asyncio.Event()  # set when the shutdown has finished
        self.on_shutdown: list[Callable[[Connection], None]] = []
        self._progress: set[asyncio.Future[None]] = set()
        self._initial: asyncio.Future[dict[str, Any]] | None = None
        self._initial_key: str | None = None
        self._stall_watch: asyncio.Task[None] | None = None
        self._idle_timer: asyncio.TimerHandle | None = None
        self.agent: AgentConnection | None = None  # made by `make_agent`, before the connection is used

    async def make_agent(self, factory: AgentFactory) -> None:
        """Make this connection's Agent with `factory` (awaited when it is a coroutine function)."""
        made = factory(self.deliver)
        self.agent = await made if inspect.isawaitable(made) else made

    # -- from the Client ------------------------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Hand one message to the Agent (ConnectionClosed once the connection has shut down)."""
        if self.closed or self.agent is None:
            raise ConnectionClosed
        self.agent.receive(data)

    async def initialize(self, data: bytes, request_id: Any) -> dict[str, Any]:
        """Send `initialize` and wait for the Agent's answer to it, which must be its first message."""
        loop = asyncio.get_running_loop()
        self._initial = loop.create_future()
        self._initial_key = id_key(request_id)
        self.write(data)
        return await asyncio.shield(self._initial)

    def validate_id(self, label: str, value: Any) -> None:
        """LimitExceeded for a session id, or a string request id, over `max_id_length`."""
        if isinstance(value, str) and len(value) > self.limits.max_id_length:
            raise id_too_long(self.limits, label)

    def backlogged(self) -> bool:
        if self.transport == "http":
            return self.buffered_bytes >= self.limits.max_buffered_bytes
        return bool(self.socket_stream.queue)

    async def wait_for_capacity(self) -> None:
        """Return once the connection can take more output (or has closed). A request that would add output waits
        here, so a client that does not read cannot make its Agent produce more; if nothing is read for
        `max_output_stall_seconds`, the connection closes."""
        while not self.closed and self.backlogged():
            timeout = self.limits.max_output_stall_seconds if self.transport == "http" else None
            if not await self.wait_for_progress(timeout):
                self.close_for_limit(stalled(self.limits))
                return

    async def wait_for_progress(self, timeout: float | None) -> bool:
        """True when a reader takes output (or the connection closes), False when `timeout` passes first."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._progress.add(future)
        try:
            await asyncio.wait_for(asyncio.shield(future), timeout)
            return True
        except TimeoutError:
            return False
        finally:
            self._progress.discard(future)

    def _notify_progress(self) -> None:
        for future in list(self._progress):
            if not future.done():
                future.set_result(None)

    # -- the streams ----------------------------------------------------------------------------------------------

    def taken(self, text: str, counted: bool) -> None:
        if counted:
            self.buffered_bytes -= len(text)
        self._notify_progress()

    def reader_changed(self, stream: Mailbox) -> None:
        """Keep the count of session streams without a reader; a stream its reader left empty is dropped."""
        self.touch()
        if self.closed or stream.session is None:
            return
        if stream.reader is not None:
            self.buffered_sessions -= 1
            return
        if not stream.queue:
            self.sessions.pop(stream.session, None)
            stream.abort()
            return
        self.buffered_sessions += 1
        if self.buffered_sessions > self.limits.max_buffered_session_streams:
            self.close_for_limit(exceeded(self.limits, "max_buffered_session_streams"))

    def session_stream(self, session: str) -> Mailbox:
        """The stream of a session's output, made when first needed (it buffers until a reader attaches)."""
        self.validate_id("Session ID", session)
        if self.transport != "http":
            return self.connection_stream  # disabled: a WebSocket's output goes to its socket stream alone
        stream = self.sessions.get(session)
        if stream is not None:
            return stream
        if self.buffered_sessions >= self.limits.max_buffered_session_streams:
            raise exceeded(self.limits, "max_buffered_session_streams")
        return self._new_session_stream(session)

    def acquire_session_stream(self, session: str) -> Lease | None:
        """A reader for a session's stream, or None when it has one (or on a WebSocket connection)."""
        self.validate_id("Session ID", session)
        if self.transport != "http":
            return None
        stream = self.sessions.get(session)
        if stream is not None:
            return stream.try_acquire()
        if self.closed:
            raise ConnectionClosed
        return self._new_session_stream(session).try_acquire()

    def _new_session_stream(self, session: str) -> Mailbox:
        stream = self.sessions[session] = Mailbox(self, session=session)
        self.buffered_sessions += 1
        return stream

    # -- from the Agent -------------------------------------------------------------------------------------------

    def deliver(self, message: dict[str, Any]) -> None:
        """The Agent's send callback: route one message to the stream its client reads it on."""
        if self.closed:
            return
        initial = self._initial
        if initial is not None and not initial.done():
            # The first message must answer initialize; anything else fails the connection.
            if is_response(message) and id_key(message.get("id")) == self._initial_key:
                initial.set_result(message)
            else:
                initial.set_exception(RuntimeError("Expected initialize response from agent"))
                self.shutdown()
            return
        try:
            text = encode(message)
        except (TypeError, ValueError):
            log.warning("connection %s: a message that JSON cannot hold was not sent", self.id[:8])
            return
        try:
            self._route(message, text)
        except LimitExceeded as exc:
            self.close_for_limit(exc)
            return
        if self.transport == "http" and self.backlogged():
            self._watch_stall()

    def _route(self, message: dict[str, Any], text: str) -> None:
        if is_response(message):
            route = self.pending_routes.pop(id_key(message["id"]) or "", None)
            session = result_session(message)
            if session is not None:
                self.validate_id("Session ID", session)  # never hand out a session id this connection refuses
            self._stream(route).push(text)
        else:
            session = params_session(message.get("params"))
            stream = self.session_stream(session) if session is not None else self.connection_stream
            if "id" in message and "method" in message and (key := id_key(message["id"])) is not None:
                self.client_routes[key] = session
            stream.push(text)
        if self.transport != "http":
            self.socket_stream.push(text)

    def _stream(self, route: Route) -> Mailbox:
        return self.connection_stream if route is None else self.session_stream(route)

    def _watch_stall(self) -> None:
        """Close the connection if its readers take nothing for `max_output_stall_seconds` while it is full."""
        if self._stall_watch is None or self._stall_watch.done():
            self._stall_watch = asyncio.get_running_loop().create_task(self.wait_for_capacity())

    def track_request(self, message: dict[str, Any], route: Route) -> None:
        """Remember where the answer to a Client's request goes (session/load: the connection's stream)."""
        if is_request(message) and (key := id_key(message["id"])) is not None:
            self.pending_routes[key] = None if message["method"] == SESSION_LOAD else route

    # -- a Client gone quiet --------------------------------------------------------------------------------------

    def touch(self) -> None:
        """The Client did something (a POST, a stream opened or left): an HTTP connection with no stream open is
        ended `max_idle_seconds` from now, unless it does something again."""
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        limit = self.limits.max_idle_seconds
        if self.closed or self.transport != "http" or limit == float("inf") or self._has_reader():
            return
        self._idle_timer = asyncio.get_running_loop().call_later(limit, self._idle)

    def _has_reader(self) -> bool:
        return self.connection_stream.reader is not None or any(s.reader is not None for s in self.sessions.values())

    def _idle(self) -> None:
        self._idle_timer = None
        if not self.closed and not self._has_reader():
            log.info(
                "closing connection %s: no stream open and no request for %gs",
                self.id[:8],
                self.limits.max_idle_seconds,
            )
            self.shutdown()

    # -- the end --------------------------------------------------------------------------------------------------

    def close_for_limit(self, reason: LimitExceeded) -> None:
        log.warning("closing connection %s: %s", self.id[:8], reason)
        self.close_reason = reason
        self.shutdown()

    def shutdown(self) -> None:
        """End the connection: its streams end, nothing more reaches its Agent, and the Agent is closed."""
        if self.closed:
            return
        self.closed = True
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        self._notify_progress()
        for stream in (self.connection_stream, self.socket_stream, *self.sessions.values()):
            stream.abort()
        self.sessions.clear()
        self.buffered_sessions = 0
        self.pending_routes.clear()
        self.client_routes.clear()
        if self._initial is not None and not self._initial.done():
            self._initial.set_exception(ConnectionClosed())
        for callback in self.on_shutdown:
            callback(self)
        asyncio.get_running_loop().create_task(self._close_agent())

    async def _close_agent(self) -> None:
        try:
            if self.agent is not None:
                await self.agent.close()
        except Exception:  # the Agent's own failure to close must not stop the others
            log.exception("connection %s: the Agent failed to close", self.id[:8])
        finally:
            self.done.set()


class Registry:
    """The server's connections by id."""

    def __init__(self, factory: AgentFactory, limits: Limits) -> None:
        self.factory, self.limits = factory, limits
        self.connections: dict[str, Connection] = {}

    async def create(self, transport: str) -> Connection:
        """A new connection with its Agent made (whatever the factory raises, it raises)."""
        connection = Connection(transport=transport, limits=self.limits)
        connection.on_shutdown.append(self._forget)
        await connection.make_agent(self.factory)
        return connection

    def register(self, connection: Connection) -> None:
        if not connection.closed:
            self.connections[connection.id] = connection

    def get(self, connection_id: str) -> Connection | None:
        connection = self.connections.get(connection_id)
        return None if connection is None or connection.closed else connection

    def remove(self, connection_id: str) -> bool:
        connection = self.connections.pop(connection_id, None)
        if connection is None:
            return False
        connection.shutdown()
        return True

    def _forget(self, connection: Connection) -> None:
        if self.connections.get(connection.id) is connection:
            del self.connections[connection.id]

    async def close_all(self) -> None:
        connections = list(self.connections.values())
        self.connections.clear()
        for connection in connections:
            connection.shutdown()
        with contextlib.suppress(Exception):
            await asyncio.gather(*(connection.done.wait() for connection in connections))
