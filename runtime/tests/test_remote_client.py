"""The remote Client tells the truth about each failure, and a keyed prompt survives every one of them.

Against a scripted Agent (remote_scripted_agent.py) that inserts the message first and then has the transport
fail: a POST answered 502, a session stream cut or ended before the answer, a socket closed after the prompt frame,
an answer never sent. Each is `NoResponse` (never `ErrorResponse`, whatever the 502's body says) on the connection,
and `RemoteClient` resends the prompt with its key on a new connection, so the Agent keeps one message and the
Client gets its messageId. Only the Agent's own error is an `ErrorResponse`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import pytest
from remote_scripted_agent import BAD_KEY, COOKIE, ScriptedAgent, served

from acp_v2_runtime.client import ErrorResponse, NoResponse, NotSent
from acp_v2_runtime.remote.client import RemoteClient
from acp_v2_runtime.remote.http_client import HttpConnection
from acp_v2_runtime.remote.ws_client import WebSocketConnection

TEXT = [{"type": "text", "text": "hello"}]
PATIENCE = 20.0  # a request's timeout where no timeout is meant to happen (a loaded machine is slow)
SHORT = 0.5  # a request's timeout where one is meant to happen
CONNECTIONS = {"http": HttpConnection, "websocket": WebSocketConnection}
FAULTS = [("http", "502"), ("http", "cut"), ("http", "end"), ("http", "hold"), ("websocket", "close")]
FAULTS += [("http", "swallow"), ("websocket", "swallow")]


def run(test: Any) -> Any:
    return asyncio.run(test())


async def prompt_on_one_connection(url: str, profile: str, timeout: float) -> Any:
    """initialize, session/new, then one keyed session/prompt on a bare connection; its failure propagates."""
    connection = CONNECTIONS[profile](url, timeout=timeout)
    try:
        await connection.request("initialize", {"protocolVersion": 2}, 1, timeout=PATIENCE)
        session = (await connection.request("session/new", {"cwd": "/"}, 2, timeout=PATIENCE))["sessionId"]
        return await connection.request(
            "session/prompt", {"sessionId": session, "prompt": TEXT, "idempotencyKey": "k"}, 3
        )
    finally:
        await connection.close()


@pytest.mark.parametrize(("profile", "fault"), FAULTS)
def test_a_transport_failure_after_insertion_is_no_response(profile: str, fault: str) -> None:
    agent = ScriptedAgent([fault])
    timed = fault in ("hold", "swallow")

    async def test() -> None:
        async with served(agent) as url:
            with pytest.raises(NoResponse) as failure:
                await prompt_on_one_connection(url, profile, SHORT if timed else PATIENCE)
            assert not isinstance(failure.value, ErrorResponse)
            assert ("no answer within" in str(failure.value)) == timed
            assert len(agent.inserted) == 1, "the Agent inserted the message: only the answer was lost"

    run(test)


@pytest.mark.parametrize(("profile", "fault"), FAULTS)
def test_the_client_resends_with_the_key_on_a_new_connection(profile: str, fault: str) -> None:
    agent = ScriptedAgent([fault])
    prompt_timeout = SHORT if fault in ("hold", "swallow") else PATIENCE

    async def test() -> None:
        async with (
            served(agent) as url,
            RemoteClient(
                url, profile=profile, timeout=PATIENCE, prompt_timeout=prompt_timeout, base_delay=0.01
            ) as client,
        ):
            session = (await client.new_session("/"))["sessionId"]
            answer = await client.prompt(session, TEXT)
            assert client.connections_opened == 2
            assert len(client.pending) == 0
        assert agent.attempts == 2
        assert agent.inserted == [answer["messageId"]], "one message, and the resend got its messageId"

    run(test)


@pytest.mark.parametrize("profile", CONNECTIONS)
def test_an_error_the_agent_sent_is_an_error_response_and_keeps_the_connection(profile: str) -> None:
    agent = ScriptedAgent()

    async def test() -> None:
        async with served(agent) as url, RemoteClient(url, profile=profile, timeout=PATIENCE) as client:
            session = (await client.new_session("/"))["sessionId"]
            with pytest.raises(ErrorResponse) as refused:
                await client.prompt(session, TEXT, key=BAD_KEY)
            assert refused.value.code == -32602
            assert len(client.pending) == 0
            await client.prompt(session, TEXT)
            assert client.connections_opened == 1

    run(test)


def test_a_request_queued_behind_a_hung_post_was_not_sent() -> None:
    agent = ScriptedAgent(["hold"])

    async def test() -> None:
        async with served(agent) as url:
            connection = HttpConnection(url, timeout=PATIENCE)
            try:
                await connection.request("initialize", {"protocolVersion": 2}, 1)
                session = (await connection.request("session/new", {"cwd": "/"}, 2))["sessionId"]
                params = {"sessionId": session, "prompt": TEXT}
                held = asyncio.ensure_future(connection.request("session/prompt", params, 3, timeout=PATIENCE))
                while agent.attempts == 0:
                    await asyncio.sleep(0.01)
                with pytest.raises(NotSent):
                    await connection.request("session/prompt", params, 4, timeout=SHORT)
                await connection.close()  # what a RemoteClient does with a connection whose POST hangs
                with pytest.raises(NoResponse):
                    await held
            finally:
                await connection.close()
        assert agent.attempts == 1

    run(test)


@pytest.mark.parametrize("profile", CONNECTIONS)
def test_the_affinity_cookie_goes_to_every_later_connection(profile: str) -> None:
    agent = ScriptedAgent()

    async def test() -> None:
        async with served(agent) as url, RemoteClient(url, profile=profile, timeout=PATIENCE) as client:
            session = (await client.new_session("/"))["sessionId"]
            await client.reconnect()
            await client.prompt(session, TEXT)
        assert agent.cookies[-1] == COOKIE, agent.cookies

    run(test)


@pytest.mark.parametrize("profile", CONNECTIONS)
def test_a_refused_connection_is_not_sent(profile: str) -> None:
    async def test() -> None:
        async with served(ScriptedAgent()) as url:
            pass  # the port is free again once the server has stopped
        connection = CONNECTIONS[profile](url, timeout=PATIENCE)
        with pytest.raises(NotSent):
            await connection.request("initialize", {"protocolVersion": 2}, 1)
        await connection.close()

    run(test)


class Asking:
    """An Agent on our AcpServer that, given a prompt, asks the Client session/request_permission in the prompt's
    session and answers the prompt with what the Client replied (its result, or its error) under `_meta`."""

    def __init__(self, send: Any) -> None:
        self.send = send
        self.asked: dict[Any, Any] = {}  # our request's id -> the prompt's id

    def receive(self, data: bytes) -> None:
        message = json.loads(data)
        if "method" not in message:  # the Client's reply to our request
            prompt = self.asked.pop(message["id"])
            reply = {"result": message["result"]} if "result" in message else {"error": message["error"]}
            self.send({"jsonrpc": "2.0", "id": prompt, "result": {"messageId": "msg_1", "_meta": reply}})
            return
        rid, params = message.get("id"), message.get("params") or {}
        if message["method"] == "initialize":
            self.send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": 2}})
        elif message["method"] == "session/new":
            self.send({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "sess_asking"}})
        elif message["method"] == "session/prompt":
            ask = f"ask-{rid}"
            self.asked[ask] = rid
            question = {"sessionId": params["sessionId"], "toolCall": {"toolCallId": "t1"}, "options": []}
            self.send({"jsonrpc": "2.0", "id": ask, "method": "session/request_permission", "params": question})

    async def close(self) -> None:
        return None


@pytest.mark.parametrize("profile", sorted(CONNECTIONS))
def test_the_agents_request_is_answered_by_on_request_on_its_sessions_stream(profile: str) -> None:
    """The Agent's request in a session reaches `on_request`, whose result goes back (over HTTP with the session's
    header, which our server requires); without `on_request` the Agent is told -32601."""
    from acp_v2_runtime.remote import AcpServer, serve

    chosen = {"outcome": {"outcome": "selected", "optionId": "allow"}}
    seen: list[tuple[str, Any]] = []

    async def on_request(method: str, params: Any) -> Any:
        seen.append((method, params.get("sessionId")))
        return chosen

    async def test() -> None:
        found: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        app = AcpServer(Asking)
        server = asyncio.ensure_future(serve(app, "127.0.0.1", 0, ready=found.set_result))
        url = await asyncio.wait_for(found, PATIENCE)
        try:
            for handler in (on_request, None):
                connection = CONNECTIONS[profile](url, timeout=PATIENCE, on_request=handler)
                try:
                    await connection.request("initialize", {"protocolVersion": 2}, 1)
                    session = (await connection.request("session/new", {"cwd": "/"}, 2))["sessionId"]
                    told = await connection.request("session/prompt", {"sessionId": session, "prompt": TEXT}, 3)
                finally:
                    await connection.close()
                if handler is not None:
                    assert told["_meta"] == {"result": chosen} and seen == [("session/request_permission", session)]
                else:
                    assert told["_meta"]["error"]["code"] == -32601, told
        finally:
            server.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await server
            await app.close()

    run(test)
