"""ACP over Streamable HTTP, the Client's side, as the TypeScript SDK 2.4.0 speaks it (`createHttpStream`).

    connection = HttpConnection("http://127.0.0.1:8000/acp", on_notification=print)
    await connection.request("initialize", {...}, 0)       # POST, answered 200 with JSON and Acp-Connection-Id
    session = await connection.request("session/new", {"cwd": "/"}, 1)
    await connection.request("session/prompt", {"sessionId": ..., "prompt": [...]}, 2)
    await connection.close()                                  # DELETE

Every later message is a POST carrying `Acp-Connection-Id` (and `Acp-Session-Id` when its params name a session),
answered 202; answers and the Agent's messages come on SSE `GET` streams: one for the connection, one per session,
each opened before the first message of its session is posted. Cookies go into a `http.cookiejar.CookieJar` the
caller may share between connections, so a load balancer's affinity cookie survives a reconnect.

Unlike the SDK's client, a failure is reported as what it is (see `rpc`): a POST answered other than 2xx, or a
stream that ends before the answer, is `NoResponse`, never a JSON-RPC error made up on the Client's side.
"""

from __future__ import annotations

import asyncio
import json
from http.cookiejar import CookieJar
from typing import Any

import httpx
from httpx_sse import SSEError, aconnect_sse

from ..client import NoResponse, NotSent
from .rpc import ClientConnection, Message, log, session_of

CONNECTION_ID = "Acp-Connection-Id"
SESSION_ID = "Acp-Session-Id"
JSON_TYPE = "application/json"
_SHOWN_BODY = 300  # characters of an error body a failure quotes
_DELETE_TIMEOUT = 5.0  # seconds a polite DELETE may take when the connection is closed


class HttpConnection(ClientConnection):
    """One ACP connection over Streamable HTTP, on its own httpx client (closing it drops every socket it used)."""

    def __init__(
        self,
        url: str,
        *,
        cookies: CookieJar | None = None,
        headers: dict[str, str] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.url = url
        self._http = httpx.AsyncClient(
            cookies=cookies if cookies is not None else CookieJar(),  # a CookieJar is shared, not copied
            headers=headers,
            # Streams stay idle for as long as the Agent is quiet; each request has its own deadline instead.
            timeout=httpx.Timeout(None, connect=self.timeout),
        )
        self._streams: dict[str, asyncio.Future[None]] = {}  # session id -> ready once its GET got its headers
        self._post_lock = asyncio.Lock()  # one POST at a time, in order, as the SDK's client writes

    # -- initialize -----------------------------------------------------------------------------------------------

    async def _open(self, message: Message, started: asyncio.Event) -> Message:
        response = await self._post(message, {}, started)
        try:
            if response.status_code != 200:
                raise NoResponse(f"initialize: {_status(response, await response.aread())}")
            connection_id = response.headers.get(CONNECTION_ID)
            if not connection_id:
                raise NoResponse(f"initialize: the answer has no {CONNECTION_ID} header")
            try:
                answer = json.loads(await response.aread())
            except (ValueError, httpx.HTTPError) as exc:
                raise NoResponse(f"initialize: the answer is not readable JSON ({exc})") from exc
        finally:
            await response.aclose()
        if not isinstance(answer, dict) or answer.get("id") != message["id"]:
            raise NoResponse("initialize: the answer is not a JSON-RPC response to this request")
        self.connection_id = connection_id
        self._spawn(self._read_stream(None, _ready()))
        return answer

    # -- sending --------------------------------------------------------------------------------------------------

    async def _transmit(self, message: Message, started: asyncio.Event) -> None:
        session_id = session_of(message.get("params"))
        await self._transmit_to(message, session_id, started)

    async def _transmit_reply(self, reply: Message, session_id: str | None) -> None:
        # The answer to the Agent's request goes back scoped to the stream the request came on.
        await self._transmit_to(reply, session_id, asyncio.Event())

    async def _transmit_to(self, message: Message, session_id: str | None, started: asyncio.Event) -> None:
        headers = {CONNECTION_ID: self.connection_id or ""}
        if session_id is not None:
            await self._session_stream(session_id)
            headers[SESSION_ID] = session_id
        response = await self._post(message, headers, started)
        body = await _drain(response)
        if not 200 <= response.status_code < 300:
            raise NoResponse(f"{message.get('method', 'answer')}: {_status(response, body)}")

    async def _post(self, message: Message, headers: dict[str, str], started: asyncio.Event) -> httpx.Response:
        """POST one message; the response is open for its status and headers. NotSent only when no byte left."""
        # ASCII escapes: lossless for any string, a lone surrogate (a malformed key a test sends) among them.
        body = json.dumps(message, allow_nan=False).encode()
        async with self._post_lock:
            if self.failure is not None and self.initialized:
                raise NotSent(f"{message.get('method', 'answer')}: the connection is unusable ({self.failure})")
            started.set()
            request = self._http.build_request(
                "POST", self.url, content=body, headers={"Content-Type": JSON_TYPE, **headers}
            )
            try:
                return await self._http.send(request, stream=True)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                # No connection was made, so the request never left.
                raise NotSent(f"{message.get('method', 'answer')}: cannot connect ({_reason(exc)})") from exc
            except httpx.HTTPError as exc:
                raise NoResponse(f"{message.get('method', 'answer')}: {_reason(exc)}") from exc

    # -- the event streams ----------------------------------------------------------------------------------------

    def _session_announced(self, session_id: str) -> None:
        # As the SDK's client does: a session named by a result gets its stream at once, for early updates.
        if self.failure is None and session_id not in self._streams:
            self._start_stream(session_id)

    def _start_stream(self, session_id: str) -> asyncio.Future[None]:
        ready = _ready()
        self._streams[session_id] = ready
        self._spawn(self._read_stream(session_id, ready))
        return ready

    async def _session_stream(self, session_id: str) -> None:
        """Wait until the session's stream is attached, opening it if needed; NotSent when it cannot be."""
        ready = self._streams.get(session_id) or self._start_stream(session_id)
        try:
            await asyncio.shield(ready)
        except NoResponse as exc:
            raise NotSent(f"the stream of session {session_id} did not open: {exc}") from exc

    async def _read_stream(self, session_id: str | None, ready: asyncio.Future[None]) -> None:
        """Read one SSE stream to its end, routing each message; its end fails what waits on it."""
        headers = {CONNECTION_ID: self.connection_id or ""}
        if session_id is not None:
            headers[SESSION_ID] = session_id
        where = "connection stream" if session_id is None else f"stream of session {session_id}"
        why = f"{where} ended"
        try:
            async with aconnect_sse(self._http, "GET", self.url, headers=headers) as source:
                if source.response.status_code != 200:
                    why = f"{where} was refused: {_status(source.response, await source.response.aread())}"
                    return
                if not ready.done():
                    ready.set_result(None)
                async for event in source.aiter_sse():
                    try:
                        message = json.loads(event.data)
                    except ValueError:
                        log.warning("ignored an SSE event that is not JSON (%d characters)", len(event.data))
                        continue
                    self._received(message, session_id)
        except (httpx.HTTPError, SSEError) as exc:
            why = f"{where} broke: {_reason(exc)}"
        finally:
            if not ready.done():
                ready.set_exception(NoResponse(why))
            if session_id is None:
                self._fail(why)
            else:
                if self._streams.get(session_id) is ready:
                    del self._streams[session_id]  # the session's next message opens it again, as the SDK does
                self._fail_session(session_id, why)

    # -- the end --------------------------------------------------------------------------------------------------

    async def close(self) -> None:
        """Fail what waits, stop the streams, send DELETE (bounded, best effort) and drop every socket."""
        if self.closed:
            return
        await super().close()
        try:
            if self.connection_id is not None:
                await self._http.delete(self.url, headers={CONNECTION_ID: self.connection_id}, timeout=_DELETE_TIMEOUT)
        except httpx.HTTPError as exc:
            log.info("DELETE of connection %s failed: %s", self.connection_id, _reason(exc))
        finally:
            await self._http.aclose()


def _ready() -> asyncio.Future[None]:
    """A future set when a stream is attached, or failed when it could not be (seen even when nobody waits)."""
    ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    ready.add_done_callback(lambda f: f.cancelled() or f.exception())
    return ready


async def _drain(response: httpx.Response) -> bytes:
    try:
        return await response.aread()
    except httpx.HTTPError:
        return b""  # the status is what counts; a body cut short changes nothing
    finally:
        await response.aclose()


def _status(response: httpx.Response, body: bytes) -> str:
    text = body.decode("utf-8", "replace").strip()[:_SHOWN_BODY]
    return f"HTTP {response.status_code}" + (f" ({text})" if text else "")


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
