"""ACP over WebSocket, the Client's side, as the TypeScript SDK 2.4.0 speaks it (`createWebSocketStream`).

    connection = WebSocketConnection("ws://127.0.0.1:8000/acp", on_notification=print)
    await connection.request("initialize", {...}, 0)   # the upgrade, then initialize as the first text frame

One socket on the same endpoint as the HTTP profile carries every message both ways as one JSON text frame each.
The upgrade sends the cookies of a `http.cookiejar.CookieJar` the caller may share between connections and keeps
the ones the upgrade answer sets, for affinity; the answer's `Acp-Connection-Id` names the connection.

A socket that closes before a request's answer gives that request `NoResponse`; a connection that could not be
opened (refused, upgrade rejected) gives `NotSent`, since the `initialize` frame never left.
"""

from __future__ import annotations

import asyncio
import json
from http.cookiejar import CookieJar
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection as Socket
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.protocol import State

from ..client import NoResponse, NotSent
from .http_client import CONNECTION_ID
from .rpc import ClientConnection, Message, log

_CLOSE_TIMEOUT = 5.0  # seconds the closing handshake may take before the socket is dropped
MAX_MESSAGE_BYTES = 32 * 1024 * 1024
"""The largest frame read, the size the SDK's transports allow a message by default."""


def websocket_url(url: str) -> str:
    """The endpoint's address with a WebSocket scheme (http -> ws, https -> wss); ws and wss pass unchanged."""
    parsed = httpx.URL(url)
    scheme = {"http": "ws", "https": "wss"}.get(parsed.scheme, parsed.scheme)
    return str(parsed.copy_with(scheme=scheme))


def _http_url(url: str) -> str:
    # The cookie jar matches cookies by an HTTP address: the same host and path, with an HTTP scheme.
    parsed = httpx.URL(url)
    return str(parsed.copy_with(scheme={"ws": "http", "wss": "https"}.get(parsed.scheme, parsed.scheme)))


class WebSocketConnection(ClientConnection):
    """One ACP connection over one WebSocket."""

    def __init__(
        self,
        url: str,
        *,
        cookies: CookieJar | None = None,
        headers: dict[str, str] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.url = websocket_url(url)
        self._cookies = httpx.Cookies(cookies if cookies is not None else CookieJar())  # wraps the jar, no copy
        self._headers = dict(headers or {})
        self._socket: Socket | None = None

    async def _open(self, message: Message, started: asyncio.Event) -> Message:
        upgrade = httpx.Request("GET", _http_url(self.url), headers=self._headers)
        self._cookies.set_cookie_header(upgrade)
        try:
            socket = await connect(
                self.url,
                # websockets writes its own Host; a second one is a request servers must refuse (h11 does).
                additional_headers=[(k, v) for k, v in upgrade.headers.multi_items() if k.lower() != "host"],
                open_timeout=self.timeout,
                close_timeout=min(self.timeout, _CLOSE_TIMEOUT),  # a hung peer must not hold the Client's close
                max_size=MAX_MESSAGE_BYTES,
                compression=None,  # the SDK's server (ws) offers none by default either
            )
        except (OSError, TimeoutError, asyncio.TimeoutError, InvalidHandshake, InvalidURI) as exc:
            raise NotSent(f"initialize: cannot open the WebSocket ({type(exc).__name__}: {exc})") from exc
        self._socket = socket
        if socket.response is not None:
            answer_headers = list(socket.response.headers.raw_items())
            self._cookies.extract_cookies(httpx.Response(101, headers=answer_headers, request=upgrade))
            self.connection_id = socket.response.headers.get(CONNECTION_ID)
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._waiting[message["id"]] = (future, None)
        self._spawn(self._read())
        try:
            await self._transmit(message, started)
            return await future
        finally:
            self._waiting.pop(message["id"], None)

    async def _transmit(self, message: Message, started: asyncio.Event) -> None:
        socket = self._socket
        name = message.get("method", "answer")
        if socket is None or socket.state is not State.OPEN:
            raise NotSent(f"{name}: the socket is not open")  # checked before anything was written
        # ASCII escapes: lossless for any string, a lone surrogate (a malformed key a test sends) among them.
        text = json.dumps(message, allow_nan=False)
        started.set()
        try:
            await socket.send(text)
        except ConnectionClosed as exc:
            raise NoResponse(f"{name}: the socket closed while sending ({exc})") from exc

    async def _read(self) -> None:
        """Read frames until the socket closes; its close fails every request still waiting."""
        assert self._socket is not None
        why = "socket closed"
        try:
            async for frame in self._socket:
                if not isinstance(frame, str):
                    log.warning("ignored a binary WebSocket frame")  # ACP messages are text frames
                    continue
                try:
                    message = json.loads(frame)
                except ValueError:
                    log.warning("ignored a WebSocket frame that is not JSON (%d characters)", len(frame))
                    continue
                self._received(message)
        except ConnectionClosed as exc:
            why = f"socket closed ({exc})"
        finally:
            if self._socket.close_code is not None and why == "socket closed":
                why = f"socket closed (code {self._socket.close_code} {self._socket.close_reason or ''})".strip()
            self._fail(why)

    async def close(self) -> None:
        """Fail what waits and close the socket."""
        if self.closed:
            return
        await super().close()
        if self._socket is not None:
            await self._socket.close()
