"""Wire parity with the TypeScript SDK 2.4.0's server: the same raw requests and frames, sent to the SDK's AcpServer
(its Node adapters, serving the keyed SDK Agent of sdk_server.ts) and to our reference Agent served by
`acp_v2_runtime.remote`, must get the same status codes, the headers that matter (Content-Type, whether
Acp-Connection-Id is there), the same error bodies where the transport writes them, and each answer on the same
stream. Every request the SDK's own Client makes is here, and every bad one its server refuses.

What differs on purpose is not compared, and site/remote-transport.md lists it with its reason: the plain-text
bodies' wording is compared (it is the SDK's), but not the Agents' own answers (two different Agents), the form of
a connection id (both unguessable), or framing details the server library owns (chunked or Content-Length).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.interop.remote.conftest import remote_ready

pytestmark = pytest.mark.usefixtures("ready")

httpx = pytest.importorskip("httpx")
websockets = pytest.importorskip("websockets")

JSON = {"content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": 2, "info": {"name": "parity", "version": "0"}, "capabilities": {}},
}
WAIT = 10.0
"""Seconds an answer may take to arrive on a stream (a loaded machine); a missing one is reported, not waited on."""
SDK_BODY_LIMIT = 16 * 1024 * 1024
"""The SDK's Node adapter's default maxRequestBodyBytes, which our Limits.max_request_body_bytes matches."""


@pytest.fixture
def ready() -> None:
    remote_ready()


def request(rid: Any, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def notification(method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def prompt(rid: Any, session: str, key: str | None = None) -> dict[str, Any]:
    message = request(rid, "session/prompt", sessionId=session, prompt=[{"type": "text", "text": "parity"}])
    if key is not None:
        message["params"]["idempotencyKey"] = key
    return message


def seen(response: Any) -> dict[str, Any]:
    """What is compared of an HTTP answer: its status, media type, whether it names a connection, and the body when
    the transport wrote it (plain text, or the JSON error of a batch)."""
    kind = response.headers.get("content-type", "").split(";")[0]
    shown: dict[str, Any] = {"status": response.status_code, "type": kind or None}
    shown["connection id"] = "acp-connection-id" in response.headers
    if kind == "text/plain":
        shown["body"] = response.text
    elif response.status_code == 400 and kind == "application/json":
        shown["body"] = response.json()
    return shown


class Endpoint:
    """One server's endpoint, with the raw requests the tests send it."""

    def __init__(self, url: str, client: Any) -> None:
        self.url, self.http = url, client

    async def post(self, body: Any, headers: dict[str, str] | None = None, raw: bytes | None = None) -> Any:
        content = raw if raw is not None else json.dumps(body).encode()
        return await self.http.post(self.url, content=content, headers={**JSON, **(headers or {})})

    async def connect(self) -> str:
        answer = await self.post(INITIALIZE)
        assert answer.status_code == 200, answer.text
        return str(answer.headers["acp-connection-id"])

    async def new_session(self, connection: str) -> tuple[str, Streams]:
        """A session on `connection`, with the connection's stream open (as the SDK's Client opens it)."""
        streams = Streams(self, connection)
        await streams.open("connection")
        await self.post(request("new", "session/new", cwd="/tmp", mcpServers=[]), {"acp-connection-id": connection})
        answer = await streams.answer("new")
        return answer[1]["result"]["sessionId"], streams


class Streams:
    """A connection's event streams as a Client reads them: every message, tagged with the stream it came on."""

    def __init__(self, endpoint: Endpoint, connection: str) -> None:
        self.endpoint, self.connection = endpoint, connection
        self.arrived: list[tuple[str, dict[str, Any]]] = []
        self.changed = asyncio.Event()
        self.tasks: list[asyncio.Task[None]] = []

    async def open(self, name: str, session: str | None = None) -> int:
        """Open a stream (`name` tags its messages); returns the GET's status once its headers came."""
        headers = {"accept": "text/event-stream", "acp-connection-id": self.connection}
        if session is not None:
            headers["acp-session-id"] = session
        status: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        async def read() -> None:
            try:
                async with self.endpoint.http.stream("GET", self.endpoint.url, headers=headers) as response:
                    status.set_result(response.status_code)
                    async for line in response.aiter_lines():
                        if line.startswith("data:"):
                            self.arrived.append((name, json.loads(line[5:])))
                            self.changed.set()
            except Exception as exc:  # a stream cut when the connection ends: the answers so far are kept
                if not status.done():
                    status.set_exception(exc)

        self.tasks.append(asyncio.get_running_loop().create_task(read()))
        return await asyncio.wait_for(status, WAIT)

    async def answer(self, rid: Any, timeout: float = WAIT) -> tuple[str, dict[str, Any]]:
        """The stream the answer to request `rid` came on, with the answer (("none", {}) when none came)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            for name, message in self.arrived:
                if message.get("id") == rid and "method" not in message:
                    return name, message
            left = deadline - loop.time()
            if left <= 0:
                return "none", {}
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), left)

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


# -- the cases: each returns what it saw, and must see the same on both servers --------------------------------------


async def initialize_creates_a_connection(e: Endpoint) -> Any:
    answer = await e.post(INITIALIZE)
    body = answer.json()
    return {**seen(answer), "answers initialize": body.get("id") == 0 and "result" in body}


async def initialize_twice_on_a_connection(e: Endpoint) -> Any:
    return seen(await e.post(INITIALIZE, {"acp-connection-id": await e.connect()}))


async def initialize_without_an_id(e: Endpoint) -> Any:
    return seen(await e.post({**INITIALIZE, "id": None}))


async def not_json_content_type(e: Endpoint) -> Any:
    return [
        seen(await e.post(INITIALIZE, {"content-type": "text/plain"})),
        seen(await e.http.post(e.url, content=json.dumps(INITIALIZE).encode())),
        seen(await e.post(INITIALIZE, {"content-type": "application/json; charset=utf-8"})),
    ]


async def bad_json(e: Endpoint) -> Any:
    return [seen(await e.post(None, raw=raw)) for raw in (b"{", b"", b"NaN", b'{"a": Infinity}')]


async def a_batch(e: Endpoint) -> Any:
    return [seen(await e.post([INITIALIZE])), seen(await e.post([]))]


async def not_an_object(e: Endpoint) -> Any:
    return [seen(await e.post(value)) for value in (5, "initialize", None, True)]


async def connection_id_missing_or_unknown(e: Endpoint) -> Any:
    new = request(1, "session/new", cwd="/tmp", mcpServers=[])
    return [seen(await e.post(new)), seen(await e.post(new, {"acp-connection-id": "no-such-connection"}))]


async def session_id_missing_or_mismatched(e: Endpoint) -> Any:
    connection = await e.connect()
    session, streams = await e.new_session(connection)
    try:
        headers = {"acp-connection-id": connection}
        return [
            seen(await e.post(prompt(2, session), headers)),
            seen(await e.post(prompt(3, session), {**headers, "acp-session-id": session + "x"})),
            # a session method whose params name no session still needs the header
            seen(await e.post(request(4, "session/close"), headers)),
            seen(await e.post(notification("session/cancel", sessionId=session), headers)),
        ]
    finally:
        await streams.close()


async def answers_go_where_the_request_came(e: Endpoint) -> Any:
    """The SDK Client's own traffic: session/new on the connection's stream, the session's requests on its stream,
    session/list (no session) on the connection's, a keyed prompt and its retry each answered once, on the
    session's stream, and its updates there too."""
    connection = await e.connect()
    session, streams = await e.new_session(connection)
    try:
        status = await streams.open("session", session)
        headers = {"acp-connection-id": connection}
        scoped = {**headers, "acp-session-id": session}
        posts = [
            (await e.post(prompt("p1", session, "parity-key"), scoped)).status_code,
            (await e.post(prompt("p2", session, "parity-key"), scoped)).status_code,
            (await e.post(request("l1", "session/list"), headers)).status_code,
            (await e.post(request("l2", "session/list"), scoped)).status_code,  # the header alone routes it
        ]
        where = {rid: (await streams.answer(rid))[0] for rid in ("new", "p1", "p2", "l1", "l2")}
        same = (await streams.answer("p1"))[1]["result"] == (await streams.answer("p2"))[1]["result"]
        updates = {name for name, m in streams.arrived if m.get("method") == "session/update"}
        return {"session GET": status, "POSTs": posts, "answered on": where, "retry same": same, "updates": updates}
    finally:
        await streams.close()


async def a_response_and_a_notification(e: Endpoint) -> Any:
    connection = await e.connect()
    session, streams = await e.new_session(connection)
    try:
        headers = {"acp-connection-id": connection, "acp-session-id": session}
        cancel = notification("session/cancel", sessionId=session)
        answer = {"jsonrpc": "2.0", "id": 99, "result": {}}
        return [seen(await e.post(cancel, headers)), seen(await e.post(answer, {"acp-connection-id": connection}))]
    finally:
        await streams.close()


async def event_stream_refusals(e: Endpoint) -> Any:
    connection = await e.connect()
    session, streams = await e.new_session(connection)
    try:
        base = {"accept": "text/event-stream"}
        got = [
            seen(await e.http.get(e.url, headers={"acp-connection-id": connection})),  # no Accept
            seen(await e.http.get(e.url, headers=base)),
            seen(await e.http.get(e.url, headers={**base, "acp-connection-id": "no-such-connection"})),
            seen(await e.http.get(e.url, headers={**base, "acp-connection-id": connection})),  # a second reader
            await streams.open("session", session),
            seen(await e.http.get(e.url, headers={**base, "acp-connection-id": connection, "acp-session-id": session})),
        ]
        return got
    finally:
        await streams.close()


async def delete_ends_the_connection(e: Endpoint) -> Any:
    connection = await e.connect()
    _session, streams = await e.new_session(connection)
    try:
        headers = {"acp-connection-id": connection}
        return [
            seen(await e.http.delete(e.url)),
            seen(await e.http.delete(e.url, headers=headers)),
            seen(await e.http.delete(e.url, headers=headers)),
            seen(await e.post(request(5, "session/list"), headers)),
            seen(await e.http.get(e.url, headers={**headers, "accept": "text/event-stream"})),
        ]
    finally:
        await streams.close()


async def other_methods(e: Endpoint) -> Any:
    return [seen(await e.http.put(e.url, content=b"{}", headers=JSON)), seen(await e.http.patch(e.url))]


async def ids_over_the_limit(e: Endpoint) -> Any:
    connection = await e.connect()
    _session, streams = await e.new_session(connection)
    try:
        headers = {"acp-connection-id": connection}
        long = "x" * 1025
        return [
            seen(await e.post(request(long, "session/list"), headers)),
            seen(await e.post(request("x" * 1024, "session/list"), headers)),  # at the limit: accepted
            seen(await e.post(prompt(6, long), {**headers, "acp-session-id": long})),
            seen(await e.http.get(e.url, headers={**headers, "accept": "text/event-stream", "acp-session-id": long})),
        ]
    finally:
        await streams.close()


async def a_body_over_the_limit(e: Endpoint) -> Any:
    padding = b" " * (SDK_BODY_LIMIT - len(json.dumps(INITIALIZE)) + 1)
    return seen(await e.post(None, raw=json.dumps(INITIALIZE).encode() + padding))


async def websocket_session(e: Endpoint) -> Any:
    """The SDK's WebSocket Client: the 101 names the connection; bad frames get one error each and the socket stays;
    initialize, a second initialize, session/new and a keyed prompt and its retry, all answered on the socket."""
    async with websockets.connect(e.url.replace("http", "ws", 1)) as ws:
        named = "acp-connection-id" in ws.response.headers
        errors = []
        for frame in ("{", "[1]", "7", "null", json.dumps({"foo": 1})):
            await ws.send(frame)
            errors.append(json.loads(await asyncio.wait_for(ws.recv(), WAIT)))
        await ws.send(json.dumps({"id": 1, "result": {}}))  # a response before initialize: dropped, never answered
        await ws.send(json.dumps(INITIALIZE))
        init = json.loads(await asyncio.wait_for(ws.recv(), WAIT))
        await ws.send(json.dumps({**INITIALIZE, "id": 1}))
        again = json.loads(await asyncio.wait_for(ws.recv(), WAIT))
        await ws.send(b"\x00binary frames are ignored")
        await ws.send(json.dumps(request("new", "session/new", cwd="/tmp", mcpServers=[])))
        messages = [json.loads(await asyncio.wait_for(ws.recv(), WAIT))]
        session = messages[0]["result"]["sessionId"]
        await ws.send(json.dumps(prompt("p1", session, "ws-key")))
        await ws.send(json.dumps(prompt("p2", session, "ws-key")))
        answers: dict[str, Any] = {}
        while len(answers) < 2:
            message = json.loads(await asyncio.wait_for(ws.recv(), WAIT))
            if "id" in message:
                answers[message["id"]] = message["result"]
        return {
            "101 names the connection": named,
            "errors": errors,
            "initialize answered": init.get("id") == 0 and "result" in init,
            "second initialize": again,
            "retry same": answers["p1"] == answers["p2"],
        }


async def closed_with(e: Endpoint, frames: list[Any]) -> Any:
    async with websockets.connect(e.url.replace("http", "ws", 1)) as ws:
        for frame in frames:
            await ws.send(frame if isinstance(frame, str) else json.dumps(frame))
        try:
            while True:
                await asyncio.wait_for(ws.recv(), WAIT)
        except websockets.ConnectionClosed as closed:
            return closed.rcvd.code if closed.rcvd else None


async def websocket_first_frame_not_initialize(e: Endpoint) -> Any:
    return [
        await closed_with(e, [request(1, "session/new", cwd="/tmp", mcpServers=[])]),
        await closed_with(e, [{"jsonrpc": "2.0", "method": "initialize", "params": {}}]),
        await closed_with(e, [{**INITIALIZE, "id": None}]),
    ]


async def websocket_id_over_the_limit(e: Endpoint) -> Any:
    return await closed_with(e, [INITIALIZE, request("x" * 1025, "session/list")])


CASES: list[Callable[[Endpoint], Awaitable[Any]]] = [
    initialize_creates_a_connection,
    initialize_twice_on_a_connection,
    initialize_without_an_id,
    not_json_content_type,
    bad_json,
    a_batch,
    not_an_object,
    connection_id_missing_or_unknown,
    session_id_missing_or_mismatched,
    answers_go_where_the_request_came,
    a_response_and_a_notification,
    event_stream_refusals,
    delete_ends_the_connection,
    other_methods,
    ids_over_the_limit,
    a_body_over_the_limit,
    websocket_session,
    websocket_first_frame_not_initialize,
    websocket_id_over_the_limit,
]


async def observe(url: str, case: Callable[[Endpoint], Awaitable[Any]]) -> Any:
    async with httpx.AsyncClient(timeout=WAIT) as client:
        return await case(Endpoint(url, client))


@pytest.mark.parametrize("case", CASES, ids=[case.__name__ for case in CASES])
def test_the_same_answer_as_the_sdk_server(
    case: Callable[[Endpoint], Awaitable[Any]], sdk_agent_url: str, our_agent_url: str
) -> None:
    theirs = asyncio.run(observe(sdk_agent_url, case))
    ours = asyncio.run(observe(our_agent_url, case))
    print(f"\nPARITY {case.__name__}: {json.dumps(theirs, default=sorted)}")
    assert ours == theirs
