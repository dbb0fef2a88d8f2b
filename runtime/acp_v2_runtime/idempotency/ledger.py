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

A cancel cuts the key's store call under way off at its commit gate (calls.CommitGate), so that it commits nothing
and is not waited for; a COMMIT already sent is waited for, and its outcome is the answer. When this process holds
the key's claim, that answer (-32800) comes at once and the withdrawal goes to the store in the background, for a
bounded time; otherwise the withdrawal's own store call decides it (see `cancel`).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable, Hashable

from .calls import CommitGate, StoreCalls, _late, _quietly, _wait_done
from .keys import (
    Cancelled,
    Fingerprint,
    KeyReused,
    StoreUnavailable,
    checked_key,
    checked_key_digest,
    derive_message_id,
    fingerprints_differ,
    prompt_fingerprint,
    validate_session_id,
)
from .store import INSERTED, ClaimResult, LedgerStore, Write

ClaimRecord = Callable[..., ClaimResult]
"""A store's optional `claim_record`: claim a key and insert its message in one step."""
Prepare = Callable[[], Awaitable[None]]
"""Pre-insertion work (hooks, waiting for a turn). Cancellable until it returns; an exception releases the key."""


class Submitted(str):
    """What `submit` returns: the messageId (this object is that string), and whether this attempt inserted it.

    `inserted` is True for the one attempt whose call wrote the message, and False for a retry, for an attempt
    that joined another one, and when another process inserted it. An Agent starts its round of work when it is
    True, so a retry never starts a second one.
    """

    inserted: bool

    def __new__(cls, message_id: str, inserted: bool = False) -> Submitted:
        self = super().__new__(cls, message_id)
        self.inserted = inserted
        return self

    @property
    def message_id(self) -> str:
        """The messageId as a plain str."""
        return str.__str__(self)


class _Pending:
    """A key with attempts in flight in this process.

    `future` carries the outcome to the attempts that joined the first one. It is made only when one joins (or
    when a task drives the insertion): most keyed prompts are never sent twice at once, and their first attempt
    reads the store's answer itself.
    """

    __slots__ = (
        "fingerprint",
        "fresh_until",
        "future",
        "gate",
        "gone",
        "holding",
        "inserted",
        "inserting",
        "seen",
        "stored",
        "task",
        "withdrawn",
    )

    def __init__(
        self,
        fingerprint: Fingerprint | str | None,
        stored: object,
        *,
        inserting: bool = False,
        seen: int | None = None,
    ) -> None:
        self.fingerprint = fingerprint  # what this process compares a store's row with
        self.stored = stored  # what the store is given to keep: the prompt itself, or its digest (KeyLedger._stored)
        self.future: asyncio.Future[str] | None = None
        self.task: asyncio.Task[str] | None = None
        self.inserting = inserting  # the call that may insert is under way: a cancel no longer withdraws
        self.inserted = False  # this process inserted the message (the first attempt says so)
        self.holding = False  # this process holds the key's claim in the store
        self.fresh_until = 0.0  # until when (the ledger's clock) that claim is surely still ours: half its lease
        self.seen: int | None = seen  # the key's withdrawal count when this process first reached the store
        self.withdrawn = False  # cancelled: the withdrawal is being recorded
        self.gone: asyncio.Event | None = None  # set once the withdrawal is recorded (or failed) and the slot is free
        self.gate: CommitGate | None = None  # the commit gate of the insertion task's store call under way, if any

    def outcome(self) -> asyncio.Future[str]:
        """The future that the joined attempts wait on, made the first time it is asked for."""
        if self.future is None:
            self.future = asyncio.get_running_loop().create_future()
        return self.future


def _answered(pending: _Pending) -> bool:
    return pending.future is not None and pending.future.done()


class KeyLedger(StoreCalls):
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
        self._pending: dict[tuple[str, str], _Pending] = {}
        self._by_attempt: dict[Hashable, tuple[str, str]] = {}
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
        while pending is not None and pending.withdrawn:
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
                pending = self._start(slot, self._fingerprint(prompt, stored), stored, checked, prepare, write)
        elif self._differ(pending.fingerprint, self._stored(prompt)):
            raise KeyReused
        self._by_attempt[attempt] = slot
        try:
            message_id = await asyncio.shield(pending.outcome())
        finally:
            self._by_attempt.pop(attempt, None)
        return Submitted(message_id, first and pending.inserted)

    def _one_step_inline(
        self, claim_record: ClaimRecord, slot: tuple[str, str], key: str, prompt: object, write: Write | None
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
        self._start(slot, fingerprint, stored, key, None, write, one_step=False, seen=claim.withdrawals)
        return None

    async def _one_step(
        self, claim_record: ClaimRecord, slot: tuple[str, str], key: str, prompt: object, write: Write | None
    ) -> Submitted | None:
        """The first attempt of a key, when nothing comes before the insertion: claim and record in one store call,
        in a worker thread. Returns the messageId, or None when the general path took over (busy).

        The key is registered while the call runs, so that other attempts join it. Once the call is made the
        message may be in, so the prompt can no longer be withdrawn. This attempt waits on the call itself, as an
        unkeyed prompt does, and reads its answer for every attempt; if this attempt's own task is cancelled
        meanwhile, a callback on the call answers the others instead.
        """
        stored = self._stored(prompt)
        pending = _Pending(self._fingerprint(prompt, stored), stored, inserting=True)
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
            self._settle(slot, pending, error=error)
            raise error
        if call.exception() is None and call.result() is INSERTED and pending.future is None:
            del self._pending[slot]  # the common case: inserted now, and no other attempt joined
            return Submitted(message_id, True)
        outcome = self._claimed(call, slot, pending, message_id, derived, write, answer=True)
        return None if outcome is None else Submitted(outcome, pending.inserted)

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
        seen: int | None = None,
    ) -> _Pending:
        """Register the first attempt of a key in this process and start the task that inserts its message."""
        pending = _Pending(fingerprint, stored, seen=seen)
        self._pending[slot] = pending
        pending.outcome()  # the task settles it
        derived = derive_message_id(slot[0], key) if self.derive_message_ids else None
        self._drive_task(slot, pending, derived, prepare, write, one_step=one_step)
        return pending

    def _drive_task(
        self,
        slot: tuple[str, str],
        pending: _Pending,
        derived: str | None,
        prepare: Prepare | None,
        write: Write | None,
        *,
        one_step: bool,
    ) -> None:
        """Start the task that inserts the key's message. A cancel of that task is a withdrawal, answered by
        `_ended` even when the task is cancelled before it ever ran (then its own code never runs)."""
        task = asyncio.get_running_loop().create_task(
            self._drive(slot, pending, derived, prepare, write, one_step=one_step)
        )
        pending.task = task
        task.add_done_callback(lambda done: self._ended(slot, pending, done))

    def _claimed(
        self,
        call: asyncio.Future[ClaimResult],
        slot: tuple[str, str],
        pending: _Pending,
        message_id: str,
        derived: str | None,
        write: Write | None,
        *,
        answer: bool = False,
    ) -> str | None:
        """Settle a key from the answer of the threaded `claim_record` call that `_one_step` made.

        With `answer`, also return the outcome to the caller (the first attempt): the messageId, or the error
        raised; None when the key was busy and the general path took over. Without it (a callback), return None.
        """
        error: BaseException | None = None
        outcome: str | None = None
        try:
            claim = call.result()
        except BaseException as exc:  # the store or `write` failed: every attempt gets the error, the key is unused
            error = exc
        else:
            if claim is INSERTED or claim.state == "claimed":
                outcome = message_id
                pending.inserted = True
            elif claim.state == "recorded":
                if self._differ(pending.fingerprint, claim.fingerprint):
                    error = KeyReused()
                else:
                    outcome = claim.message_id or ""
            else:  # busy: another owner holds a claim, so take the general path (which can be withdrawn again)
                pending.inserting = False
                pending.seen = claim.withdrawals
                self._drive_task(slot, pending, derived, None, write, one_step=False)
                return None
        self._settle(slot, pending, outcome, error)
        if not answer:
            return None
        if error is not None:
            raise error
        return outcome

    def _settle(
        self,
        slot: tuple[str, str],
        pending: _Pending,
        message_id: str | None = None,
        error: BaseException | None = None,
        *,
        keep: bool = False,
    ) -> None:
        """Give the key's outcome to the attempts that joined (if any did), and forget the key's attempts in flight
        unless `keep` (a withdrawal still being recorded: new attempts wait for it)."""
        if not keep:
            self._forget(slot, pending)
        future = pending.future
        if future is None or future.done():
            return
        if error is not None:
            future.set_exception(error)
            future.exception()  # nobody may be waiting any more: mark the outcome as seen
        else:
            future.set_result(message_id or "")

    def _forget(self, slot: tuple[str, str], pending: _Pending) -> None:
        """Drop the key's entry (if it is still this one) and let attempts that waited for it go on."""
        if self._pending.get(slot) is pending:
            del self._pending[slot]
        if pending.gone is not None:
            pending.gone.set()

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
        """Withdraw the prompt that `attempt` waits on, if it is not inserted yet (every attempt gets -32800).

        True when the ledger answers the attempt: with -32800, or with the messageId when the store shows that the
        message was inserted before the withdrawal reached it. False when the attempt is unknown or its message is
        being inserted (its COMMIT was sent: it gets that COMMIT's outcome, the messageId if it commits).

        A store call under way for the key (in a worker thread) is cut off first when its COMMIT was not sent: it
        then commits nothing, and the cancel does not wait for it. That includes the insert itself: a prompt whose
        COMMIT was not sent is withdrawn. While this process holds the key's claim (confirmed less than half a lease
        ago) nobody else can insert, so the attempts are answered -32800 at once, whether the store answers or not,
        and the withdrawal goes to the store in the background. Otherwise only the store can tell whether another
        process inserted the message (or is inserting it), so the withdrawal's own store call is waited for (one
        bound at most): -32800, the messageId, or the store's error.
        """
        slot = self._by_attempt.get(attempt)
        return self._cancel_slot(slot) if slot is not None else False

    def cancel_session(self, session_id: str) -> int:
        """Withdraw every pending keyed prompt of a session that is not inserted yet; returns how many."""
        return sum(self._cancel_slot(slot) for slot in list(self._pending) if slot[0] == session_id)

    def pending_count(self, session_id: str | None = None) -> int:
        """How many keys have attempts in flight (in this process); a withdrawn key whose attempts are answered is
        not counted while its withdrawal is still being recorded."""
        return sum(
            1
            for slot, pending in self._pending.items()
            if (session_id is None or slot[0] == session_id) and not (pending.withdrawn and _answered(pending))
        )

    async def lookup(self, session_id: str, key: str) -> str | None:
        """The messageId recorded for a key, or None. Raises InvalidSessionId or InvalidKey as `submit` does."""
        session_id = validate_session_id(session_id)
        digest = self._row_key(key)
        if digest is None:
            return None  # no key, so nothing can be recorded under it
        return await self._call(self.store.lookup, session_id, digest)

    def _cancel_slot(self, slot: tuple[str, str]) -> bool:
        pending = self._pending.get(slot)
        if pending is None:
            return False
        if pending.withdrawn:
            return True  # cancelled already: its attempts get the withdrawal's answer
        if pending.task is None or pending.task.done():
            return False
        gate = pending.gate
        # The store call under way, cut off unless its COMMIT was sent: then it commits nothing, and the task's
        # cancel is not held up by it (a store that stopped answering holds the call up for its whole bound).
        cut = gate is not None and self._cuts and gate.give_up()
        if pending.inserting and not cut:
            return False  # its insert may be committing (or commits without a gate): the attempts get its outcome
        pending.withdrawn = True
        pending.task.cancel()  # `_ended` answers, also when the task never got to run
        return True

    def _ended(self, slot: tuple[str, str], pending: _Pending, task: asyncio.Task[str]) -> None:
        """The insertion task ended; when it was cancelled (a withdrawal), record the withdrawal and answer."""
        if not task.cancelled() or (pending.future is not None and pending.future.done()):
            return
        pending.withdrawn = True
        withdrawal = asyncio.get_running_loop().create_task(self._withdraw(slot, pending))
        self._withdrawals.add(withdrawal)  # the loop keeps only a weak reference to a task
        withdrawal.add_done_callback(self._withdrawals.discard)

    async def _withdraw(self, slot: tuple[str, str], pending: _Pending) -> None:
        """Record a withdrawal in the store, so that it reaches every process, and answer this process's attempts.

        While this process holds the claim, confirmed by the store less than half a lease ago, nobody can insert
        before the claim is given back or runs out, so the attempts get -32800 at once, also on a stalled store;
        the withdrawal is then tried until it is in the store or the lease is over (this covers an insert that the
        cancel cut off before its COMMIT: the claim is still ours). Otherwise the store says whether the message
        went in first: then the attempts get its messageId; if the store cannot be reached they get its error, since
        a -32800 the store has not recorded could be followed by another process's insert (or could deny a message
        inserted already). A store call that the cancel cut off does not hold this up: only the withdrawal's own
        call is waited for, so the answer comes within one bound.
        """
        session_id, digest = slot
        withdraw = self.store.withdraw
        try:
            if pending.holding and self._clock() < pending.fresh_until:
                # Nobody can insert before our claim is given back or runs out, and the cancel cut off our own
                # insert if it was under way.
                self._settle(slot, pending, error=Cancelled(), keep=True)
                await self._withdraw_later(slot, pending.fresh_until + self.store.lease_seconds / 2)
                return
            try:
                claim = await self._call(withdraw, session_id, digest, self.owner)
            except Exception as exc:
                self._settle(slot, pending, error=exc)
                return
            seen = pending.seen
            if claim.state == "recorded" and (seen is None or claim.withdrawals <= seen):
                if self._differ(pending.fingerprint, claim.fingerprint):
                    self._settle(slot, pending, error=KeyReused())
                else:
                    self._settle(slot, pending, claim.message_id)
            else:
                self._settle(slot, pending, error=Cancelled())
        finally:
            pending.holding = False
            self._forget(slot, pending)

    async def _withdraw_later(self, slot: tuple[str, str], until: float) -> None:
        """Put in the store a withdrawal whose attempts are answered already, trying until it is in or `until` (the
        ledger's clock) has passed; new attempts of the key in this process wait for it meanwhile.

        One store call at a time: a call that the store holds up is waited for (on a frozen server, until it thaws,
        and then the next try goes in at once), rather than joined by another every bound, each holding a worker
        thread. A call left when `until` passes commits nothing (its gate), unless its COMMIT was sent.
        """
        session_id, digest = slot
        withdraw = self.store.withdraw
        while True:
            if not self._threaded:
                try:
                    withdraw(session_id, digest, self.owner)
                    return
                except Exception:  # the store failed: try again while the withdrawal can still matter
                    pass
            else:
                call, gate = self._start_call(withdraw, session_id, digest, self.owner)
                await _wait_done(call, max(until - self._clock(), 0.0))
                if not call.done():
                    if gate is None or gate.give_up():
                        call.add_done_callback(lambda done: _late(done, None))
                        return
                    await _wait_done(call, None)  # its COMMIT was sent: the withdrawal is in, or failed at the end
                if not call.cancelled() and call.exception() is None:
                    return
            if self._clock() + self._max_poll >= until:
                return
            await asyncio.sleep(self._max_poll)

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
            raise  # a withdrawal: `_ended` records it and answers
        except BaseException as exc:
            self._settle(slot, pending, error=exc)
            if not isinstance(exc, Exception):
                raise
            return ""
        self._settle(slot, pending, message_id)
        return message_id

    def _changed(self, pending: _Pending, claim: ClaimResult) -> bool:
        """Whether the key was withdrawn since this process first reached the store (the first call notes the count)."""
        if pending.seen is None:
            pending.seen = claim.withdrawals
            return False
        return claim.withdrawals > pending.seen

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
            claim = await self._call(
                fast, session_id, digest, message_id, pending.stored, write, final=True, holder=pending
            )
            if claim.state == "claimed":
                pending.inserted = True
                return message_id
            if claim.state == "recorded":
                if self._differ(pending.fingerprint, claim.fingerprint):
                    raise KeyReused
                assert claim.message_id is not None
                return claim.message_id
            pending.inserting = False  # busy: another owner holds a claim, so take the general path
            self._changed(pending, claim)
        delay = self._poll
        while True:
            asked = self._clock()
            claim = await self._call(
                self.store.claim,
                session_id,
                digest,
                self.owner,
                pending.stored,
                late=self._late_claim(slot),
                holder=pending,
            )
            if pending.withdrawn:
                raise asyncio.CancelledError  # the cancel came as the call ended: `_withdraw` frees a claim we got
            if self._changed(pending, claim):
                if claim.state == "claimed":
                    await self._call(self.store.release, session_id, digest, self.owner)
                raise Cancelled  # withdrawn on another Agent while this attempt waited in the store
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
            pending.holding = True
            pending.fresh_until = asked + self.store.lease_seconds / 2
            result = await self._insert(slot, pending, derived, prepare, write)
            if result is not None:
                return result
            delay = self._poll  # our lease ran out and another owner took the key over: wait for it

    def _late_claim(self, slot: tuple[str, str]) -> Callable[[ClaimResult], None]:
        """Give back a claim whose call ended after its attempt was answered -32603 (or the key stays taken until
        the lease runs out)."""

        def late(claim: ClaimResult) -> None:
            if claim.state == "claimed":
                release = self.store.release
                asyncio.get_running_loop().run_in_executor(None, _quietly, release, *slot, self.owner)

        return late

    async def _insert(
        self,
        slot: tuple[str, str],
        pending: _Pending,
        derived: str | None,
        prepare: Prepare | None,
        write: Write | None,
    ) -> str | None:
        session_id, digest = slot
        heartbeat = asyncio.get_running_loop().create_task(self._heartbeat(session_id, digest, pending))
        try:
            if prepare is not None:
                await prepare()
            if pending.withdrawn:
                raise asyncio.CancelledError  # cancelled as `prepare` returned: still before the insert
            pending.inserting = True  # from here on, only a cancel that cuts the record off withdraws the prompt
            message_id = derived or self._new_message_id()
            result = await self._call(
                self.store.record,
                session_id,
                digest,
                self.owner,
                message_id,
                write,
                pending.seen,
                final=True,
                holder=pending,
            )
        except asyncio.CancelledError:
            heartbeat.cancel()
            raise  # a withdrawal: `_withdraw` counts it and frees the claim in one store call
        except BaseException:
            heartbeat.cancel()
            pending.inserting = pending.holding = False
            await self._call(self.store.release, session_id, digest, self.owner)
            raise
        heartbeat.cancel()
        pending.holding = False
        if result.withdrawn:
            raise Cancelled  # withdrawn on another Agent before our insert: the store gave the claim back
        if result.inserted:
            pending.inserted = True
        else:
            pending.inserting = False
        return result.message_id

    async def _heartbeat(self, session_id: str, digest: str, pending: _Pending) -> None:
        lease = self.store.lease_seconds
        period = max(lease / 3, 0.01)
        while True:
            await asyncio.sleep(period)
            asked = self._clock()
            try:
                renewed = await self._call(self.store.renew, session_id, digest, self.owner)
            except Exception:  # the store failed (locked, full): the next renewal tries again; nobody awaits this
                continue
            if not renewed:
                pending.fresh_until = 0.0  # the claim was lost (its lease ran out and another took it)
                return
            pending.fresh_until = asked + lease / 2
