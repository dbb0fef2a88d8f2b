"""Planted bugs of the key's own rules (the parameter, how an Agent handles it, its scope), for planted_agent.py.

Each function patches the reference Agent so that it breaks exactly one rule of the idempotency-keys proposal, in
this process only; `KEY_BUGS` says which rule, and `CAUGHT_BY` which trace and which history invariant fail it.
The reference Agent's own modules are never edited: the patches wrap its ledger's `submit`, its dispatch table
(`HANDLERS`, looked up on every request) or the line it reads.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import unicodedata
import uuid
from collections.abc import Callable
from typing import Any

from acp_v2_schema import protocol as M
from acp_v2_schema.protocol import KnownErrorCode as Code
from acp_v2_schema.reader import KEY_PARAMS
from acp_v2_schema.retry import IDEMPOTENCY_KEY_MAX_LENGTH, is_valid_idempotency_key

from acp_v2_runtime import reference_agent as ref
from acp_v2_runtime.idempotency import KeyLedger
from acp_v2_runtime.idempotency.inflight import Submitted
from acp_v2_runtime.idempotency.keys import InvalidKey, KeyReused, key_digest
from acp_v2_runtime.idempotency.sql import TABLE

KEY = KEY_PARAMS[M.SESSION_PROMPT]

KEY_BUGS = {
    "case-insensitive-keys": "keys are compared without regard to case",
    "trimmed-keys": "white space around a key is ignored",
    "normalised-keys": "keys are compared after Unicode normalisation (NFC)",
    "null-is-a-key": "a null key is taken as a key of its own, so prompts sent with null are deduplicated",
    "content-dedup": "a prompt whose text is already a user message of the session is answered with that message",
    "session-blind-keys": "keys are not scoped to their session: the same key in another session is a retry",
    "reuse-inserts": "a key is recorded with its prompt, so a reused key with another prompt inserts again",
    "reuse-forgets": "after refusing a reused key with -32602, the Agent deletes the key's record",
    "record-at-arrival": "a key is recorded when the request arrives, so a retry after an error gets a messageId"
    " that was never inserted",
    "leak-replay": "replayed user messages carry their key in _meta",
    "leak-list": "session/list results carry the last key this process saw in _meta",
    "malformed-as-omitted": "a malformed key is dropped and the prompt handled as if it had none",
    "utf16-length": "a key's length is counted in UTF-16 code units: a key of the maximum length in emoji is refused",
    "retry-rerun": "a retry of a message this process answered before starts its work again",
    "pending-retry-error": "a retry of a prompt still pending on this process is answered -32603 at once",
}

CAUGHT_BY = {
    "case-insensitive-keys": ("distinct-keys", "distinct-submissions"),
    "trimmed-keys": ("distinct-keys", "distinct-submissions"),
    "normalised-keys": ("distinct-keys", "distinct-submissions"),
    "null-is-a-key": ("distinct-keys", "distinct-submissions"),
    "content-dedup": ("same-text-new-key", "distinct-submissions"),
    "session-blind-keys": ("same-key-other-session", "success-names-stored"),
    "reuse-inserts": ("key-reuse-different-prompt", "reuse-never-inserts"),
    "reuse-forgets": ("key-reuse-different-prompt", None),  # a retry after a refused reuse is drawn too rarely
    "record-at-arrival": ("retry-after-error", "success-names-stored"),
    "leak-replay": ("keys-stay-private", "protocol"),
    "leak-list": ("keys-stay-private", "protocol"),
    "malformed-as-omitted": ("malformed-keys", "malformed-refused"),
    "utf16-length": ("malformed-keys", None),
    "retry-rerun": ("retry-same-connection", "no-second-round"),
    "pending-retry-error": ("retry-while-pending", None),  # an error beside a success breaks no invariant
}
"""Per bug: the trace that fails it, and the history invariant that does within the default budget (None: the
schedules draw no such key, or draw the case too rarely to count on)."""


def _keys_as(change: Callable[[str], str]) -> Callable[[], None]:
    """A planting that makes the ledger file every valid key under `change(key)`."""

    def plant() -> None:
        original = KeyLedger.submit

        async def submit(self: Any, session_id: str, key: object, *args: Any, **kwargs: Any) -> Submitted:
            if isinstance(key, str) and is_valid_idempotency_key(key) and is_valid_idempotency_key(change(key)):
                key = change(key)
            return await original(self, session_id, key, *args, **kwargs)

        KeyLedger.submit = submit  # type: ignore[method-assign]

    return plant


def _wrap_prompt(before: Any = None, after: Any = None) -> None:
    """Wrap the prompt handler: `before(agent, params)` may answer in its place (a result) or change the params;
    `after(agent, params, result)` sees the answer."""
    original = ref.HANDLERS[M.SESSION_PROMPT]

    async def session_prompt(self: Any, params: dict[str, Any], rid: Any, hold: Any) -> dict[str, Any]:
        if before is not None:
            got = await before(self, params)
            if isinstance(got, tuple):
                return got[0]
            params = got
        result = await original(self, params, rid, hold)
        if after is not None:
            await after(self, params, result)
        return result

    ref.HANDLERS[M.SESSION_PROMPT] = session_prompt


def _null_is_a_key() -> None:
    async def before(agent: Any, params: dict[str, Any]) -> Any:
        return {**params, KEY: "null"} if KEY in params and params[KEY] is None else params

    _wrap_prompt(before)


def _content_dedup() -> None:
    async def before(agent: Any, params: dict[str, Any]) -> Any:
        sql = "SELECT message_id, content FROM ref_messages WHERE session_id = ? AND role = 'user'"
        rows = await agent.stored(lambda: agent._read(sql, (params["sessionId"],)))
        for message_id, content in rows:
            if json.loads(content) == params["prompt"]:
                return ({"messageId": message_id},)
        return params

    _wrap_prompt(before)


def _session_blind_keys() -> None:
    original = KeyLedger.submit

    async def submit(self: Any, session_id: str, key: object, *args: Any, **kwargs: Any) -> Submitted:
        # One ledger slot per key for every session; the message is still written to the prompt's own session.
        return await original(self, "sess_all" if key is not None else session_id, key, *args, **kwargs)

    KeyLedger.submit = submit  # type: ignore[method-assign]


def _reuse_inserts() -> None:
    original = KeyLedger.submit

    async def submit(self: Any, session_id: str, key: object, *args: Any, **kwargs: Any) -> Submitted:
        if isinstance(key, str) and is_valid_idempotency_key(key):
            text = json.dumps(kwargs.get("prompt"), sort_keys=True)
            key = hashlib.sha256(f"{key}\n{text}".encode("utf-8", "surrogatepass")).hexdigest()
        return await original(self, session_id, key, *args, **kwargs)

    KeyLedger.submit = submit  # type: ignore[method-assign]


def _reuse_forgets() -> None:
    original = KeyLedger.submit

    async def submit(self: Any, session_id: str, key: object, *args: Any, **kwargs: Any) -> Submitted:
        try:
            return await original(self, session_id, key, *args, **kwargs)
        except KeyReused:
            # The key's row is deleted from the shared store: any Agent then takes a retry of the first prompt
            # for a new submission.
            assert isinstance(key, str)
            where = f"WHERE session_id = {self.store.PH} AND key_digest = {self.store.PH}"
            with self.store.transaction() as conn:
                conn.execute(f"DELETE FROM {TABLE} {where}", (session_id, bytes.fromhex(key_digest(key))))
            raise

    KeyLedger.submit = submit  # type: ignore[method-assign]


def _record_at_arrival() -> None:
    original = KeyLedger.submit

    async def submit(self: Any, session_id: str, key: object, *args: Any, **kwargs: Any) -> Submitted:
        try:
            return await original(self, session_id, key, *args, **kwargs)
        except (InvalidKey, KeyReused):
            raise
        except Exception:
            if isinstance(key, str):  # the record the request made on arrival stays, with the messageId it chose
                ph = self.store.PH
                row = (session_id, bytes.fromhex(key_digest(key)), f"msg_{uuid.uuid4().hex}")
                with self.store.transaction() as conn:
                    conn.execute(f"DELETE FROM {TABLE} WHERE session_id = {ph} AND key_digest = {ph}", row[:2])
                    conn.execute(
                        f"INSERT INTO {TABLE} (session_id, key_digest, state, message_id)"
                        f" VALUES ({ph}, {ph}, 'recorded', {ph})",
                        row,
                    )
            raise

    KeyLedger.submit = submit  # type: ignore[method-assign]


def _leak_replay() -> None:
    table = "CREATE TABLE IF NOT EXISTS planted_keys (message_id TEXT, idem TEXT)"

    async def after(agent: Any, params: dict[str, Any], result: dict[str, Any]) -> None:
        if isinstance(params.get(KEY), str):
            row = (result["messageId"], params[KEY])
            await agent.stored(lambda: agent._write(table, ()))
            await agent.stored(lambda: agent._write("INSERT INTO planted_keys VALUES (?, ?)", row))

    _wrap_prompt(after=after)
    original_resume, original_notify = ref.HANDLERS[M.SESSION_RESUME], ref.Agent.notify_update

    async def session_resume(self: Any, params: dict[str, Any]) -> dict[str, Any]:
        await self.stored(lambda: self._write(table, ()))
        rows = await self.stored(lambda: self._read("SELECT message_id, idem FROM planted_keys"))
        self.__dict__["leaks"] = dict(rows)
        return await original_resume(self, params)

    def notify_update(self: Any, session_id: str, update: dict[str, Any]) -> None:
        leaked = self.__dict__.get("leaks", {}).get(update.get("messageId"))
        if update.get("sessionUpdate") == "user_message" and leaked is not None:
            update = {**update, "_meta": {"planted": leaked}}
        original_notify(self, session_id, update)

    ref.HANDLERS[M.SESSION_RESUME] = session_resume
    ref.Agent.notify_update = notify_update  # type: ignore[method-assign]


def _leak_list() -> None:
    async def after(agent: Any, params: dict[str, Any], result: dict[str, Any]) -> None:
        if isinstance(params.get(KEY), str):
            agent.__dict__["last_key"] = params[KEY]

    _wrap_prompt(after=after)
    original = ref.HANDLERS[M.SESSION_LIST]

    async def session_list(self: Any, params: dict[str, Any]) -> dict[str, Any]:
        result = await original(self, params)
        last = self.__dict__.get("last_key")
        if last is not None:
            result = {**result, "sessions": [{**s, "_meta": {"planted": last}} for s in result["sessions"]]}
        return result

    ref.HANDLERS[M.SESSION_LIST] = session_list


def _receive_prompt(change: Callable[[Any, dict[str, Any]], bool]) -> None:
    """Patch the line reader: `change(agent, message)` may edit a session/prompt request, or answer it (True)."""
    original = ref.Agent.receive

    def receive(self: Any, line: Any) -> None:
        if isinstance(line, bytes):
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            if isinstance(message, dict) and message.get("method") == M.SESSION_PROMPT:
                params = message.get("params")
                if isinstance(params, dict) and KEY in params:
                    if change(self, message):
                        return
                    line = json.dumps(message).encode()
        original(self, line)

    ref.Agent.receive = receive  # type: ignore[method-assign]


def _malformed_as_omitted() -> None:
    def change(agent: Any, message: dict[str, Any]) -> bool:
        key = message["params"][KEY]
        if key is not None and not is_valid_idempotency_key(key):
            del message["params"][KEY]
        return False

    _receive_prompt(change)


def _utf16_length() -> None:
    def change(agent: Any, message: dict[str, Any]) -> bool:
        key = message["params"][KEY]
        if isinstance(key, str) and len(key.encode("utf-16-le", "surrogatepass")) // 2 > IDEMPOTENCY_KEY_MAX_LENGTH:
            agent.fail(message.get("id"), Code.INVALID_PARAMS, f"Invalid params: {KEY} is too long")
            return True
        return False

    _receive_prompt(change)


def _retry_rerun() -> None:
    async def after(agent: Any, params: dict[str, Any], result: dict[str, Any]) -> None:
        seen = agent.__dict__.setdefault("answered", set())
        if result["messageId"] in seen:
            session = agent.open(params["sessionId"])
            session.queue.put_nowait("")
            if session.worker is None or session.worker.done():
                session.worker = asyncio.get_running_loop().create_task(agent.work(session))
        seen.add(result["messageId"])

    _wrap_prompt(after=after)


def _pending_retry_error() -> None:
    original = KeyLedger.submit

    async def submit(self: Any, session_id: str, key: object, *args: Any, **kwargs: Any) -> Submitted:
        valid = isinstance(key, str) and is_valid_idempotency_key(key)
        if valid and (session_id, self._row_key(key)) in self._pending:  # "still in progress", where it should wait
            raise RuntimeError("the prompt is still in progress")
        return await original(self, session_id, key, *args, **kwargs)

    KeyLedger.submit = submit  # type: ignore[method-assign]


KEY_PLANT: dict[str, Callable[[], None]] = {
    "case-insensitive-keys": _keys_as(str.lower),
    "trimmed-keys": _keys_as(str.strip),
    "normalised-keys": _keys_as(lambda key: unicodedata.normalize("NFC", key)),
    "null-is-a-key": _null_is_a_key,
    "content-dedup": _content_dedup,
    "session-blind-keys": _session_blind_keys,
    "reuse-inserts": _reuse_inserts,
    "reuse-forgets": _reuse_forgets,
    "record-at-arrival": _record_at_arrival,
    "leak-replay": _leak_replay,
    "leak-list": _leak_list,
    "malformed-as-omitted": _malformed_as_omitted,
    "utf16-length": _utf16_length,
    "retry-rerun": _retry_rerun,
    "pending-retry-error": _pending_retry_error,
}
