"""Run an `AcpServer`, alone or mounted in an ASGI application, on uvicorn (HTTP/1.1 through httptools, WebSocket
through websockets), the server library chosen by measurement (site/remote-transport.md says how)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

from .server import AcpServer

GRACE_SECONDS = 5.0
"""How long a stopping server waits for responses under way once it has ended every ACP connection."""


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on `host`:`port` (port 0: any free port, read back with getsockname)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not left 0: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and without it
    # an answer written right after a notification waits for the peer's delayed ACK (40 ms a prompt on Linux).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


async def serve(
    app: Any,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    ready: Callable[[str], None] | None = None,
    acp: AcpServer | None = None,
) -> None:
    """Serve `app` on `host`:`port` until cancelled or stopped (SIGINT, SIGTERM); `ready(url)` once it listens.

    `app` is an `AcpServer`, or an ASGI application (Starlette, FastAPI) with the `AcpServer` `acp` mounted in it.
    Stopping ends every ACP connection first (`acp.close()`), then the rest of the application's requests; a
    cancelled `serve` ends them too."""
    import uvicorn  # the `remote` extra

    if acp is None:
        if not isinstance(app, AcpServer):
            raise TypeError("serve: pass acp=, the AcpServer mounted in this application, to end its connections")
        acp = app
    server = acp

    class Server(uvicorn.Server):  # type: ignore[misc]
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            # End every ACP connection first. uvicorn waits for open responses before the application's lifespan
            # shutdown, and an event stream or socket never ends by itself: it would hold the server for the grace.
            await server.close()
            await super().shutdown(sockets)

    sock = bind(host, port)
    config = uvicorn.Config(
        app,
        http="httptools",
        ws="websockets-sansio",
        lifespan="on",
        log_level="warning",
        server_header=False,
        ws_max_size=acp.limits.max_buffered_bytes,  # a frame the SDK's limits would take
        ws_ping_interval=None,  # the SDK's server sends no pings; a client's own pings are still answered
        timeout_graceful_shutdown=GRACE_SECONDS,
    )
    if ready is not None:
        ready(url_of(sock))
    try:
        await Server(config).serve(sockets=[sock])
    finally:
        # Cancelled rather than stopped, uvicorn skips its shutdown: the ACP connections are ended here all the same.
        await asyncio.shield(server.close())
