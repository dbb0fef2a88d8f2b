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

A cancel reaches the other processes through the store: the ledger counts a withdrawal on the key's row (`withdraw`),
the claim holder checks that count in the transaction of its insert, and every attempt that was waiting in the store
when the withdrawal was recorded finds the count grown and is answered -32800. An attempt is pending in the store
from its first store call; one that reaches the store after the withdrawal is a new attempt for an unused key.

A key in flight in this process is in one of the states of `states`, and moves only through its table. The ledger
is one class made of parts by concern: this module is the submit path (and the one-step path of a prompt with no
`prepare`); `insertion` is the task that claims, prepares and records; `withdrawals` is what a cancel does;
`inflight` holds the key's record and what the parts share.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Hashable

from .calls import _late, _wait_done
from .inflight import Pending, Prepare, Slot, Submitted
from .insertion import Insertion
from .keys import (
    KeyReused,
    StoreUnavailable,
    checked_key,
    checked_key_digest,
    derive_message_id,
    validate_session_id,
)
from .states import WITHDRAWAL, Event, State
from .store import INSERTED, ClaimResult, LedgerStore, Write
from .withdrawals import Withdrawals

ClaimRecord = Callable[..., ClaimResult]
"""A store's optional `claim_record`: claim a key and insert its message in one step."""

__all__ = ["ClaimRecord", "KeyLedger", "Prepare", "Submitted"]


class KeyLedger(Withdrawals, Insertion):
    """Records idempotency keys for sessions on top of a store (memory, SQLite or PostgreSQL).

    `derive_message_ids=True` makes each messageId a UUID v5 of (sessionId, key), for runtimes that keep their own
    message ids; otherwise `new_message_id` makes them (a random UUID by default). Calls to a blocking store (SQLite,
    PostgreSQL) run in a worker thread; `threaded=False` runs them on the event loop instead, for an application
    whose other writes to the same database already do. `store_timeout_seconds` bounds the wait for one store call
    (by default the store's `answer_timeout_seconds`): past it the attempt is answered -32603 (StoreUnavailable),
    and nothing its call was doing commits. The bound holds for everything except a COMMIT already sent when it
    passes: that outcome is unknown, so the attempt waits for it (the messageId if it commits, its error if not).
    The ledger's `repr`, its errors and its logs never contain a key.
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
        store_timeout_seconds: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.derive_message_ids = derive_message_ids
        self._new_message_id = new_message_id or (lambda: f"msg_{uuid.uuid4().hex}")
        self._poll = poll_seconds
        self._max_poll = max_poll_seconds
        self.owner = owner or uuid.uuid4().hex  # who holds our claims: one id per ledger, so per process
        self._pending: dict[Slot, Pending] = {}
        self._by_attempt: dict[Hashable, Slot] = {}
        self._withdrawals: set[asyncio.Task[None]] = set()
        # Blocking stores run in a worker thread unless the caller says its loop may wait for them (`threaded`).
        self._threaded = getattr(store, "blocking", True) if threaded is None else threaded
        # How long to wait for one store call (in a worker thread) before answering -32603; the store's own bound
        # unless given. A store on the event loop (`threaded=False`) is bounded by its own timeouts only.
        self._bound = store_timeout_seconds or getattr(store, "answer_timeout_seconds", None)
        self._clock = clock  # measures how long ago a claim was confirmed (see `_withdraw`)
        self._claim_record: ClaimRecord | None = getattr(store, "claim_record", None)
        # Whether a cancel may cut off a store call under way at its commit gate: only for calls in a worker thread
        # of a store whose transactions pass that gate before COMMIT (the SQL stores, any blocking store); a store
        # made for the event loop (the memory store) commits without it, even when run in a thread.
        self._cuts = self._threaded and getattr(store, "blocking", True)
        # A store that keeps prompts as they are (`lazy_fingerprints`) gets the prompt itself and gives it back when a
        # retry compares; the others get, and give back, its digest.
        self._lazy = getattr(store, "lazy_fingerprints", False)
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
    ) -> Submitted:
        """Handle one attempt of a prompt and return the messageId that answers it (a `Submitted`, which is a str
        and says whether this attempt inserted the message).

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
            return Submitted(await self._unkeyed(prepare, write), write is not None)
        checked: str = key  # type: ignore[assignment]  # a valid key, or self._row_key would have raised
        slot = (session_id, digest)
        pending = self._pending.get(slot) if self._pending else None
        while pending is not None and pending.state in WITHDRAWAL:
            # A withdrawal of this key is being recorded: this attempt arrived after the cancel, so it is a new one,
            # and starts once the withdrawal is in the store (or could not be put there).
            if pending.gone is None:
                pending.gone = asyncio.Event()
            await pending.gone.wait()
            pending = self._pending.get(slot)
        first = pending is None
        if pending is None:
            claim_record = self._claim_record
            if prepare is None and claim_record is not None:
                if self._threaded:
                    outcome = await self._one_step(claim_record, slot, checked, prompt, write)
                else:
                    outcome = self._one_step_inline(claim_record, slot, checked, prompt, write)
                if outcome is not None:
                    return outcome
                pending = self._pending[slot]  # busy: another owner holds a claim, and the general path took over
            else:
                stored = self._stored(prompt)
                derived = derive_message_id(session_id, checked) if self.derive_message_ids else None
                pending = self._start(slot, self._fingerprint(prompt, stored), stored, derived, prepare, write)
        elif self._differ(pending.fingerprint, self._stored(prompt)):
            raise KeyReused
        else:
            pending.fire(Event.JOIN)
        self._by_attempt[attempt] = slot
        try:
            message_id = await asyncio.shield(pending.outcome())
        finally:
            self._by_attempt.pop(attempt, None)
        return Submitted(message_id, first and pending.state is State.INSERTED)

    def _one_step_inline(
        self, claim_record: ClaimRecord, slot: Slot, key: str, prompt: object, write: Write | None
    ) -> Submitted | None:
        """The first attempt of a key, when nothing comes before the insertion and the store answers at once.

        No other attempt can arrive and no cancel can land before the store has answered, so nothing is registered
        unless the key is busy. Returns the messageId, or None when the general path took over (busy).
        """
        session_id, digest = slot
        message_id = derive_message_id(session_id, key) if self.derive_message_ids else self._new_message_id()
        stored = self._stored(prompt)
        claim = claim_record(session_id, digest, message_id, stored, write)
        if claim is INSERTED or claim.state == "claimed":
            return Submitted(message_id, True)
        fingerprint = self._fingerprint(prompt, stored)
        if claim.state == "recorded":
            if self._differ(fingerprint, claim.fingerprint):
                raise KeyReused
            assert claim.message_id is not None
            return Submitted(claim.message_id)
        # busy: take the general path (no second one-step try)
        derived = message_id if self.derive_message_ids else None
        self._start(slot, fingerprint, stored, derived, None, write, claim.withdrawals)
        return None

    async def _one_step(
        self, claim_record: ClaimRecord, slot: Slot, key: str, prompt: object, write: Write | None
    ) -> Submitted | None:
        """The first attempt of a key, when nothing comes before the insertion: claim and record in one store call,
        in a worker thread. Returns the messageId, or None when the general path took over (busy).

        The key is registered while the call runs, so that other attempts join it. Once the call is made the
        message may be in, so the prompt can no longer be withdrawn. This attempt waits on the call itself, as an
        unkeyed prompt does, and reads its answer for every attempt; if this attempt's own task is cancelled
        meanwhile, a callback on the call answers the others instead.
        """
        stored = self._stored(prompt)
        pending = Pending(self._fingerprint(prompt, stored), stored, Event.SUBMIT_ONE_STEP)
        self._pending[slot] = pending
        derived = derive_message_id(slot[0], key) if self.derive_message_ids else None
        message_id = derived or self._new_message_id()
        call, gate = self._start_call(claim_record, slot[0], slot[1], message_id, stored, write)
        try:
            await _wait_done(call, self._bound)
            if gate is not None and not call.done() and not gate.give_up():
                await _wait_done(call, None)  # its COMMIT was sent: the answer is that COMMIT's outcome
        except asyncio.CancelledError:
            call.add_done_callback(lambda done: self._claimed(done, slot, pending, message_id, derived, write))
            raise
        if not call.done():
            # The store did not answer in time: every attempt gets -32603, and the call commits nothing late.
            assert self._bound is not None
            call.add_done_callback(lambda done: _late(done, None))
            error = StoreUnavailable(self._bound)
            self._settle(slot, pending, Event.FAILED, error=error)
            raise error
        if call.exception() is None and call.result() is INSERTED and pending.future is None:
            pending.fire(Event.COMMITTED)
            del self._pending[slot]  # the common case: inserted now, and no other attempt joined
            return Submitted(message_id, True)
        outcome = self._claimed(call, slot, pending, message_id, derived, write, answer=True)
        return None if outcome is None else Submitted(outcome, pending.state is State.INSERTED)

    async def _unkeyed(self, prepare: Prepare | None, write: Write | None) -> str:
        if prepare is not None:
            await prepare()
        message_id = self._new_message_id()
        if write is not None:
            await self._call(self.store.insert, message_id, write, final=True)
        return message_id

    async def lookup(self, session_id: str, key: str) -> str | None:
        """The messageId recorded for a key, or None. Raises InvalidSessionId or InvalidKey as `submit` does."""
        session_id = validate_session_id(session_id)
        digest = self._row_key(key)
        if digest is None:
            return None  # no key, so nothing can be recorded under it
        return await self._call(self.store.lookup, session_id, digest)
