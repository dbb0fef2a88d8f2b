"""`AcpServer` mounted in a Starlette application, as site/remote-transport.md shows it: Clients reach the Agent
under the mount's path (with its trailing slash) on both profiles, a retry on a new connection finds its key, the
application's other routes still answer, and stopping the server ends every ACP connection and closes its Agent.

Two ways to stop are proven: `serve(app, acp=acp)`, which ends the ACP connections before uvicorn waits for open
responses (stopped by SIGTERM, or cancelled), and the page's lifespan under a plain uvicorn with a
graceful-shutdown timeout. Without that timeout an open event stream holds a plain uvicorn's shutdown, so the
lifespan's `acp.close()` never runs; the last test shows it, since that is why the page asks for one or the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from asyncio.subprocess import PIPE
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("websockets")
uvicorn = pytest.importorskip("uvicorn")
pytest.importorskip("starlette")

from mounted_app import application  # noqa: E402  (beside this file)
from starlette.applications import Starlette  # noqa: E402

from acp_v2_runtime.remote import RemoteClient, serve  # noqa: E402
from acp_v2_runtime.remote.serve import bind, url_of  # noqa: E402

HERE = Path(__file__).resolve().parent
WAIT = 20.0  # seconds an expected event may take on a loaded machine
PROMPT = [{"type": "text", "text": "mounted"}]


async def use(base: str, profile: str) -> None:
    """A keyed prompt on one Client, its retry on a second (another connection), the same messageId; the Clients'
    connections are left open, as a Client's would be when its server stops."""
    url = base + "acp/"
    key = f"mounted-{profile}-key-0001"
    first = RemoteClient(url, profile=profile, timeout=WAIT)  # type: ignore[arg-type]
    session = (await first.new_session("/tmp"))["sessionId"]
    answer = await first.prompt(session, PROMPT, key=key)
    second = RemoteClient(url, profile=profile, timeout=WAIT)  # type: ignore[arg-type]
    await second.resume_session(session, "/tmp")
    again = await second.prompt(session, PROMPT, key=key)
    assert again["messageId"] == answer["messageId"]
    async with httpx.AsyncClient(timeout=WAIT) as client:
        assert (await client.get(base + "health")).text == "ok"


@pytest.mark.parametrize("profile", ["http", "websocket"])
def test_a_cancelled_serve_ends_the_mounted_servers_connections(tmp_path: Path, profile: str) -> None:
    app, acp, made = application(tmp_path / "agent.db")

    async def test() -> None:
        found: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(serve(app, "127.0.0.1", 0, ready=found.set_result, acp=acp))
        await use(await asyncio.wait_for(found, WAIT), profile)
        assert made and not any(agent.closed for agent in made)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, WAIT)
        assert all(agent.closed for agent in made)

    asyncio.run(asyncio.wait_for(test(), 120))


@pytest.mark.parametrize("profile", ["http", "websocket"])
def test_serve_stopped_by_sigterm_closes_every_agent_of_the_mounted_server(tmp_path: Path, profile: str) -> None:
    """Without the page's lifespan: serve closes the Agents, and ends their connections before uvicorn waits for
    open responses; had it not, uvicorn would wait its grace for the open event stream and then cancel it (and say
    so on stderr)."""

    async def test() -> None:
        script = [sys.executable, str(HERE / "mounted_app.py"), "--db", str(tmp_path / "agent.db")]
        process = await asyncio.create_subprocess_exec(*script, stdout=PIPE, stderr=PIPE)
        assert process.stdout is not None and process.stderr is not None
        try:
            url = (await asyncio.wait_for(process.stdout.readline(), WAIT)).decode().strip()
            await use(url, profile)
            process.send_signal(signal.SIGTERM)
            said = (await asyncio.wait_for(process.stdout.read(), WAIT)).decode().split()
            logged = (await asyncio.wait_for(process.stderr.read(), WAIT)).decode()
            # uvicorn raises the signal again once it has shut down: the conventional exit of a stopped server
            assert await asyncio.wait_for(process.wait(), WAIT) in (0, -signal.SIGTERM)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert said == ["closed", "closed"], said  # the two connections' Agents
        assert "graceful shutdown exceeded" not in logged, logged

    asyncio.run(asyncio.wait_for(test(), 120))


def test_serve_needs_the_mounted_server_named() -> None:
    app, _, _ = application(Path("unused.db"))
    with pytest.raises(TypeError, match="acp="):
        asyncio.run(serve(app))


@contextlib.asynccontextmanager
async def plain_uvicorn(app: Starlette, **config: Any) -> AsyncIterator[tuple[str, Any, asyncio.Task[None]]]:
    """`app` on a plain uvicorn (its defaults, as `uvicorn module:app` runs it): its URL, server and task."""
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="critical", **config))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            assert not task.done(), "uvicorn stopped at start"
            await asyncio.sleep(0.02)
        yield url_of(sock), server, task
    finally:
        server.force_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, WAIT)


@pytest.mark.parametrize("profile", ["http", "websocket"])
def test_the_pages_lifespan_closes_the_agents_under_a_graceful_shutdown_timeout(tmp_path: Path, profile: str) -> None:
    app, _, made = application(tmp_path / "agent.db", with_lifespan=True)

    async def test() -> None:
        async with plain_uvicorn(app, timeout_graceful_shutdown=1) as (url, server, task):
            await use(url, profile)
            server.should_exit = True
            await asyncio.wait_for(asyncio.shield(task), WAIT)
        assert made and all(agent.closed for agent in made)

    asyncio.run(asyncio.wait_for(test(), 120))


def test_without_a_timeout_an_open_event_stream_holds_a_plain_uvicorn_before_the_lifespan(tmp_path: Path) -> None:
    app, _, made = application(tmp_path / "agent.db", with_lifespan=True)

    async def test() -> None:
        async with plain_uvicorn(app) as (url, server, task):
            await use(url, "http")
            server.should_exit = True
            await asyncio.sleep(2)  # a plain stop of an app with nothing open takes milliseconds
            assert not task.done() and not any(agent.closed for agent in made)

    asyncio.run(asyncio.wait_for(test(), 120))
