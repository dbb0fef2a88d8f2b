"""A Client over ACP's remote transport that survives its connections: reconnect, resume, resend with the key.

    client = RemoteClient("http://127.0.0.1:8000/acp", profile="http", pending=PendingPrompts("pending.json"))
    session = await client.new_session("/work")
    answer = await client.prompt(session["sessionId"], [{"type": "text", "text": "hi"}])
    await client.close()

Every request goes through the `Resender` (`acp_v2_runtime.client`), which attaches an idempotency key to each
prompt and resends as far as the retry table allows. When a request fails in transport (`NotSent`, `NoResponse`:
a refused or broken connection, a POST answered other than 2xx, a stream or socket ended before the answer, a
timeout), the connection it used is abandoned, since a POST that hangs holds every later one behind it. The next
attempt opens a new connection, initializes it, resumes every session this Client opened or resumed, and sends
the prompt again with its original key, so the Agent answers with the original `messageId` and inserts nothing
twice. An error the Agent sent (`ErrorResponse`) leaves the connection as it is.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from http.cookiejar import CookieJar
from typing import Any, Literal

from acp_v2_schema import protocol as M

from ..client import PROTOCOL_VERSION, ErrorResponse, NoResponse, NotSent, PendingPrompts, Resender
from .http_client import HttpConnection
from .rpc import DEFAULT_TIMEOUT, ClientConnection, OnNotification, OnRequest, log
from .ws_client import WebSocketConnection

Profile = Literal["http", "websocket"]
PROFILES: dict[str, type[ClientConnection]] = {"http": HttpConnection, "websocket": WebSocketConnection}


class RemoteClient:
    """A reconnecting ACP Client over Streamable HTTP (`profile="http"`) or WebSocket (`profile="websocket"`).

    `timeout` bounds each attempt of each request (`prompt_timeout`, if given, each `session/prompt` attempt);
    `pending` keeps the keyed prompts not yet answered (in a file, to survive a restart); `on_notification` gets
    every notification (`session/update`), `on_request` answers the Agent's requests (by default -32601);
    `cookies` is the jar every connection shares; `max_attempts`, `base_delay` and `max_delay` go to the Resender.
    """

    def __init__(
        self,
        url: str,
        *,
        profile: Profile = "http",
        pending: PendingPrompts | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        prompt_timeout: float | None = None,
        initialize: dict[str, Any] | None = None,
        on_notification: OnNotification | None = None,
        on_request: OnRequest | None = None,
        cookies: CookieJar | None = None,
        headers: dict[str, str] | None = None,
        max_attempts: int = 5,
        base_delay: float = 0.2,
        max_delay: float = 2.0,
    ) -> None:
        if profile not in PROFILES:
            raise ValueError(f"profile must be one of {sorted(PROFILES)}, not {profile!r}")
        self.url, self.profile, self.timeout = url, profile, timeout
        # A prompt is answered once its message is inserted, which may take longer (or less) than other requests.
        self.prompt_timeout = timeout if prompt_timeout is None else prompt_timeout
        self.initialize_params = initialize or {
            "protocolVersion": PROTOCOL_VERSION,
            "info": {"name": "acp-v2-runtime-remote-client", "version": "0.1.0"},
        }
        self.on_notification, self.on_request = on_notification, on_request
        self.cookies = cookies if cookies is not None else CookieJar()  # one jar for every connection: affinity
        self.headers = headers
        self.sessions: dict[str, dict[str, Any]] = {}  # session id -> the params that resume it
        self.connections_opened = 0
        self.initialize_result: Any = None
        self._ids: Iterator[int] = itertools.count(1)
        self.resender = Resender(
            self._send,
            pending=pending,
            max_attempts=max_attempts,
            base_delay=base_delay,
            max_delay=max_delay,
            request_ids=self._ids,
        )
        self._connection: ClientConnection | None = None
        self._opening = asyncio.Lock()
        self._closing: set[asyncio.Task[None]] = set()

    @property
    def pending(self) -> PendingPrompts:
        """The keyed prompts whose answers this Client has not seen yet."""
        return self.resender.pending

    @property
    def connection(self) -> ClientConnection | None:
        """The connection in use, if one is open."""
        return self._connection

    # -- the requests ---------------------------------------------------------------------------------------------

    async def connect(self) -> Any:
        """Open and initialize a connection now (otherwise the first request does); return initialize's result."""
        await self._connected()
        return self.initialize_result

    async def new_session(self, cwd: str, **params: Any) -> dict[str, Any]:
        """`session/new`; the session is resumed on every later connection."""
        result = await self.request(M.SESSION_NEW, {"cwd": cwd, **params})
        self.sessions[result["sessionId"]] = {"sessionId": result["sessionId"], "cwd": cwd}
        return result

    async def resume_session(self, session_id: str, cwd: str, **params: Any) -> dict[str, Any]:
        """`session/resume` (`replayFrom={"type": "start"}` replays the history); resumed again on later connections."""
        result = await self.request(M.SESSION_RESUME, {"sessionId": session_id, "cwd": cwd, **params})
        self.sessions[session_id] = {"sessionId": session_id, "cwd": cwd}
        return result

    async def list_sessions(self, **params: Any) -> dict[str, Any]:
        """`session/list`."""
        return await self.request(M.SESSION_LIST, params)

    async def prompt(
        self, session_id: str, prompt: list[dict[str, Any]], *, key: str | None = None, **params: Any
    ) -> Any:
        """`session/prompt` with an idempotency key (a new one unless given), resent with it until answered."""
        body = {"sessionId": session_id, "prompt": prompt, **params}
        if key is not None:
            body["idempotencyKey"] = key
        return await self.request(M.SESSION_PROMPT, body)

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Any request, through the `Resender`: retried on new connections as far as the retry table allows."""
        return await self.resender.request(method, params)

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        """Send a notification on the current connection (never resent: a late `session/cancel` cancels newer work)."""
        connection = await self._connected()
        try:
            await connection.notify(method, params)
        except (NotSent, NoResponse):
            self._abandon(connection)
            raise

    async def resend_pending(self, **options: Any) -> dict[str, Any]:
        """Resend every stored pending prompt with its original key (resume their sessions first)."""
        return await self.resender.resend_pending(**options)

    async def reconnect(self) -> Any:
        """Drop the connection in use and open a new one (initialize, then resume the sessions); return initialize's."""
        if self._connection is not None:
            self._abandon(self._connection)
        return await self.connect()

    async def close(self) -> None:
        """Close the connection in use (DELETE on HTTP) and wait for abandoned ones to finish closing."""
        if self._connection is not None:
            self._abandon(self._connection)
        while self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)

    async def __aenter__(self) -> RemoteClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- the transport under the Resender ---------------------------------------------------------------------------

    async def _send(self, method: str, params: dict[str, Any], request_id: int) -> Any:
        connection = await self._connected()
        try:
            limit = self.prompt_timeout if method == M.SESSION_PROMPT else self.timeout
            return await connection.request(method, params, request_id, timeout=limit)
        except (NotSent, NoResponse):
            self._abandon(connection)  # a hung POST blocks the old connection: the retry goes on a new one
            raise

    async def _connected(self) -> ClientConnection:
        """The connection in use, or a new one: initialized, with every known session resumed. NotSent if not."""
        async with self._opening:
            connection = self._connection
            if connection is not None and connection.failure is None:
                return connection
            connection = PROFILES[self.profile](
                self.url,
                cookies=self.cookies,
                headers=self.headers,
                on_notification=self.on_notification,
                on_request=self.on_request,
                timeout=self.timeout,
            )
            self.connections_opened += 1
            try:
                self.initialize_result = await connection.request(M.INITIALIZE, self.initialize_params, next(self._ids))
                for session_id, resume in list(self.sessions.items()):
                    try:
                        await connection.request(M.SESSION_RESUME, resume, next(self._ids))
                    except ErrorResponse as refused:
                        # The Agent says the session cannot come back: later prompts to it get the Agent's answer.
                        log.warning("session %s was not resumed: %s", session_id, refused)
                        self.sessions.pop(session_id, None)
            except (NotSent, NoResponse, ErrorResponse) as exc:
                self._abandon(connection)
                raise NotSent(f"no connection to send on: {exc}") from exc
            self._connection = connection
            return connection

    def _abandon(self, connection: ClientConnection) -> None:
        """Stop using `connection` and close it in the background (its DELETE may hang as its POSTs did)."""
        if self._connection is connection:
            self._connection = None
        task = asyncio.ensure_future(connection.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)
