"""The reference Agent mounted at /acp in a Starlette application beside a route of its own (/health), as
site/remote-transport.md shows it; each connection's Agent notes when it is closed.

As a script it serves that application with `serve(app, acp=acp)` on a free port, prints its URL and then
"closed" once for each Agent closed, until SIGTERM (test_remote_mounted.py stops it so)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from acp_v2_runtime.reference_agent.remote import factory
from acp_v2_runtime.remote import AcpServer, serve
from acp_v2_runtime.remote.connections import Send


class Recorded:
    """The reference Agent of one connection, noting when it is closed."""

    def __init__(self, inner: Any, say: bool) -> None:
        self.inner, self.say, self.closed = inner, say, False

    def receive(self, data: bytes) -> None:
        self.inner.receive(data)

    async def close(self) -> None:
        self.closed = True
        await self.inner.close()
        if self.say:
            print("closed", flush=True)


def application(
    db: Path, *, with_lifespan: bool = False, say: bool = False
) -> tuple[Starlette, AcpServer, list[Recorded]]:
    """The Starlette app, the AcpServer mounted in it, and every Agent it has made; `with_lifespan`: the page's
    lifespan, which ends the ACP connections when the application shuts down."""
    made: list[Recorded] = []
    make = factory(str(db))

    def recording(send: Send) -> Recorded:
        made.append(Recorded(make(send), say))
        return made[-1]

    acp = AcpServer(recording)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await acp.close()

    async def health(request: Any) -> PlainTextResponse:
        return PlainTextResponse("ok")

    routes = [Route("/health", health), Mount("/acp", app=acp)]
    return Starlette(routes=routes, lifespan=lifespan if with_lifespan else None), acp, made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--db", required=True)
    args = parser.parse_args()
    app, acp, _ = application(Path(args.db), say=True)
    asyncio.run(serve(app, "127.0.0.1", 0, ready=lambda url: print(url, flush=True), acp=acp))


if __name__ == "__main__":
    main()
