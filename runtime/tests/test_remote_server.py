"""The remote transport's server (acp_v2_runtime.remote): its limits, the isolation of its connections, and the
reference Agent served on it (keys never streamed, a retry on another connection answered from the store).

Each test serves an `AcpServer` in this process on a free port (uvicorn) and speaks raw HTTP, SSE and WebSocket to
it with httpx and websockets; a small scripted Agent makes the output the limits are about. Parity of every status
code with the SDK's own server is tests/interop/remote/test_parity.py's concern.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
websockets = pytest.importorskip("websockets")
pytest.importorskip("uvicorn")

from acp_v2_runtime.reference_agent import HOOKS_KEY  # noqa: E402
from acp_v2_runtime.reference_agent.remote import factory  # noqa: E402
from acp_v2_runtime.remote import AcpServer, Limits, serve  # noqa: E402
from acp_v2_runtime.remote.connections import Send  # noqa: E402

JSON = {"content-type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": 2, "info": {"name": "test", "version": "0"}, "capabilities": {}},
}
WAIT = 10.0  # seconds an expected event may take on a loaded machine


class Scripted:
    """An Agent that answers `initialize` and `echo`, and on `emit` sends `count` notifications of `size`
    characters for `sessionId` (or the connection, without one) before it answers."""

    def __init__(self, send: Send) -> None:
        self.send = send
        self.closed = False
        self.ids: list[Any] = []  # the id of every request that reached this Agent

    def receive(self, data: bytes) -> None:
        message = json.loads(data)
        self.ids.append(message.get("id"))
        if "method" not in message or "id" not in message:
            return
        params = message.get("params") or {}
        if message["method"] == "emit":
            for n in range(params["count"]):
                body: dict[str, Any] = {"n": n, "pad": "x" * params["size"]}
                if "sessionId" in params:
                    body["sessionId"] = params["sessionId"]
                self.send({"jsonrpc": "2.0", "method": "note", "params": body})
        self.send({"jsonrpc": "2.0", "id": message["id"], "result": {"echo": message["method"]}})

    async def close(self) -> None:
        self.closed = True


@contextlib.asynccontextmanager
async def served(app: AcpServer) -> AsyncIterator[str]:
    found: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    task = asyncio.get_running_loop().create_task(serve(app, "127.0.0.1", 0, ready=found.set_result))
    try:
        yield await asyncio.wait_for(found, WAIT)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await app.close()


def run(test: Callable[[], Any]) -> None:
    asyncio.run(asyncio.wait_for(test(), 120))


def call(rid: Any, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


async def connect(client: Any, url: str) -> str:
    answer = await client.post(url, json=INITIALIZE)
    assert answer.status_code == 200
    return str(answer.headers["acp-connection-id"])


async def read_stream(client: Any, url: str, headers: dict[str, str], into: list[str], opened: asyncio.Event) -> None:
    """Every `data:` line of one event stream, as sent (the raw text), until it ends or is cancelled."""
    async with client.stream("GET", url, headers={"accept": "text/event-stream", **headers}) as response:
        assert response.status_code == 200
        opened.set()
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                into.append(line[5:].strip())


EMIT = call("big", "emit", count=5, size=1000)
"""5 kB of notifications onto a connection's stream: more than the tests' max_buffered_bytes (4000)."""


async def filled(client: Any, url: str) -> dict[str, str]:
    """A new connection whose stream holds EMIT with no reader yet; the headers that name it."""
    headers = {"acp-connection-id": await connect(client, url)}
    assert (await client.post(url, json=EMIT, headers=headers)).status_code == 202
    return headers


async def until(check: Callable[[], bool], timeout: float = WAIT) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.02)


def recorded() -> tuple[list[Scripted], Callable[[Send], Scripted]]:
    """A factory of Scripted Agents, and the list of every Agent it made, in order."""
    agents: list[Scripted] = []

    def make(send: Send) -> Scripted:
        agents.append(Scripted(send))
        return agents[-1]

    return agents, make


def test_limits_must_be_positive() -> None:
    assert Limits().max_buffered_bytes == 64 * 1024 * 1024
    assert (Limits().max_output_stall_seconds, Limits().max_buffered_session_streams) == (60.0, 1024)
    assert Limits().max_id_length == 1024
    for bad in ({"max_id_length": 0}, {"max_buffered_bytes": -1}, {"max_output_stall_seconds": float("nan")}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            Limits(**bad)  # type: ignore[arg-type]


def test_an_http_connection_whose_client_went_quiet_is_ended_as_a_delete_would_end_it() -> None:
    """No stream open and no POST for max_idle_seconds: the connection ends and its Agent is closed. A stream kept
    open keeps it, however long nothing is sent; a POST restarts the clock; the stream's end starts it again."""

    async def test() -> None:
        agents, make = recorded()
        app = AcpServer(make, limits=Limits(max_idle_seconds=0.6))
        async with served(app) as url, httpx.AsyncClient(timeout=WAIT) as client:
            quiet, kept = await connect(client, url), await connect(client, url)
            texts: list[str] = []
            opened = asyncio.Event()
            reader = asyncio.create_task(read_stream(client, url, {"acp-connection-id": kept}, texts, opened))
            await asyncio.wait_for(opened.wait(), WAIT)
            await until(lambda: quiet not in app.registry.connections and agents[0].closed)
            assert not agents[1].closed
            gone = await client.post(url, json=call("late", "echo"), headers={"acp-connection-id": quiet})
            assert gone.status_code == 404
            await asyncio.sleep(1.5)  # well past the limit: the open stream keeps its connection
            answer = await client.post(url, json=call("still", "echo"), headers={"acp-connection-id": kept})
            assert answer.status_code == 202
            await until(lambda: any('"still"' in text for text in texts))
            reader.cancel()
            await until(lambda: kept not in app.registry.connections and agents[1].closed)

    run(test)
    assert Limits().max_idle_seconds == 60.0 and Limits(max_idle_seconds=float("inf")).max_idle_seconds
    for bad in (0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="max_idle_seconds"):
            Limits(max_idle_seconds=bad)


def test_an_agent_waiting_on_a_frozen_database_server_holds_up_no_other_connection() -> None:
    """The reference Agent on PostgreSQL is made off the event loop: while a new connection's Agent waits to open
    its database connection on a frozen server, an open connection's requests are still taken and answered."""
    from pg_cluster import shared_cluster

    cluster = shared_cluster()

    async def test() -> None:
        app = AcpServer(factory(cluster.url()))
        async with served(app) as url, httpx.AsyncClient(timeout=WAIT) as client:
            first = await connect(client, url)
            headers = {"acp-connection-id": first}
            texts: list[str] = []
            opened = asyncio.Event()
            reader = asyncio.create_task(read_stream(client, url, headers, texts, opened))
            await asyncio.wait_for(opened.wait(), WAIT)
            cluster.freeze()
            try:
                second = asyncio.create_task(client.post(url, json=INITIALIZE))
                await asyncio.sleep(0.5)  # its Agent is opening a connection to the frozen server
                asked = await client.post(url, json=call("asked", "no/such_method"), headers=headers)
                assert asked.status_code == 202
                await until(lambda: any('"asked"' in text for text in texts))
                assert not second.done(), "the new connection's Agent was made on the event loop"
            finally:
                cluster.thaw()
            assert (await second).status_code in (200, 500)  # 500 when the server stayed frozen past the bound
            reader.cancel()

    run(test)


def test_connections_never_see_each_others_output() -> None:
    """Two connections with a session of the same name: each stream carries only its own connection's messages,
    and a connection id is long, random and needed for everything."""

    async def test() -> None:
        app = AcpServer(Scripted)
        async with served(app) as url, httpx.AsyncClient(timeout=WAIT) as client:
            first, second = await connect(client, url), await connect(client, url)
            assert first != second and len(first) >= 32
            got: dict[str, list[str]] = {first: [], second: []}
            readers = []
            for connection in (first, second):
                opened = asyncio.Event()
                headers = {"acp-connection-id": connection, "acp-session-id": "shared-name"}
                readers.append(asyncio.create_task(read_stream(client, url, headers, got[connection], opened)))
                await asyncio.wait_for(opened.wait(), WAIT)
            for n, connection in enumerate((first, second)):
                headers = {"acp-connection-id": connection, "acp-session-id": "shared-name"}
                emit = call(f"from-{n}", "emit", sessionId="shared-name", count=3, size=n + 1)
                assert (await client.post(url, json=emit, headers=headers)).status_code == 202
            await until(lambda: all(len(texts) == 4 for texts in got.values()))
            for n, connection in enumerate((first, second)):
                messages = [json.loads(text) for text in got[connection]]
                assert {m["params"]["pad"] for m in messages if "method" in m} == {"x" * (n + 1)}
                assert [m["id"] for m in messages if "id" in m] == [f"from-{n}"]
            for reader in readers:
                reader.cancel()

    run(test)


def test_a_full_connection_holds_requests_until_read_and_closes_when_nobody_reads() -> None:
    """At max_buffered_bytes a request waits before it reaches the Agent; a reader taking the output lets it go
    on; a connection whose output nobody takes for max_output_stall_seconds is closed (its POSTs then 404)."""

    async def test() -> None:
        app = AcpServer(Scripted, limits=Limits(max_buffered_bytes=4000, max_output_stall_seconds=1.0))
        async with served(app) as url, httpx.AsyncClient(timeout=WAIT) as client:
            headers = await filled(client, url)
            waiting = asyncio.create_task(client.post(url, json=call("next", "echo"), headers=headers))
            await asyncio.sleep(0.3)
            assert not waiting.done()  # held: the Agent has not seen it
            texts: list[str] = []
            opened = asyncio.Event()
            reader = asyncio.create_task(read_stream(client, url, headers, texts, opened))
            assert (await asyncio.wait_for(waiting, WAIT)).status_code == 202
            await until(lambda: any('"next"' in text for text in texts))
            reader.cancel()

            # Nobody reads this one: after the stall limit the connection is gone.
            stalled = await connect(client, url)
            headers = {"acp-connection-id": stalled}
            assert (await client.post(url, json=EMIT, headers=headers)).status_code == 202
            held = await asyncio.wait_for(client.post(url, json=call("late", "echo"), headers=headers), WAIT)
            assert held.status_code == 404
            assert (await client.post(url, json=call("after", "echo"), headers=headers)).status_code == 404

    run(test)


def test_a_request_whose_client_left_while_it_waited_for_room_never_reaches_the_agent() -> None:
    """At max_buffered_bytes a request waits; if its client goes away meanwhile (the server answers 499 to nobody),
    the request is dropped: once a reader makes room, it is not handed to the Agent, and later requests are."""

    async def test() -> None:
        agents, make = recorded()
        app = AcpServer(make, limits=Limits(max_buffered_bytes=4000, max_output_stall_seconds=30.0))
        async with served(app) as url, httpx.AsyncClient(timeout=WAIT) as client:
            headers = await filled(client, url)
            async with httpx.AsyncClient(timeout=WAIT) as leaving:
                waiting = asyncio.create_task(leaving.post(url, json=call("left", "echo"), headers=headers))
                await asyncio.sleep(0.3)
                assert not waiting.done()  # held: the Agent has not seen it
                waiting.cancel()  # the client gives up and its connection closes
                with contextlib.suppress(asyncio.CancelledError):
                    await waiting
            texts: list[str] = []
            opened = asyncio.Event()
            reader = asyncio.create_task(read_stream(client, url, headers, texts, opened))
            await until(lambda: any('"big"' in text for text in texts))
            assert (await client.post(url, json=call("after", "echo"), headers=headers)).status_code == 202
            await until(lambda: any('"after"' in text for text in texts))
            reader.cancel()
            assert "left" not in agents[0].ids and "after" in agents[0].ids

    run(test)


def test_session_streams_nobody_reads_are_bounded() -> None:
    async def test() -> None:
        app = AcpServer(Scripted, limits=Limits(max_buffered_session_streams=2))
        async with served(app) as url, httpx.AsyncClient(timeout=WAIT) as client:
            connection = await connect(client, url)
            headers = {"acp-connection-id": connection}
            for n in range(2):
                emit = call(n, "emit", sessionId=f"s{n}", count=1, size=1)
                answer = await client.post(url, json=emit, headers={**headers, "acp-session-id": f"s{n}"})
                assert answer.status_code == 202
            assert (await client.post(url, json=call("ok", "echo"), headers=headers)).status_code == 202
            emit = call(3, "emit", sessionId="s3", count=1, size=1)  # a third stream with no reader: too many
            await client.post(url, json=emit, headers={**headers, "acp-session-id": "s3"})
            await until(lambda: not app.registry.connections)
            assert (await client.post(url, json=call("gone", "echo"), headers=headers)).status_code == 404

    run(test)


def test_a_websocket_that_sends_too_much_while_one_frame_waits_is_closed() -> None:
    async def test() -> None:
        app = AcpServer(Scripted, limits=Limits(max_buffered_bytes=64 * 1024))
        async with served(app) as url, websockets.connect(url.replace("http", "ws", 1), max_size=None) as ws:
            await ws.send(json.dumps(INITIALIZE))
            await ws.recv()
            # Frames arriving while earlier ones wait: past the limit the socket is closed with 1008.
            for n in range(200):
                try:
                    await ws.send(json.dumps(call(n, "emit", count=1, size=4000)))
                except websockets.ConnectionClosed:
                    break
            with pytest.raises(websockets.ConnectionClosed) as closed:
                while True:
                    await asyncio.wait_for(ws.recv(), WAIT)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008

    run(test)


def test_an_agent_that_fails_initialize_or_cannot_be_made_is_answered_500() -> None:
    class Silent(Scripted):
        def receive(self, data: bytes) -> None:
            self.send({"jsonrpc": "2.0", "method": "note", "params": {}})  # not the answer to initialize

    def broken(send: Send) -> Scripted:
        raise OSError("the database is gone")

    async def test() -> None:
        for make in (Silent, broken):
            async with served(AcpServer(make)) as url, httpx.AsyncClient(timeout=WAIT) as client:
                answer = await client.post(url, json=INITIALIZE)
                assert answer.status_code == 500 and "acp-connection-id" not in answer.headers
                assert answer.json()["error"]["code"] == -32603

    run(test)


def test_the_reference_agent_never_streams_a_key_and_a_retry_elsewhere_finds_it(tmp_path: Path) -> None:
    """Served remotely, the reference Agent keeps its promise: a keyed prompt, its retry on a second connection
    (HTTP) after session/resume with replay, and a third attempt over WebSocket all get one messageId, one user
    message is replayed, and no key appears in anything streamed."""
    key = "remote-key-never-streamed-0001"

    async def test() -> None:
        app = AcpServer(factory(str(tmp_path / "agent.db")))
        texts: list[str] = []
        async with served(app) as url, httpx.AsyncClient(timeout=WAIT) as client:
            first = await connect(client, url)
            opened = asyncio.Event()
            base = asyncio.create_task(read_stream(client, url, {"acp-connection-id": first}, texts, opened))
            await asyncio.wait_for(opened.wait(), WAIT)
            await client.post(url, json=call("new", "session/new", cwd="/tmp"), headers={"acp-connection-id": first})
            await until(lambda: any('"new"' in text for text in texts))
            session = next(json.loads(t)["result"]["sessionId"] for t in texts if '"new"' in t)
            prompt = call("p1", "session/prompt", sessionId=session, prompt=[{"type": "text", "text": "hi"}])
            prompt["params"]["idempotencyKey"] = key
            prompt["params"]["_meta"] = {HOOKS_KEY: {}}
            ids = []
            for connection, rid in ((first, "p1"), (await connect(client, url), "p2")):
                headers = {"acp-connection-id": connection, "acp-session-id": session}
                opened = asyncio.Event()
                reader = asyncio.create_task(read_stream(client, url, headers, texts, opened))
                await asyncio.wait_for(opened.wait(), WAIT)
                if rid == "p2":
                    resume = call("r", "session/resume", sessionId=session, cwd="/tmp", replayFrom={"type": "start"})
                    assert (await client.post(url, json=resume, headers=headers)).status_code == 202
                    await until(lambda: any('"id":"r"' in text for text in texts))
                assert (await client.post(url, json={**prompt, "id": rid}, headers=headers)).status_code == 202
                await until(lambda rid=rid: any(f'"id":"{rid}"' in text for text in texts))
                answer = next(json.loads(t) for t in texts if f'"id":"{rid}"' in t)
                assert "result" in answer, answer
                ids.append(answer["result"]["messageId"])
                reader.cancel()
            base.cancel()
            async with websockets.connect(url.replace("http", "ws", 1)) as ws:
                await ws.send(json.dumps(INITIALIZE))
                texts.append(await ws.recv())
                await ws.send(
                    json.dumps(call("r", "session/resume", sessionId=session, cwd="/tmp", replayFrom={"type": "start"}))
                )
                while '"id":"r"' not in (text := await asyncio.wait_for(ws.recv(), WAIT)):
                    texts.append(text)
                await ws.send(json.dumps({**prompt, "id": "p3"}))
                while '"id":"p3"' not in (text := await asyncio.wait_for(ws.recv(), WAIT)):
                    texts.append(text)
                texts.append(text)
                ids.append(json.loads(text)["result"]["messageId"])
        assert len(set(ids)) == 1
        replayed = [t for t in texts if '"user_message"' in t]
        assert {json.loads(t)["params"]["update"]["messageId"] for t in replayed} == {ids[0]}
        assert not [text for text in texts if key in text]

    run(test)
