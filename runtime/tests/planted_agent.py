"""The reference Agent with one planted bug, to prove that the history check catches each broken rule.

    python planted_agent.py [--bug NAME] [--store-wait SECONDS] -- REFERENCE AGENT ARGS...

Each bug breaks one promise of the key and nothing else (`BUGS` says which; the bugs of the key's own rules, with
the checks that catch them, are in planted_keys.py); without `--bug` the Agent is the reference Agent itself.
`--store-wait` shortens the reference Agent's store bounds (its SQLite lock wait and its server wait), so that a
history's stalls can be short and a test quick: the code that keeps the bounds is the reference Agent's own, only
the number changes.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import sys
import uuid
from typing import Any

from acp_v2_schema import protocol as M
from acp_v2_schema.protocol import KnownErrorCode as Code
from planted_keys import KEY_BUGS, KEY_PLANT  # beside this file: on the path when it runs as a script

from acp_v2_runtime import reference_agent as ref
from acp_v2_runtime.idempotency import KeyLedger
from acp_v2_runtime.idempotency.ledger import Submitted
from acp_v2_runtime.idempotency.postgres import PostgresStore
from acp_v2_runtime.idempotency.sql import SqlStore
from acp_v2_runtime.idempotency.sqlite import SQLiteStore
from acp_v2_runtime.reference_agent import bounds

BUGS = {
    **KEY_BUGS,
    "local-cancel": "a cancel withdraws the key on this Agent only: other Agents never hear of it",
    "cancel-then-insert": "a cancelled keyed prompt is answered -32800 at once, and its insertion goes on",
    "failover-insert": "each Agent process keeps its own keys, so a retry on another Agent inserts again",
    "stall-silence": "store calls wait as long as the store takes: a stalled store means no answer",
    "restart-rerun": "resuming a session runs the work of its last message again",
    "new-message-id": "a retry of a recorded key is answered with a new messageId",
}


def _local_cancel() -> None:
    def withdraw(self: Any, session_id: str, digest: str, owner: str) -> Any:
        from acp_v2_runtime.idempotency.store import ClaimResult

        return ClaimResult("withdrawn", None, None, 0)  # nothing reaches the store

    SqlStore.withdraw = withdraw  # type: ignore[method-assign]


def _cancel_then_insert() -> None:
    original_send, original_notification = ref.Agent.send, ref.Agent.on_notification

    def on_notification(self: Any, method: str, raw: Any) -> None:
        rid = raw.get("requestId") if isinstance(raw, dict) else None
        if method == M.CANCEL_REQUEST and rid in self.keyed_ids:
            told = self.__dict__.setdefault("told", set())
            if rid not in told:  # one answer per request, however often it is cancelled
                told.add(rid)
                cancelled = {"code": Code.REQUEST_CANCELLED, "message": "Request cancelled"}
                original_send(self, {"id": rid, "error": cancelled})
            return  # and the prompt goes on
        original_notification(self, method, raw)

    def send(self: Any, message: dict[str, Any]) -> None:
        if "method" not in message and message.get("id") in self.__dict__.get("told", ()):
            return  # its answer was given already
        original_send(self, message)

    ref.Agent.on_notification = on_notification  # type: ignore[method-assign]
    ref.Agent.send = send  # type: ignore[method-assign]


def _failover_insert() -> None:
    mine = str(os.getpid())
    for cls in (SQLiteStore, PostgresStore, SqlStore):
        for name in ("claim", "claim_record", "record", "release", "withdraw", "renew", "lookup"):
            method = cls.__dict__.get(name)
            if method is None:
                continue

            def private(self: Any, session_id: str, digest: str, *rest: Any, _method: Any = method) -> Any:
                return _method(self, session_id, hashlib.sha256((digest + mine).encode()).hexdigest(), *rest)

            setattr(cls, name, private)


def _stall_silence() -> None:
    bounds.LOCK_WAIT_SECONDS = bounds.STORE_WAIT_SECONDS = 1e6
    bounds.FINISH_SECONDS = 2e6


def _restart_rerun() -> None:
    original = ref.Agent.session_resume

    async def session_resume(self: Any, params: dict[str, Any]) -> dict[str, Any]:
        result = await original(self, params)
        sql = "SELECT count(*) FROM ref_messages WHERE session_id = ? AND role = 'user'"
        (count,) = (await self.stored(lambda: self._read(sql, (params["sessionId"],))))[0]
        if count:
            session = self.open(params["sessionId"])
            session.queue.put_nowait("")
            if session.worker is None or session.worker.done():
                session.worker = asyncio.get_running_loop().create_task(self.work(session))
        return result

    ref.HANDLERS[M.SESSION_RESUME] = session_resume  # the Agent dispatches through this table


def _new_message_id() -> None:
    original = KeyLedger.submit

    async def submit(self: Any, *args: Any, **kwargs: Any) -> Submitted:
        got = await original(self, *args, **kwargs)
        return got if got.inserted else Submitted(f"msg_{uuid.uuid4().hex}", False)

    KeyLedger.submit = submit  # type: ignore[method-assign]


PLANT = {
    **KEY_PLANT,
    "local-cancel": _local_cancel,
    "cancel-then-insert": _cancel_then_insert,
    "failover-insert": _failover_insert,
    "stall-silence": _stall_silence,
    "restart-rerun": _restart_rerun,
    "new-message-id": _new_message_id,
}


def main(argv: list[str]) -> int:
    bug, wait = None, None
    while argv and argv[0] != "--":
        flag, value, *argv = argv
        if flag == "--bug":
            bug = value
        elif flag == "--store-wait":
            wait = float(value)
        else:
            raise SystemExit(f"planted_agent: unknown flag {flag}")
    if wait is not None:
        bounds.LOCK_WAIT_SECONDS, bounds.STORE_WAIT_SECONDS, bounds.FINISH_SECONDS = wait, wait, 2 * wait
    if bug is not None:
        PLANT[bug]()
    return ref.main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
