"""The key ledger: what an Agent calls for every keyed `session/prompt`.

    attempt ──► submit ──► claim ─┬─ recorded ──────────────────────────────► the original messageId
                                  ├─ busy (another process) ── poll ─► claim again
                                  └─ claimed ── prepare ── record(write) ───► the new messageId
                                                   │ error: release, the key stays unused
                                                   └ cancel: release, every attempt gets -32800

When the Agent has no pre-insertion work (no `prepare`), claim and record happen in one store transaction
(`claim_record`), which costs little more than the insert itself.

Within one ledger (one process), every attempt with the same (session, key) joins the first one and gets the
same outcome: the same messageId, the same error, or -32800 when any of them is cancelled before insertion.
Across processes the store decides: one claim wins and the others wait for its record; a claim whose owner
died runs out under its lease and the next attempt takes it over.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .keys import (
    Cancelled,
    Fingerprint,
    KeyReused,
    checked_key,
    checked_key_digest,
    derive_message_id,
    fingerprints_differ,
    prompt_fingerprint,
    validate_session_id,
)
from .store import INSERTED, ClaimResult, LedgerStore, Write

T = TypeVar("T")
Prepare = Callable[[], Awaitable[None]]
"""Pre-insertion work (hooks, waiting for a turn). Cancellable until it returns; an exception releases the key."""


@dataclass
class _Pending:
    future: asyncio.Future[str]
    fingerprint: Fingerprint | str | None  # what this process compares a store's row with
    stored: object  # what the store is given to keep: the prompt itself, or its digest (see KeyLedger._stored)
    attempts: set[Hashable] = field(default_factory=set)
    task: asyncio.Task[str] | None = None
    inserting: bool = False


class KeyLedger:
    """Records idempotency keys for sessions on top of a store (memory, SQLite or PostgreSQL).

    `derive_message_ids=True` makes each messageId a UUID v5 of (sessionId, key), for runtimes that keep their own
    message ids; otherwise `new_message_id` makes them (a random UUID by default). Calls to a blocking store (SQLite,
    PostgreSQL) run in a worker thread; `threaded=False` runs them on the event loop instead, for an application
    whose other writes to the same database already do. The ledger's `repr`, its errors and its logs never contain
    a key.
    """

    def __init__(
        self,
        store: LedgerStore,
        *,
        derive_message_ids: bool = False,
        new_message_id: Callable[[], str] | None = None,
        poll_seconds: float = 0.01,
        max_poll_seconds: float = 0.1,
        owner: str | None = None,
        threaded: bool | None = None,
    ) -> None:
        self.store = store
        self.derive_message_ids = derive_message_ids
        self._new_message_id = new_message_id or (lambda: f"msg_{uuid.uuid4().hex}")
        self._poll = poll_seconds
        self._max_poll = max_poll_seconds
        self.owner = owner or uuid.uuid4().hex  # who holds our claims: one id per ledger, so per process
        self._pending: dict[tuple[str, str], _Pending] = {}
        self._by_attempt: dict[Hashable, tuple[str, str]] = {}
        # Blocking stores run in a worker thread unless the caller says its loop may wait for them (`threaded`).
        self._threaded = getattr(store, "blocking", True) if threaded is None else threaded
        self._claim_record: Callable[..., ClaimResult] | None = getattr(store, "claim_record", None)
        # A store that keeps prompts as they are (`lazy_fingerprints`) gets the prompt itself and gives it back when a
        # retry compares; the others get, and give back, its digest.
        self._lazy = getattr(store, "lazy_fingerprints", False)
        self._inline_claim_record = None if self._threaded else self._claim_record
        # What a store files a key's row under: its SHA-256 digest, or, in a store whose rows never leave this process
        # (`keeps_keys`, as the memory store), the checked key itself, which spares the digest on every keyed prompt.
        self._row_key = checked_key if getattr(store, "keeps_keys", False) else checked_key_digest

    def __repr__(self) -> str:
        return f"KeyLedger({self.store!r}, {len(self._pending)} pending)"

    async def submit(
        self,
        session_id: str,
        key: object,
        attempt: Hashable,
        *,
        prompt: object = None,
        prepare: Prepare | None = None,
        write: Write | None = None,
    ) -> str:
        """Handle one attempt of a prompt and return the messageId that answers it.

        `attempt` names this request uniquely (e.g. (connection, JSON-RPC id)) so that `cancel` can find it;
        `prompt`, when given, lets a reused key with a different prompt be rejected (-32602); `write` inserts the
        message inside the store's transaction. Raises InvalidKey, KeyReused, Cancelled, or what `prepare` or
        `write` raised. A session id that no store could keep the same way raises InvalidSessionId before any
        store is called.

        A key that is None (omitted or null) means a prompt without a key: `prepare` runs, then `write` inserts the
        message under a new messageId in a store transaction of its own, with no key bookkeeping. Such an attempt
        is withdrawn by cancelling the task that awaits it (`cancel` knows only keyed attempts).
        """
        session_id = validate_session_id(session_id)  # before any store sees it: odd ids get our own error
        digest = self._row_key(key)  # the key's check and what its row is filed under, in one step
        if digest is None:
            return await self._unkeyed(prepare, write)
        checked: str = key  # type: ignore[assignment]  # a valid key, or self._row_key would have raised
        pending = self._pending.get((session_id, digest)) if self._pending else None
        if pending is None:
            fast = self._inline_claim_record
            if fast is not None and prepare is None:
                # Nothing to wait for before the insertion and a store that answers at once: no other attempt
                # can arrive and no cancel can land before the store has answered, so nothing is registered.
                if self.derive_message_ids:
                    message_id = derive_message_id(session_id, checked)
                else:
                    message_id = self._new_message_id()
                stored = prompt if self._lazy or prompt is None else prompt_fingerprint(prompt)
                claim = fast(session_id, digest, message_id, stored, write)
                if claim is INSERTED or claim.state == "claimed":
                    return message_id
                fingerprint = self._fingerprint(prompt, stored)
                if claim.state == "recorded":
                    if self._differ(fingerprint, claim.fingerprint):
                        raise KeyReused
                    assert claim.message_id is not None
                    return claim.message_id
                # busy: another owner holds a claim, so take the general path (no second one-step try)
                pending, call = self._start(
                    (session_id, digest), fingerprint, stored, checked, None, write, one_step=False
                )
            else:
                stored = self._stored(prompt)
                fingerprint = self._fingerprint(prompt, stored)
                pending, call = self._start((session_id, digest), fingerprint, stored, checked, prepare, write)
            if call is not None:
                # This attempt waits on the store call itself, as an unkeyed prompt does, rather than on a task
                # that waits on it: the same turns of the event loop. The call's own callback, which runs first,
                # settles the outcome for every attempt.
                with contextlib.suppress(Exception):  # an error is in pending.future too
                    await asyncio.shield(call)
                if pending.future.done():
                    return pending.future.result()
        elif self._differ(pending.fingerprint, self._stored(prompt)):
            raise KeyReused
        slot = (session_id, digest)
        pending.attempts.add(attempt)
        self._by_attempt[attempt] = slot
        try:
            return await asyncio.shield(pending.future)
        finally:
            pending.attempts.discard(attempt)
            self._by_attempt.pop(attempt, None)

    def _start(
        self,
        slot: tuple[str, str],
        fingerprint: Fingerprint | str | None,
        stored: object,
        key: str,
        prepare: Prepare | None,
        write: Write | None,
        *,
        one_step: bool = True,
    ) -> tuple[_Pending, asyncio.Future[ClaimResult] | None]:
        """Register the first attempt of a key in this process and set its insertion going: either a task, or a
        store call in a worker thread (returned) whose callback settles the outcome."""
        loop = asyncio.get_running_loop()
        pending = _Pending(loop.create_future(), fingerprint, stored)
        self._pending[slot] = pending
        derived = derive_message_id(slot[0], key) if self.derive_message_ids else None
        fast = self._claim_record
        if prepare is None and fast is not None and self._threaded and one_step:
            # Claim and record in one store call, in a worker thread. Its answer is read by a callback rather than
            # by a task of its own: that saves the task's turns of the event loop on every keyed prompt. Once the
            # call is made the message may be in, so the prompt can no longer be withdrawn.
            pending.inserting = True
            message_id = derived or self._new_message_id()
            call = loop.run_in_executor(None, fast, slot[0], slot[1], message_id, stored, write)
            call.add_done_callback(lambda done: self._claimed(done, slot, pending, message_id, derived, write))
            return pending, call
        pending.task = loop.create_task(self._drive(slot, pending, derived, prepare, write, one_step=one_step))
        return pending, None

    def _claimed(
        self,
        call: asyncio.Future[ClaimResult],
        slot: tuple[str, str],
        pending: _Pending,
        message_id: str,
        derived: str | None,
        write: Write | None,
    ) -> None:
        """Answer the attempts of a key from the threaded `claim_record` call that `_start` made."""
        try:
            claim = call.result()
        except BaseException as exc:  # the store or `write` failed: every attempt gets the error, the key is unused
            self._settle(slot, pending, error=exc)
            return
        if claim is INSERTED or claim.state == "claimed":
            self._settle(slot, pending, message_id)
        elif claim.state == "recorded":
            if self._differ(pending.fingerprint, claim.fingerprint):
                self._settle(slot, pending, error=KeyReused())
            else:
                self._settle(slot, pending, claim.message_id)
        else:  # busy: another owner holds a claim, so take the general path (which can be withdrawn again)
            pending.inserting = False
            loop = asyncio.get_running_loop()
            pending.task = loop.create_task(self._drive(slot, pending, derived, None, write, one_step=False))

    def _settle(
        self,
        slot: tuple[str, str],
        pending: _Pending,
        message_id: str | None = None,
        error: BaseException | None = None,
    ) -> None:
        self._pending.pop(slot, None)
        if error is not None:
            pending.future.set_exception(error)
            pending.future.exception()  # nobody may be waiting any more: mark the outcome as seen
        else:
            pending.future.set_result(message_id or "")

    def _stored(self, prompt: object) -> object:
        """What the store keeps of a prompt: the prompt itself in a store that keeps prompts, else its digest."""
        return prompt if self._lazy or prompt is None else prompt_fingerprint(prompt)

    def _fingerprint(self, prompt: object, stored: object) -> Fingerprint | str | None:
        """What this process compares rows with: the prompt's digest, worked out at most once."""
        if stored is None:
            return None
        return Fingerprint(prompt) if self._lazy else stored  # type: ignore[return-value]  # a digest here

    def _differ(self, mine: Fingerprint | str | None, theirs: object) -> bool:
        """Whether a row (or another attempt) was made with a different prompt; `theirs` is what the store gave back."""
        if self._lazy and theirs is not None:
            theirs = Fingerprint(theirs)
        return fingerprints_differ(mine, theirs)  # type: ignore[arg-type]  # a digest or a Fingerprint by now

    async def _unkeyed(self, prepare: Prepare | None, write: Write | None) -> str:
        if prepare is not None:
            await prepare()
        message_id = self._new_message_id()
        if write is not None:
            await self._call(self.store.insert, message_id, write, final=True)
        return message_id

    def cancel(self, attempt: Hashable) -> bool:
        """Withdraw the prompt that `attempt` waits on, if it is not inserted yet (every attempt gets -32800)."""
        slot = self._by_attempt.get(attempt)
        return self._cancel_slot(slot) if slot is not None else False

    def cancel_session(self, session_id: str) -> int:
        """Withdraw every pending keyed prompt of a session that is not inserted yet; returns how many."""
        return sum(self._cancel_slot(slot) for slot in list(self._pending) if slot[0] == session_id)

    def pending_count(self, session_id: str | None = None) -> int:
        """How many keys have attempts in flight (in this process)."""
        return sum(1 for slot in self._pending if session_id is None or slot[0] == session_id)

    async def lookup(self, session_id: str, key: str) -> str | None:
        """The messageId recorded for a key, or None. Raises InvalidSessionId or InvalidKey as `submit` does."""
        session_id = validate_session_id(session_id)
        digest = self._row_key(key)
        if digest is None:
            return None  # no key, so nothing can be recorded under it
        return await self._call(self.store.lookup, session_id, digest)

    def _cancel_slot(self, slot: tuple[str, str]) -> bool:
        pending = self._pending.get(slot)
        if pending is None or pending.inserting or pending.task is None or pending.task.done():
            return False
        pending.task.cancel()
        return True

    async def _drive(
        self,
        slot: tuple[str, str],
        pending: _Pending,
        derived: str | None,
        prepare: Prepare | None,
        write: Write | None,
        *,
        one_step: bool = True,
    ) -> str:
        try:
            message_id = await self._run(slot, pending, derived, prepare, write, one_step)
        except asyncio.CancelledError:
            pending.future.set_exception(Cancelled())
            raise
        except BaseException as exc:
            pending.future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return ""
        else:
            pending.future.set_result(message_id)
            return message_id
        finally:
            self._pending.pop(slot, None)
            # Nobody may be waiting any more (every attempt was answered); mark the outcome as seen.
            if pending.future.done() and not pending.future.cancelled():
                pending.future.exception()

    async def _run(
        self,
        slot: tuple[str, str],
        pending: _Pending,
        derived: str | None,
        prepare: Prepare | None,
        write: Write | None,
        one_step: bool,
    ) -> str:
        session_id, digest = slot
        fast = self._claim_record
        if prepare is None and fast is not None and one_step:
            # Nothing happens between arrival and insertion, so claim and record are one transaction.
            pending.inserting = True
            message_id = derived or self._new_message_id()
            claim = await self._call(fast, session_id, digest, message_id, pending.stored, write, final=True)
            if claim.state == "claimed":
                return message_id
            if claim.state == "recorded":
                if self._differ(pending.fingerprint, claim.fingerprint):
                    raise KeyReused
                assert claim.message_id is not None
                return claim.message_id
            pending.inserting = False  # busy: another owner holds a claim, so take the general path
        delay = self._poll
        while True:
            try:
                claim = await self._call(self.store.claim, session_id, digest, self.owner, pending.stored)
            except asyncio.CancelledError:
                # The claim may have gone through just as the prompt was withdrawn: give it back.
                await self._call(self.store.release, session_id, digest, self.owner)
                raise
            different = self._differ(pending.fingerprint, claim.fingerprint)
            if claim.state == "recorded":
                if different:
                    raise KeyReused
                assert claim.message_id is not None
                return claim.message_id
            if claim.state == "busy":
                if different:
                    raise KeyReused
                await asyncio.sleep(delay)  # another process holds the key: wait for its record or its lease
                delay = min(delay * 2, self._max_poll)
                continue
            result = await self._insert(slot, pending, derived, prepare, write)
            if result is not None:
                return result
            delay = self._poll  # our lease ran out and another owner took the key over: wait for it

    async def _insert(
        self,
        slot: tuple[str, str],
        pending: _Pending,
        derived: str | None,
        prepare: Prepare | None,
        write: Write | None,
    ) -> str | None:
        session_id, digest = slot
        heartbeat = asyncio.get_running_loop().create_task(self._heartbeat(session_id, digest))
        recorded = False
        try:
            if prepare is not None:
                await prepare()
            pending.inserting = True  # from here on, cancelling no longer withdraws the prompt
            message_id = derived or self._new_message_id()
            result = await self._call(self.store.record, session_id, digest, self.owner, message_id, write, final=True)
            recorded = True
            return result.message_id
        finally:
            heartbeat.cancel()
            if not recorded:
                pending.inserting = False
                await self._call(self.store.release, session_id, digest, self.owner)

    async def _heartbeat(self, session_id: str, digest: str) -> None:
        period = max(self.store.lease_seconds / 3, 0.01)
        while True:
            await asyncio.sleep(period)
            if not await self._call(self.store.renew, session_id, digest, self.owner):
                return

    async def _call(self, function: Callable[..., T], *args: Any, final: bool = False) -> T:
        """Run a store call; blocking stores run in a worker thread, and a cancel waits for that call to end.

        `final` marks the call that may insert the message: a cancel that arrives during it is dropped, because
        once the message may be in, the attempts must get its messageId, never -32800.
        """
        if not self._threaded:
            return function(*args)
        future = asyncio.get_running_loop().run_in_executor(None, function, *args)
        cancelled = False
        while not future.done():
            try:
                await asyncio.shield(future)
            except asyncio.CancelledError:
                cancelled = True  # a cancel of this task: the store call still runs to its end, so wait for it
            except Exception:
                break  # the call failed: future.result() raises its error
        if cancelled and not final:
            raise asyncio.CancelledError
        return future.result()
