"""The reference Agent on ACP's remote transport: one `Agent` per connection, every one on the same database.

    python -m acp_v2_runtime.reference_agent --listen 127.0.0.1:8000 --db agent.db

The turns are the stdio Agent's own (`transport.Agent`, made with the connection's `send` callback); the key record
lives in the database, so a retry that arrives on another connection, or at another process serving the same
database, finds it. Any Agent built on the runtime is served the same way, from a factory of its own:

    from acp_v2_runtime.remote import AcpServer, serve
    app = AcpServer(lambda send: MyAgent(send=send))    # an object with receive(bytes) and async close()
    asyncio.run(serve(app, "127.0.0.1", 8000))
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from ..remote import AcpServer, AgentFactory, Limits, Send, serve
from . import bounds
from .storage import is_url, open_store
from .transport import Agent


def factory(
    db: str, *, ignore_keys: bool = False, lease: float = 30.0, crash_after: str | None = None, offers: tuple = ()
) -> AgentFactory:
    """Make each connection's Agent on the database `db` (the stdio command's flags, as keywords).

    On a database server the Agent is made in a worker thread: opening its connection may wait on the server (up to
    the store's bound), and the event loop serves every other connection meanwhile. A SQLite file opens at once, and
    its connection must stay on the loop's thread, so there it is made in place."""

    def make(send: Send) -> Agent:
        return Agent(db, ignore_keys=ignore_keys, lease=lease, crash_after=crash_after, offers=offers, send=send)

    if not is_url(db):
        return make

    async def made_off_the_loop(send: Send) -> Agent:
        return await asyncio.to_thread(make, send)

    return made_off_the_loop


async def listen(
    make: AgentFactory, host: str, port: int, *, db: str, ready: Callable[[str], None], limits: Limits | None = None
) -> None:
    """Serve `make`'s Agents on `host`:`port` until interrupted; `ready(url)` once it listens."""
    open_store(db, lease=30.0).close()  # a database that cannot be used is refused now, not at the first connection
    if is_url(db):  # as on stdio: the server's calls wait in threads, enough that a stalled server starves no other
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(bounds.STORE_THREADS, "store"))
    await serve(AcpServer(make, limits=limits), host, port, ready=ready)
