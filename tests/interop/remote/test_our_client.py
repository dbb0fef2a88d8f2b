"""Our RemoteClient against the TypeScript SDK's own server (`AcpServer` with its Node adapters, sdk_server.ts,
serving a keyed SDK v2 Agent) and against our reference Agent served by `--listen`, over Streamable HTTP and over
WebSocket.

Each test drives the Client through its public API and judges by what the SDK's server and Agent answer: keyed
prompts get one message each; a prompt whose answer is lost (the connection given up the moment the Agent reports
the inserted message, before its answer) is resent on a new connection after `session/resume` with its original
key and gets the original messageId, with one user message in the replay; a Client restarted from its pending
file does the same; an error only the Agent can make is an `ErrorResponse`; a refused connection is `NotSent`.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import pytest
from acp_v2_runtime.client import ErrorResponse, NotSent, OutcomeUnknown, PendingPrompts
from acp_v2_runtime.remote.client import RemoteClient
from acp_v2_schema.protocol import KnownErrorCode as Code

from tests.interop.remote.conftest import remote_ready
from tests.support import key_rules

PROFILES = ("http", "websocket")
SERVERS = {"sdk": "sdk_agent_url", "ours": "our_agent_url"}  # fixtures of tests/interop/remote/conftest.py
TIMEOUT = 20.0  # seconds a request may take on a loaded machine before the Client gives up on its connection
START = {"type": "start"}


@pytest.fixture(params=SERVERS)
def agent_url(request: pytest.FixtureRequest) -> str:
    """The endpoint of a served keyed Agent: the SDK's AcpServer (sdk_server.ts) or our reference Agent."""
    remote_ready()
    return request.getfixturevalue(SERVERS[request.param])


class Seen:
    """The session/update notifications a Client received, and a way to give up its connection at one of them."""

    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []
        self.client: RemoteClient | None = None
        self.cut_at_user_message = 0  # give up the connection when this many more user messages are reported

    def __call__(self, method: str, params: Any) -> None:
        if method != "session/update":
            return
        self.updates.append(params)
        if params["update"]["sessionUpdate"] == "user_message" and self.cut_at_user_message > 0:
            self.cut_at_user_message -= 1
            assert self.client is not None and self.client.connection is not None
            # Inserted and reported, its answer not read yet: lost, as a cut stream or socket would lose it.
            self.client.connection.abort("cut by the test after the Agent reported the inserted message")

    def user_messages(self, session_id: str) -> list[str]:
        return [
            p["update"]["messageId"]
            for p in self.updates
            if p["sessionId"] == session_id and p["update"]["sessionUpdate"] == "user_message"
        ]


def client_for(url: str, profile: str, **options: Any) -> tuple[RemoteClient, Seen]:
    seen = Seen()
    client = RemoteClient(url, profile=profile, timeout=TIMEOUT, on_notification=seen, base_delay=0.05, **options)
    seen.client = client
    return client, seen


async def replayed_user_messages(client: RemoteClient, seen: Seen, session_id: str) -> list[str]:
    """The user messages a fresh `session/resume` with replay from the start reports."""
    seen.updates.clear()
    await client.resume_session(session_id, "/", replayFrom=START)
    return seen.user_messages(session_id)


TEXT = [{"type": "text", "text": "hello"}]


@pytest.mark.parametrize("profile", PROFILES)
def test_keyed_prompts_insert_one_message_each(agent_url: str, profile: str) -> None:
    async def run() -> None:
        client, seen = client_for(agent_url, profile)
        async with client:
            session = (await client.new_session("/"))["sessionId"]
            first = await client.prompt(session, TEXT, key="key-1")
            second = await client.prompt(session, TEXT)  # a fresh key from the Resender
            again = await client.prompt(session, TEXT, key="key-1")  # a retry on the same connection
            assert first["messageId"] != second["messageId"]
            assert again == first
            assert await replayed_user_messages(client, seen, session) == [first["messageId"], second["messageId"]]
            assert len(client.pending) == 0 and client.connections_opened == 1

    asyncio.run(run())


@pytest.mark.parametrize("profile", PROFILES)
def test_a_lost_answer_is_resent_on_a_new_connection_with_its_key(agent_url: str, profile: str) -> None:
    async def run() -> None:
        client, seen = client_for(agent_url, profile)
        async with client:
            session = (await client.new_session("/"))["sessionId"]
            seen.cut_at_user_message = 1
            answer = await client.prompt(session, TEXT)
            inserted = seen.user_messages(session)
            assert len(inserted) == 1, "the first attempt was inserted before its answer was lost"
            assert answer == {"messageId": inserted[0]}, "the resend got the original messageId"
            assert client.connections_opened == 2, "the resend went on a new connection, after session/resume"
            assert await replayed_user_messages(client, seen, session) == inserted
            assert len(client.pending) == 0

    asyncio.run(run())


@pytest.mark.parametrize("profile", PROFILES)
def test_a_restarted_client_resends_its_pending_prompt(agent_url: str, profile: str, tmp_path: Path) -> None:
    store = tmp_path / "pending.json"

    async def first_process() -> tuple[str, str]:
        client, seen = client_for(agent_url, profile, pending=PendingPrompts(store), max_attempts=1)
        async with client:
            session = (await client.new_session("/"))["sessionId"]
            seen.cut_at_user_message = 1
            with pytest.raises(OutcomeUnknown):
                await client.prompt(session, TEXT)
            [inserted] = seen.user_messages(session)
            return session, inserted

    async def second_process(session: str) -> tuple[dict[str, Any], list[str]]:
        client, seen = client_for(agent_url, profile, pending=PendingPrompts(store))
        async with client:
            await client.resume_session(session, "/")
            outcomes = await client.resend_pending()
            return outcomes, await replayed_user_messages(client, seen, session)

    session, inserted = asyncio.run(first_process())
    [(key, _)] = [(p.key, p) for p in PendingPrompts(store)]
    outcomes, replay = asyncio.run(second_process(session))
    assert outcomes == {key: {"messageId": inserted}}
    assert replay == [inserted]
    assert len(PendingPrompts(store)) == 0


@pytest.mark.parametrize("profile", PROFILES)
def test_only_an_error_the_agent_sent_is_an_error_response(agent_url: str, profile: str) -> None:
    too_long = "k" * (key_rules().max_length + 1)  # type: ignore[operator]

    async def run() -> None:
        client, seen = client_for(agent_url, profile)
        async with client:
            session = (await client.new_session("/"))["sessionId"]
            with pytest.raises(ErrorResponse) as refused:
                await client.prompt(session, TEXT, key=too_long)
            assert refused.value.code == Code.INVALID_PARAMS
            assert len(client.pending) == 0, "an error the Agent sent means nothing was inserted"
            assert client.connections_opened == 1, "the Agent's error leaves the connection in use"
            assert await replayed_user_messages(client, seen, session) == []

    asyncio.run(run())


@pytest.mark.parametrize("profile", PROFILES)
def test_a_refused_connection_is_not_sent(profile: str) -> None:
    with socket.socket() as probe:  # a port nobody listens on: bound, never listening
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/acp"

        async def run() -> None:
            client = RemoteClient(url, profile=profile, timeout=TIMEOUT, max_attempts=2, base_delay=0.01)
            async with client:
                with pytest.raises(NotSent):
                    await client.prompt("sess_x", TEXT)
                assert len(client.pending) == 1, "a prompt never sent stays pending, to send later"
                assert client.connections_opened == 2

        asyncio.run(run())
