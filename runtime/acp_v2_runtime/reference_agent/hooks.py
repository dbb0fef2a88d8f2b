"""The reference Agent's test hooks, for the conformance traces only: the turns of turns.py with switches.

A prompt asks for them in its `_meta[HOOKS_KEY]` (the handshake key of the traces document): `holdInsert` keeps
the prompt before insertion and `holdWork` keeps its turn running, both until a `RELEASE` notification for the
session; `failInsert` rejects the prompt before insertion (-32603). The `initialize` result offers them, and
`storedSessions`, under the same key (`"offers": [...]`), so the conformance runner knows which traces it may run.
The command line adds two process-wide switches: `--crash-after claim` or `--crash-after insert` kills the process
with SIGKILL at that point of the first keyed prompt, and `--offers` names fewer offers than `OFFERS`.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable
from typing import Any

from acp_v2_schema.protocol import KnownErrorCode as Code

from ..conformance import handshake_key
from .bounds import RpcError
from .turns import Session, Turns

RELEASE = "_conformance/release"  # the test hook's notification (an extension method, so not in the spec)
HOOKS_KEY = handshake_key()
"""The `_meta` key of the conformance handshake and of the prompt hooks (from the traces document)."""
OFFERS = ("failInsert", "holdInsert", "holdWork", "storedSessions")
"""What this Agent offers the conformance traces beyond the protocol (names from the traces document's `needs`)."""


class HookedTurns(Turns):
    """The turns, with the prompt hooks, the release notification, the offers and `--crash-after`."""

    def __init__(self, db: str, *, lease: float, crash_after: str | None, offers: tuple[str, ...] = ()) -> None:
        self.offers = offers
        super().__init__(db, lease=lease)
        self.crash_after = crash_after

    async def initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        result = await super().initialize(params)
        # The conformance handshake: the test hooks below, and the database that outlives each process.
        result["_meta"] = {HOOKS_KEY: {"offers": list(self.offers)}}
        return result

    def insert_latch(self, params: dict[str, Any]) -> asyncio.Event | None:
        """The latch a `holdInsert` prompt waits on, or None. It is taken when the request is read, so that a
        release read later applies to it."""
        session = self.active.get(params["sessionId"])
        if prompt_hooks(params).get("holdInsert") and session is not None:
            return session.release
        return None

    def release(self, params: dict[str, Any]) -> None:
        """Act on a `RELEASE` notification: what its session holds goes on, and later holds wait for the next."""
        # An extension method, so no generated type checks it: only a string can name a session.
        sid = params.get("sessionId")
        session = self.active.get(sid) if isinstance(sid, str) else None
        if session is not None:
            session.release.set()
            session.release = asyncio.Event()

    def before_insert(
        self, params: dict[str, Any], key: Any, hold: asyncio.Event | None
    ) -> Callable[[], Awaitable[None]] | None:
        crash = key is not None and self.crash_after == "claim"
        fail = bool(prompt_hooks(params).get("failInsert"))
        if not (crash or fail or hold is not None):
            return None  # nothing to do before the insertion, which may then go with the claim
        prepared: list[bool] = []

        async def prepare() -> None:
            if prepared:
                return  # a try again after a locked database: the hooks ran already
            prepared.append(True)
            if crash:
                os.kill(os.getpid(), signal.SIGKILL)
            if fail:
                raise RpcError(Code.INTERNAL_ERROR, "Internal error: a pre-insertion hook failed")
            if hold is not None:
                await hold.wait()

        return prepare

    def after_insert(self, key: Any) -> None:
        if key is not None and self.crash_after == "insert":
            os.kill(os.getpid(), signal.SIGKILL)

    def turn_mode(self, params: dict[str, Any]) -> str:
        return "hold" if prompt_hooks(params).get("holdWork") else ""

    async def before_turn(self, session: Session, mode: str) -> None:
        if mode == "hold":
            await session.release.wait()


def prompt_hooks(params: dict[str, Any]) -> dict[str, Any]:
    """The conformance test hooks of a prompt (`_meta[HOOKS_KEY]`), or {} when there are none."""
    meta = params.get("_meta")
    hooks = meta.get(HOOKS_KEY) if isinstance(meta, dict) else None
    return hooks if isinstance(hooks, dict) else {}
