"""Three reference Agents on one PostgreSQL behind HAProxy (`acp_v2_runtime.cluster`), driven through the
balancer by the TypeScript SDK's own client and by plain httpx and websockets: affinity holds on both profiles, a
node killed while idle or right after an insert loses no keyed prompt (a new connection is redispatched to a live
node, the session resumed there, the same key answered with the original messageId, one user message stored),
and event-stream steps are not held back by the balancer.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from acp_v2_runtime.cluster import Cluster

from tests.cluster.wire import COOKIE, HttpPeer, WsPeer, new_key, node_of
from tests.interop.conftest import environment

CWD = "/tmp"


def user_messages(updates: list[dict[str, Any]]) -> list[str]:
    return [u["messageId"] for u in updates if u["sessionUpdate"] == "user_message"]


async def replayed_user_messages(peer: HttpPeer | WsPeer, session: str) -> list[str]:
    """The user messages the Agent replays for `session` from the start (read from the store by whichever node)."""
    since = len(peer.seen)
    await peer.result("session/resume", {"sessionId": session, "cwd": CWD, "replayFrom": {"type": "start"}})
    return user_messages(peer.updates(since))


def test_affinity_over_http(cluster: Cluster) -> None:
    """The initialize answer (200) sets the cookie naming its node; the Client's stream GET and POSTs carry it back
    and reach that node, which alone knows the connection. Without the cookie the next node answers 404."""

    async def scenario() -> tuple[str | None, int, int]:
        async with httpx.AsyncClient() as client:
            peer = HttpPeer(client, cluster.url)
            await peer.open()
            assert peer.initialize_answer is not None
            pinned = node_of(peer.initialize_answer)
            assert peer.stream_status[None] == 200
            session = await peer.new_session()
            answer = await peer.prompt(session, "affinity", new_key())
            assert "messageId" in answer["result"]
            await peer.close()
            # the same connection id from a Client that lost the cookie: the balancer sends it to the next node
            client.cookies.clear()
            stray = HttpPeer(client, cluster.url)
            stray.connection = peer.connection
            lost = await stray.open_stream(None)
            await stray.close()
            return pinned, peer.stream_status[session], lost

    pinned, session_stream, lost = asyncio.run(scenario())
    assert pinned in {node.name for node in cluster.nodes}
    assert session_stream == 200
    assert lost == 404


def test_affinity_over_websocket(cluster: Cluster) -> None:
    """The WebSocket 101 carries the cookie too (an SDK client keeps it for its next connection)."""

    async def scenario() -> tuple[str | None, dict[str, Any]]:
        peer = WsPeer(cluster.url)
        await peer.open()
        pinned = node_of(peer.socket.response)
        session = await peer.new_session()
        answer = await peer.prompt(session, "over a socket", new_key())
        await peer.close()
        return pinned, answer

    pinned, answer = asyncio.run(scenario())
    assert pinned in {node.name for node in cluster.nodes}
    assert "messageId" in answer["result"]


def cookie_node(set_cookies: list[str]) -> list[str]:
    return [v.split(";", 1)[0].split("=", 1)[1] for v in set_cookies if v.startswith(f"{COOKIE}=")]


@pytest.mark.parametrize("profile", ["http", "ws"])
def test_sdk_client_resends_through_the_balancer_after_its_node_died(
    cluster: Cluster, sdk_client: Path, profile: str, tmp_path: Path
) -> None:
    """The SDK's client, with a cookie store of its own: the affinity cookie reaches it on the first answer
    (initialize's 200, or the 101); its node is killed while idle; its next connection, cookie and all, is
    redispatched to a live node, where session/resume and the same key give the original messageId."""
    node = shutil.which("node")
    assert node is not None
    client = subprocess.Popen(
        [node, str(sdk_client), cluster.url, profile], cwd=tmp_path, env=environment(),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert client.stdin is not None and client.stdout is not None
    try:
        first = json.loads(client.stdout.readline() or "{}")
        pinned = cookie_node(first.get("cookies", []))
        assert len(pinned) == 1, first
        cluster.kill(pinned[0])
        client.stdin.write("go\n")
        client.stdin.flush()
        second = json.loads(client.stdout.readline() or "{}")
        assert client.wait(30) == 0
    finally:
        if client.poll() is None:
            client.kill()
        client.wait()
    assert second.get("messageId") == first["messageId"], (first, second, client.stderr.read())  # type: ignore[union-attr]
    assert second["replayedUserMessages"] == [first["messageId"]]
    # The second connection's first answer (initialize's 200, or the 101) moves the Client to a live node, once;
    # nothing sends it back to the dead one. (The client script waits for its first connection's DELETE before it
    # reports: a DELETE that reached the balancer after the kill was redispatched and set a cookie of its own.)
    log = cluster.balancer.log.read_text()[-3000:]
    moved = cookie_node(second["cookies"])
    assert len(moved) == 1 and moved[0] != pinned[0], (second["cookies"], log)


def test_resend_after_a_node_died_right_after_the_insert(cluster: Cluster) -> None:
    """A node that inserts a keyed prompt and dies before answering (SIGKILL by `--crash-after insert`): the Client
    sees its stream end without an answer; on a new connection (redispatched: its cookie names the dead node) the
    same key gets the messageId the dead node inserted, read from PostgreSQL, and the store holds one message."""
    victim = cluster.restart("n2", extra=["--crash-after", "insert"])

    async def scenario() -> tuple[str, list[str], str | None]:
        async with httpx.AsyncClient() as client:
            # pinned, as a Client that initialized there would be (the cookie as HAProxy's Set-Cookie stores it, so
            # that the next one replaces it)
            client.cookies.set(COOKIE, victim.name, domain=httpx.URL(cluster.url).host, path="/")
            peer = HttpPeer(client, cluster.url)
            await peer.open()
            session = await peer.new_session()
            key = new_key()
            with pytest.raises(ConnectionError):
                await peer.prompt(session, "inserted, then the node died", key)
            await peer.close()
            assert not victim.running or victim.process is None or victim.process.wait(10) is not None
            again = HttpPeer(client, cluster.url)
            await again.open()
            assert again.initialize_answer is not None
            moved = node_of(again.initialize_answer)
            await again.result("session/resume", {"sessionId": session, "cwd": CWD})
            answer = await again.prompt(session, "inserted, then the node died", key)
            replayed = await replayed_user_messages(again, session)
            await again.close()
            return answer["result"]["messageId"], replayed, moved

    message, replayed, moved = asyncio.run(scenario())
    assert replayed == [message]
    assert moved not in (None, victim.name)


def test_event_stream_steps_are_not_held_back(cluster: Cluster) -> None:
    """A keyed prompt's answer arrives on the session's event stream as fast through the balancer as straight from
    the node, give or take a loose margin (HAProxy without `option http-no-delay` adds about 200 ms to each)."""

    async def latencies(url: str, count: int) -> list[float]:
        async with httpx.AsyncClient() as client:
            peer = HttpPeer(client, url)
            await peer.open()
            session = await peer.new_session()
            found = []
            for i in range(count):
                start = time.monotonic()
                await peer.prompt(session, f"step {i}", new_key())
                found.append(time.monotonic() - start)
            await peer.close()
            return found

    async def scenario() -> tuple[float, float]:
        through, direct = [], []
        for _ in range(3):  # interleaved, so a burst of load elsewhere weighs on both alike
            through += await latencies(cluster.url, 3)
            direct += await latencies(cluster.node_url(0), 3)
        return statistics.median(through), statistics.median(direct)

    through, direct = asyncio.run(scenario())
    assert through - direct < 0.1, f"median through the balancer {through * 1000:.0f} ms, direct {direct * 1000:.0f} ms"
