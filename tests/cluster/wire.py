"""A plain Client of ACP's remote transport for the cluster tests, written from the wire (httpx, websockets), so
that what the balancer does to each request is seen as it is: the status, the headers, the cookie.

`HttpPeer` speaks the Streamable HTTP profile as the TypeScript SDK's client does: `initialize` POSTed and answered
200 with `Acp-Connection-Id`; the connection's event stream (a GET with that header); each session's own stream
(a GET with `Acp-Session-Id` too) opened before the session's first POST; every later POST answered 202, its
answer arriving on a stream. `WsPeer` speaks the WebSocket profile: one socket, the first frame `initialize`.
Both keep every message the Agent sent, in order, with the time it arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
import uuid
from typing import Any

import httpx
import websockets

CONNECTION, SESSION = "Acp-Connection-Id", "Acp-Session-Id"
COOKIE = "ACPNODE"  # the balancer's affinity cookie (acp_v2_runtime.cluster.Settings.cookie)


class Peer:
    """What both profiles share: ids, answers by id, every message seen with its arrival time."""

    def __init__(self) -> None:
        self.ids = itertools.count(1)
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.seen: list[tuple[float, dict[str, Any]]] = []

    def _arrived(self, message: dict[str, Any]) -> None:
        self.seen.append((time.monotonic(), message))
        if "method" not in message and message.get("id") in self.waiting:
            future = self.waiting.pop(message["id"])
            if not future.done():
                future.set_result(message)

    def _lost(self, why: str) -> None:
        for future in self.waiting.values():
            if not future.done():
                future.set_exception(ConnectionError(why))
        self.waiting.clear()

    def updates(self, since: int = 0) -> list[dict[str, Any]]:
        """The `session/update` params seen from index `since` of `seen`."""
        return [m["params"]["update"] for _, m in self.seen[since:] if m.get("method") == "session/update"]

    async def _send(self, message: dict[str, Any]) -> None:
        raise NotImplementedError

    async def request(self, method: str, params: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
        """The answer (the whole JSON-RPC response) to one request."""
        rid = next(self.ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.waiting[rid] = future
        await self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return await asyncio.wait_for(future, timeout)

    async def result(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = await self.request(method, params)
        assert "result" in answer, f"{method} answered {answer}"
        return answer["result"]

    async def new_session(self, cwd: str = "/tmp") -> str:
        return (await self.result("session/new", {"cwd": cwd, "mcpServers": []}))["sessionId"]

    async def prompt(self, session: str, text: str, key: str | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
        if key is not None:
            params["idempotencyKey"] = key
        return await self.request("session/prompt", params)


def initialize_params() -> dict[str, Any]:
    from acp_v2_runtime.conformance.steps import PROTOCOL_VERSION

    return {"protocolVersion": PROTOCOL_VERSION, "info": {"name": "cluster-test", "version": "0"}}


class HttpPeer(Peer):
    """One ACP connection over Streamable HTTP through `client` (an httpx.AsyncClient: its cookie jar is the
    Client's, so affinity holds only if the balancer's cookie reached it)."""

    def __init__(self, client: httpx.AsyncClient, url: str) -> None:
        super().__init__()
        self.client, self.url = client, url
        self.connection: str | None = None
        self.streams: dict[str | None, asyncio.Task[None]] = {}
        self.stream_status: dict[str | None, int] = {}
        self.initialize_answer: httpx.Response | None = None

    async def open(self) -> dict[str, Any]:
        """POST initialize, then open the connection's stream; the initialize result."""
        body = {"jsonrpc": "2.0", "id": next(self.ids), "method": "initialize", "params": initialize_params()}
        answer = await self.client.post(self.url, json=body, headers={"Accept": "application/json, text/event-stream"})
        self.initialize_answer = answer
        assert answer.status_code == 200, (answer.status_code, answer.text)
        self.connection = answer.headers[CONNECTION]
        await self.open_stream(None)
        return answer.json()["result"]

    async def open_stream(self, session: str | None) -> int:
        """Open the connection's stream (session None) or a session's; its status (200 when the node knows it)."""
        opened: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.streams[session] = asyncio.create_task(self._read(session, opened))
        status = await opened
        self.stream_status[session] = status
        return status

    async def _read(self, session: str | None, opened: asyncio.Future[int]) -> None:
        assert self.connection is not None
        headers = {"Accept": "text/event-stream", CONNECTION: self.connection}
        if session is not None:
            headers[SESSION] = session
        try:
            async with self.client.stream("GET", self.url, headers=headers, timeout=None) as stream:
                opened.set_result(stream.status_code)
                if stream.status_code != 200:
                    return
                data: list[str] = []
                async for line in stream.aiter_lines():
                    if line.startswith("data:"):
                        data.append(line[5:].removeprefix(" "))
                    elif line == "" and data:
                        self._arrived(json.loads("\n".join(data)))
                        data = []
        except httpx.HTTPError as exc:
            if not opened.done():
                opened.set_exception(exc)
        # The stream ended (cut, or the node died): an answer still awaited can no longer come on it.
        self._lost(f"the {'session' if session else 'connection'} stream ended")

    async def _send(self, message: dict[str, Any]) -> None:
        assert self.connection is not None
        headers = {CONNECTION: self.connection}
        session = message.get("params", {}).get("sessionId")
        if session is not None:
            headers[SESSION] = session
            if session not in self.streams:
                status = await self.open_stream(session)
                assert status == 200, f"the session stream was answered {status}"
        answer = await self.client.post(self.url, json=message, headers=headers)
        assert answer.status_code == 202, (answer.status_code, answer.text)

    async def close(self) -> None:
        for task in self.streams.values():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
                await task
        self.streams.clear()


class WsPeer(Peer):
    """One ACP connection over WebSocket; `cookie` is sent on the upgrade when given."""

    def __init__(self, url: str, cookie: str | None = None) -> None:
        super().__init__()
        self.url = url.replace("http", "ws", 1)
        self.cookie = cookie
        self.socket: Any = None
        self.reader: asyncio.Task[None] | None = None

    async def open(self) -> dict[str, Any]:
        headers = {"Cookie": self.cookie} if self.cookie else None
        self.socket = await websockets.connect(self.url, additional_headers=headers, max_size=None)
        self.reader = asyncio.create_task(self._read())
        return await self.result("initialize", initialize_params())

    @property
    def upgrade_headers(self) -> Any:
        return self.socket.response.headers

    async def _read(self) -> None:
        with contextlib.suppress(websockets.ConnectionClosed):
            async for frame in self.socket:
                self._arrived(json.loads(frame))
        self._lost("the socket closed")

    async def _send(self, message: dict[str, Any]) -> None:
        await self.socket.send(json.dumps(message))

    async def close(self) -> None:
        if self.socket is not None:
            await self.socket.close()
        if self.reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self.reader


def new_key() -> str:
    return f"k-{uuid.uuid4()}"


def node_of(response: httpx.Response | Any) -> str | None:
    """The node named by the affinity cookie a response sets (None when it sets none)."""
    values = response.headers.get_list("set-cookie") if hasattr(response.headers, "get_list") else []
    if not values and hasattr(response.headers, "get_all"):
        values = response.headers.get_all("Set-Cookie")
    for value in values:
        name, _, rest = value.partition("=")
        if name.strip() == COOKIE:
            return rest.split(";", 1)[0]
    return None
