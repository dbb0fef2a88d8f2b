"""The WebSocket profile through the proxy: the Client's socket accepted with the upstream's own handshake headers
(its `Acp-Connection-Id`, its cookies), then every frame relayed both ways with websockets, and the armed faults
made on the way. Text frames are read as JSON only to find a prompt and its answer; every frame goes on unchanged.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

from . import asgi
from .faults import WEBSOCKET, Armed, Fault, FaultPlan, Killer
from .kills import kill_node
from .watches import Watches, as_message, is_prompt

GOING_AWAY = 1001
"""The close code the Client gets in ws-close-after-prompt, as from a gateway that is going away."""
_handshake_only = (
    "sec-websocket-key",
    "sec-websocket-accept",
    "sec-websocket-version",
    "sec-websocket-extensions",
    "sec-websocket-protocol",
)
_sockets = itertools.count(1)


def ws_url(url: str) -> str:
    """The WebSocket address of an http(s) endpoint."""
    return "ws" + url[4:] if url.startswith("http") else url


class WebSocketRelay:
    """Relays one Client socket to the upstream endpoint, making the faults `plan` arms."""

    def __init__(
        self, upstream: str, plan: FaultPlan, watches: Watches, hold_limit: float, killer: Killer | None = None
    ) -> None:
        self.upstream = ws_url(upstream)
        self.plan = plan
        self.watches = watches
        self.hold_limit = hold_limit
        """How long the upstream socket of ws-close-after-prompt stays open waiting for the answer."""
        self.killer = killer

    async def __call__(self, scope: asgi.Scope, receive: Any, send: Any) -> None:
        if (await receive())["type"] != "websocket.connect":
            return
        try:
            upstream = await connect(
                self.upstream,
                additional_headers=asgi.end_to_end(scope["headers"], *_handshake_only),
                subprotocols=scope.get("subprotocols") or None,
                compression=None,
                proxy=None,  # the upstream is reached directly, whatever the environment says
                max_size=None,  # the upstream's own limits apply, not the relay's
                user_agent_header=None,
            )
        except InvalidStatus as refused:
            await _refuse(scope, send, refused.response.status_code, refused.response.body or b"")
            return
        except (OSError, WebSocketException, asyncio.TimeoutError):
            await _refuse(scope, send, 502, b"the upstream could not be reached")
            return
        assert upstream.response is not None
        headers = asgi.end_to_end(upstream.response.headers.raw_items(), *_handshake_only, "date", "server")
        await send({"type": "websocket.accept", "subprotocol": upstream.subprotocol, "headers": asgi.encoded(headers)})
        socket = Socket(self, upstream, send, asgi.header(scope, "acp-connection-id") or f"ws-{next(_sockets)}")
        # The node this socket reached: named by the cookie the balancer set on the 101, else the one the Client sent.
        set_cookie = "; ".join(upstream.response.headers.get_all("set-cookie"))
        socket.cookies = set_cookie or asgi.header(scope, "cookie") or ""
        await socket.run(receive)


class Socket:
    """One relayed socket: the Client's side (ASGI) and the upstream's (websockets)."""

    def __init__(self, relay: WebSocketRelay, upstream: ClientConnection, send: Any, name: str) -> None:
        self.relay = relay
        self.upstream = upstream
        self.send = send
        self.name = name  # the watches' connection key; only this socket carries the answers it waits for
        self.client_open = True
        self.closing: Armed | None = None
        self.cookies = ""

    async def run(self, receive: Any) -> None:
        down = asyncio.ensure_future(self._from_agent())
        up = asyncio.ensure_future(self._from_client(receive))
        await asyncio.wait({down, up}, return_when=asyncio.FIRST_COMPLETED)
        if self.closing is not None and not down.done():
            # ws-close-after-prompt: the Client is gone, the Agent's socket waits for the answer (bounded).
            await asyncio.wait({down}, timeout=self.relay.hold_limit)
        for task in (down, up):
            task.cancel()
        await asyncio.gather(down, up, return_exceptions=True)
        await self.upstream.close()
        if self.closing is not None:
            self.relay.watches.drop(self.name, self.closing)
            seen = "its answer dropped when it came" if self.closing.answer is not None else "its answer never came"
            self.closing.finish(f"the socket closed ({GOING_AWAY}) right after the prompt frame; {seen}")
        if self.client_open:
            code = self.upstream.close_code or GOING_AWAY
            if code in (1005, 1006, 1015):  # said of a socket that broke (its node died), never sent in a frame
                code = GOING_AWAY
            await self._close_client(code, self.upstream.close_reason or "")

    async def _close_client(self, code: int, reason: str) -> None:
        if self.client_open:
            self.client_open = False
            await self.send({"type": "websocket.close", "code": code, "reason": reason})

    async def _from_client(self, receive: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                self.client_open = False
                return
            data = message.get("text")
            if data is None:
                await self.upstream.send(message.get("bytes") or b"")
                continue
            parsed = as_message(data)
            armed = self.relay.plan.take(WEBSOCKET) if is_prompt(parsed) else None
            if armed is not None:
                assert parsed is not None
                params = parsed.get("params")
                armed.connection_id = self.name
                armed.request_id = parsed["id"]
                armed.session_id = params.get("sessionId") if isinstance(params, dict) else None
                armed.forwarded = True
                self.relay.watches.add(self.name, armed)
            await self.upstream.send(data)
            if armed is not None and armed.fault is Fault.KILL_AFTER_FORWARD:
                await kill_node(self.relay.killer, armed, self.cookies)
                armed.finish(f"the prompt frame forwarded, its node {armed.killed} killed at once; no answer")
            if armed is not None and armed.fault is Fault.WS_CLOSE_AFTER_PROMPT:
                self.closing = armed
                await self._close_client(GOING_AWAY, "fault proxy: ws-close-after-prompt")
                return

    async def _from_agent(self) -> None:
        try:
            async for data in self.upstream:
                if isinstance(data, str):
                    watch = self.relay.watches.answer(self.name, as_message(data))
                    if watch is not None:
                        fault = watch.armed.fault
                        if fault is Fault.SWALLOW_ANSWER:
                            watch.armed.finish("nothing: the answer was dropped, the socket stayed open")
                            continue
                        if fault is Fault.KILL_AFTER_FORWARD:
                            continue  # an answer that raced the kill: dropped
                        if fault is not Fault.KILL_AFTER_ANSWER:
                            return  # ws-close-after-prompt: the answer it waited for came; the socket ends
                        if self.client_open:  # the answer goes on first, then its node dies
                            await self.send({"type": "websocket.send", "text": data})
                        await kill_node(self.relay.killer, watch.armed, self.cookies)
                        watch.armed.finish(f"the Agent's answer passed on, then its node {watch.armed.killed} killed")
                        continue
                if self.client_open:
                    key = "text" if isinstance(data, str) else "bytes"
                    await self.send({"type": "websocket.send", key: data})
        except ConnectionClosed:
            return


async def _refuse(scope: asgi.Scope, send: Any, status: int, body: bytes) -> None:
    """Turns the Client's upgrade down with the upstream's status, where the server lets an app answer one."""
    if "websocket.http.response" in scope.get("extensions", {}):
        await send({"type": "websocket.http.response.start", "status": status, "headers": []})
        await send({"type": "websocket.http.response.body", "body": body})
    else:
        await send({"type": "websocket.close", "code": 1008})
