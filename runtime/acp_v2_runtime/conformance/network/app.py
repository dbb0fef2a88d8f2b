"""The fault proxy as one ASGI application: the control knob under `CONTROL`, every other path relayed to the
upstream endpoint (HTTP requests by `HttpRelay`, WebSocket upgrades by `WebSocketRelay`).

The control knob, for a caller in another process (the history check, a shell):

    POST {CONTROL}/arm    {"fault": "post-502", "profile": "http"}   -> 200 {"number": 1, ...}  (profile optional)
    GET  {CONTROL}/log                                               -> 200 [record, ...]  (made first, then armed)
    POST {CONTROL}/reset                                             -> 200 {}

An unknown fault, or one the profile cannot carry, is answered 400 with the reason.
"""

from __future__ import annotations

import json
from http.cookiejar import CookieJar, DefaultCookiePolicy
from typing import Any

import httpx

from . import asgi
from .faults import APPLIES_TO, Fault, FaultPlan, Killer
from .http_relay import HttpRelay
from .watches import Watches
from .ws_relay import WebSocketRelay

CONTROL = "/_fault-proxy"
DEFAULT_HOLD_LIMIT = 60.0
"""Seconds a held POST, or a fault waiting for the Agent's answer, waits at most."""


class FaultProxy:
    """An ASGI app forwarding ACP's remote transport to `upstream` (an http:// endpoint), making armed faults.

    Arm faults with `plan.arm(...)` from any thread (or through the control knob); each returns the record that
    says, once made, what the Agent answered and what the Client was told. With a `killer`, the node kills can be
    armed too."""

    def __init__(self, upstream: str, *, hold_limit: float = DEFAULT_HOLD_LIMIT, killer: Killer | None = None) -> None:
        self.upstream = upstream
        self.plan = FaultPlan(can_kill=killer is not None)
        self.hold_limit = hold_limit
        self.killer = killer
        self._watches = Watches()
        self._client: httpx.AsyncClient | None = None
        self._sockets = WebSocketRelay(upstream, self.plan, self._watches, hold_limit, killer)

    def _http(self) -> HttpRelay:
        # The httpx client belongs to the event loop that serves, so it is made on the first request.
        if self._client is None:
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(10.0, read=None),  # event streams are read for as long as they live
                # A new upstream connection per request: reusing one the upstream is closing as idle fails the
                # request with a ReadError, and a POST must never be sent twice by the proxy itself.
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=0),
                trust_env=False,  # the upstream is reached directly, whatever the environment says
                # A relay keeps no cookies: each request carries its Client's own. A jar here would send the first
                # Client's affinity cookie with every later request, so a balancer would set no cookie for them.
                cookies=CookieJar(DefaultCookiePolicy(allowed_domains=[])),
            )
        return HttpRelay(self.upstream, self._client, self.plan, self._watches, self.hold_limit, self.killer)

    async def __call__(self, scope: asgi.Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
        elif scope["type"] == "websocket":
            await self._sockets(scope, receive, send)
        elif scope["type"] == "http" and scope["path"].startswith(CONTROL + "/"):
            await self._control(scope, receive, send)
        elif scope["type"] == "http":
            await self._http()(scope, receive, send)

    async def _lifespan(self, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._client is not None:
                    await self._client.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _control(self, scope: asgi.Scope, receive: Any, send: Any) -> None:
        verb = scope["path"][len(CONTROL) + 1 :]
        body = await asgi.read_body(receive)
        if (scope["method"], verb) == ("GET", "log"):
            await _json(send, 200, [armed.as_dict() for armed in self.plan.records()])
        elif (scope["method"], verb) == ("POST", "reset"):
            self.plan.reset()
            await _json(send, 200, {})
        elif (scope["method"], verb) == ("POST", "arm"):
            try:
                asked = json.loads(body)
                armed = self.plan.arm(asked["fault"], asked.get("profile"))
            except (ValueError, KeyError, TypeError) as error:
                names = ", ".join(f"{f.value} ({'/'.join(APPLIES_TO[f])})" for f in Fault)
                await asgi.text(send, 400, f"cannot arm that: {error}; the faults are {names}")
                return
            await _json(send, 200, armed.as_dict())
        else:
            await asgi.text(send, 404, f"the control knob has GET {CONTROL}/log, POST {CONTROL}/arm and /reset")


async def _json(send: Any, status: int, value: Any) -> None:
    await asgi.answer(send, status, json.dumps(value).encode(), [("content-type", "application/json")])
