"""Killing the node a prompt reached, for the KILLS faults: the proxy names the node by the request's cookies and
the caller's `Killer` (the kit's cluster) does the killing, off the proxy's event loop."""

from __future__ import annotations

import asyncio
import time

from .faults import Armed, Killer


async def kill_node(killer: Killer | None, armed: Armed, cookies: str) -> None:
    """Kills the node `cookies` name and records which, and when, on `armed`."""
    if killer is None:
        return
    armed.killed = await asyncio.to_thread(killer, cookies)
    armed.killed_at = time.monotonic()
