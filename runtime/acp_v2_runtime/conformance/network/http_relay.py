"""The Streamable HTTP profile through the proxy: each request forwarded with httpx, each session or connection
event stream read with httpx-sse and written on event by event, and the armed faults made on the way.

A prompt POST with a fault armed is watched (its connection id and JSON-RPC id) before it is forwarded, so its
answer is caught on whichever event stream of that connection carries it. Events are written on as the SDK
frames them (`data:` lines, a blank line); the `event`, `id` and `retry` fields are kept when an upstream sends
them. Keep-alive comments are not passed on (httpx-sse does not report them).
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from httpx_sse import EventSource, ServerSentEvent

from . import asgi
from .faults import HTTP, Armed, Fault, FaultPlan, Killer
from .kills import kill_node
from .watches import Watch, Watches, as_message, is_prompt


class AbruptCut(Exception):
    """Raised out of the ASGI app to make the server drop the Client's connection mid-body (cut-stream-abrupt)."""


def frame(event: ServerSentEvent) -> bytes:
    """One server-sent event as it goes on the wire."""
    lines = []
    if event.event != "message":
        lines.append(f"event: {event.event}")
    if event.id:
        lines.append(f"id: {event.id}")
    if event.retry is not None:
        lines.append(f"retry: {event.retry}")
    lines += [f"data: {line}" for line in event.data.split("\n")]
    return ("\n".join(lines) + "\n\n").encode()


class HttpRelay:
    """Forwards the HTTP profile to one upstream endpoint, making the faults `plan` arms."""

    def __init__(
        self,
        upstream: str,
        client: httpx.AsyncClient,
        plan: FaultPlan,
        watches: Watches,
        hold_limit: float,
        killer: Killer | None = None,
    ) -> None:
        self.upstream = upstream
        self.client = client
        self.plan = plan
        self.watches = watches
        self.hold_limit = hold_limit
        """How long a held POST, or a POST waiting for the Agent's answer before its 502, waits at most."""
        self.killer = killer

    async def __call__(self, scope: asgi.Scope, receive: Any, send: Any) -> None:
        body = await asgi.read_body(receive) if scope["method"] not in ("GET", "HEAD") else b""
        message = as_message(body) if scope["method"] == "POST" else None
        armed = self.plan.take(HTTP) if is_prompt(message) else None
        if armed is not None:
            assert message is not None
            await self._faulty_post(scope, receive, send, body, message, armed)
            return
        try:
            response = await self.client.send(self._request(scope, body), stream=True)
        except httpx.HTTPError as error:
            await asgi.text(send, 502, f"the upstream could not be reached: {type(error).__name__}")
            return
        try:
            if scope["method"] == "GET" and _is_event_stream(response):
                await self._events(scope, receive, send, response)
            else:
                await _relay(send, response)
        finally:
            await response.aclose()

    def _request(self, scope: asgi.Scope, body: bytes) -> httpx.Request:
        headers = asgi.end_to_end(scope["headers"])
        return self.client.build_request(scope["method"], self.upstream, headers=headers, content=body)

    async def _faulty_post(
        self, scope: asgi.Scope, receive: Any, send: Any, body: bytes, message: dict[str, Any], armed: Armed
    ) -> None:
        connection = asgi.header(scope, "acp-connection-id") or ""
        params = message.get("params")
        armed.connection_id = connection
        armed.request_id = message["id"]
        armed.session_id = asgi.header(scope, "acp-session-id") or (
            params.get("sessionId") if isinstance(params, dict) else None
        )
        if armed.fault is Fault.HOLD_POST_UNFORWARDED:
            armed.forwarded = False
            await self._hold(receive, send, armed, "never forwarded")
            return
        watch = self.watches.add(connection, armed)
        try:
            response = await self.client.send(self._request(scope, body), stream=True)
        except httpx.HTTPError as error:
            self.watches.drop(connection, armed)
            armed.forwarded = False
            armed.finish(f"502: the upstream could not be reached ({type(error).__name__})")
            await asgi.text(send, 502, "the upstream could not be reached")
            return
        armed.forwarded = True
        armed.upstream_status = response.status_code
        if not response.is_success:
            # Nothing to make a fault of: the Agent refused the POST itself, and the Client hears so.
            self.watches.drop(connection, armed)
            armed.finish(f"the upstream's own {response.status_code}, passed on")
            await _relay(send, response)
            await response.aclose()
            return
        await response.aclose()
        if armed.fault is Fault.POST_502:
            await self._bad_gateway(send, watch)
        elif armed.fault is Fault.HOLD_POST_FORWARDED:
            await self._hold(receive, send, armed, "forwarded, its answer dropped")
        else:
            # cut-stream, swallow-answer and the node kills act on the event stream; the POST gets the upstream's 202.
            if armed.fault is Fault.KILL_AFTER_FORWARD:
                await kill_node(self.killer, armed, asgi.header(scope, "cookie") or "")
                armed.finish(f"the POST's {response.status_code}, its node {armed.killed} killed at once; no answer")
            await asgi.answer(send, response.status_code, b"", asgi.end_to_end(response.headers.raw))

    async def _bad_gateway(self, send: Any, watch: Watch) -> None:
        try:
            await asyncio.wait_for(watch.answered.wait(), self.hold_limit)
            told = "502 on the POST, after the Agent answered"
        except asyncio.TimeoutError:
            told = "502 on the POST, the Agent's answer not seen"
        await asgi.text(send, 502, "Bad Gateway (fault proxy: post-502)")
        watch.armed.finish(told)

    async def _hold(self, receive: Any, send: Any, armed: Armed, what: str) -> None:
        if await asgi.client_left(receive, self.hold_limit):
            armed.finish(f"nothing: the POST was held ({what}) until the Client gave up")
            return
        await asgi.text(send, 504, "Gateway Timeout (fault proxy: hold-post)")
        armed.finish(f"504 after the hold limit ({what})")

    async def _events(self, scope: asgi.Scope, receive: Any, send: Any, response: httpx.Response) -> None:
        headers = asgi.end_to_end(response.headers.raw, "content-encoding")
        await send({"type": "http.response.start", "status": response.status_code, "headers": asgi.encoded(headers)})
        connection = asgi.header(scope, "acp-connection-id") or ""
        cookies = asgi.header(scope, "cookie") or ""
        pump = asyncio.ensure_future(self._pump(connection, cookies, response, send))
        gone = asyncio.ensure_future(asgi.client_left(receive, float("inf")))
        try:
            await asyncio.wait({pump, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (pump, gone):
                task.cancel()
            await asyncio.gather(gone, return_exceptions=True)
        if not pump.cancelled() and pump.done():
            pump.result()  # AbruptCut leaves the app from here

    async def _pump(self, connection: str, cookies: str, response: httpx.Response, send: Any) -> None:
        try:
            await self._pump_events(connection, cookies, response, send)
        except httpx.TransportError as exc:  # the upstream broke (its node died): the Client's stream breaks too
            raise AbruptCut(f"the upstream's stream broke: {exc}") from exc

    async def _pump_events(self, connection: str, cookies: str, response: httpx.Response, send: Any) -> None:
        async for event in EventSource(response).aiter_sse():
            watch = self.watches.answer(connection, as_message(event.data))
            if watch is None or watch.armed.fault is Fault.KILL_AFTER_ANSWER:
                await send({"type": "http.response.body", "body": frame(event), "more_body": True})
            if watch is None:
                continue
            if watch.armed.fault is Fault.KILL_AFTER_ANSWER:
                # The answer is on its way to the Client before the node dies (and the Client's streams break).
                await kill_node(self.killer, watch.armed, cookies)
                watch.armed.finish(f"the Agent's answer passed on, then its node {watch.armed.killed} killed")
                continue
            armed = watch.armed
            if armed.fault is Fault.CUT_STREAM_CLEAN:
                armed.finish("the session stream ended (cleanly) before the answer")
                break
            if armed.fault is Fault.CUT_STREAM_ABRUPT:
                armed.finish("the connection broke mid-stream before the answer")
                raise AbruptCut(armed.fault.value)
            if armed.fault is Fault.SWALLOW_ANSWER:
                armed.finish("nothing: the answer was dropped, the stream stayed open")
            # post-502, hold-post-forwarded and an answer racing node-kill-after-forward: dropped here; the POST's
            # relay says what the Client was told.
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _is_event_stream(response: httpx.Response) -> bool:
    kind = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    return response.status_code == 200 and kind == "text/event-stream"


async def _relay(send: Any, response: httpx.Response) -> None:
    """The upstream's response as it came: status, headers and the body's bytes (still encoded, if they were)."""
    body = b"".join([chunk async for chunk in response.aiter_raw()])
    await asgi.answer(send, response.status_code, body, asgi.end_to_end(response.headers.raw))
