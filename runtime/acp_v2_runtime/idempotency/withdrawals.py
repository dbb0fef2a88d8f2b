"""Cancels and withdrawals: how a cancel of a key in flight reaches the store, and what its attempts are answered.

A cancel cuts the key's store call under way off at its commit gate (calls.CommitGate), so that it commits nothing
and is not waited for; a COMMIT already sent is waited for, and its outcome is the answer. When this process holds
the key's claim, that answer (-32800) comes at once and the withdrawal goes to the store in the background, for a
bounded time (`withdrawn`); otherwise the withdrawal's own store call decides it (`withdrawing`), and when that call
fails while the claim is still ours by its lease (a held prompt on a store that stopped answering), -32800 too.

Where -32800 before the store has the withdrawal is unsafe: Agent A holds key K's claim (lease L, last confirmed at
t0) and answers a cancel -32800 before its withdrawal is in the store; A cannot reach the store until after t0 + L
(a partition of A alone, or a freeze that outlasts the lease), so its tries stop at t0 + L; Agent B holds an
attempt of the same round sent before the cancel, takes the expired claim over and inserts K's message, since no
withdrawal is recorded. The round then has both a -32800 and a message. Both -32800 paths share this window: the
one at once keeps at least half a lease for the withdrawal to get in, the one after a failed withdrawal call what
is left of the lease. The model test (runtime/tests/test_ledger_model.py) lets leases run out only whole, which
ends every claim at once, so it cannot reach this interleaving.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable

from .calls import _late, _wait_done
from .inflight import LedgerBase, Pending, Slot
from .keys import Cancelled, KeyReused
from .states import WITHDRAWAL, Event, State


class Withdrawals(LedgerBase):
    """The part of the ledger that withdraws prompts not inserted yet."""

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

    def _cancel_slot(self, slot: Slot) -> bool:
        pending = self._pending.get(slot)
        if pending is None:
            return False
        if pending.state in WITHDRAWAL:
            return True  # cancelled already: its attempts get the withdrawal's answer
        gate = pending.gate
        # The store call under way, cut off unless its COMMIT was sent: then it commits nothing, and the task's
        # cancel is not held up by it (a store that stopped answering holds the call up for its whole bound).
        cut = gate is not None and self._cuts and gate.give_up()
        if pending.fire(Event.CUT if cut else Event.CANCEL) is not State.WITHDRAWING:
            return False  # its insert may be committing (or commits without a gate): the attempts get its outcome
        assert pending.task is not None  # only the one-step call has no task, and it is never withdrawn
        pending.task.cancel()  # `_ended` answers, also when the task never got to run
        return True

    def _ended(self, slot: Slot, pending: Pending, task: asyncio.Task[str]) -> None:
        """The insertion task ended; when it was cancelled (a withdrawal), record the withdrawal and answer."""
        if not task.cancelled() or (pending.future is not None and pending.future.done()):
            return
        pending.fire(Event.STOPPED)
        withdrawal = asyncio.get_running_loop().create_task(self._withdraw(slot, pending))
        self._withdrawals.add(withdrawal)  # the loop keeps only a weak reference to a task
        withdrawal.add_done_callback(self._withdrawals.discard)

    async def _withdraw(self, slot: Slot, pending: Pending) -> None:
        """Record a withdrawal in the store, so that it reaches every process, and answer this process's attempts.

        While this process holds the claim, confirmed by the store less than half a lease ago, nobody can insert
        before the claim is given back or runs out, so the attempts get -32800 at once, also on a stalled store;
        the withdrawal is then tried until it is in the store or the lease is over (this covers an insert that the
        cancel cut off before its COMMIT: the claim is still ours). Otherwise the store says whether the message
        went in first: then the attempts get its messageId. If the store cannot be reached, a claim still ours by
        its lease (a held prompt on a stalled store) means nobody else can have inserted: -32800, the withdrawal
        tried until the lease ends; past the lease the attempts get the store's error, since a -32800 the store has
        not recorded could be followed by another process's insert (or could deny a message inserted already). A
        store call that the cancel cut off does not hold this up: only the withdrawal's own call is waited for, so
        the answer comes within one bound.
        """
        session_id, digest = slot
        withdraw = self.store.withdraw
        try:
            if self._clock() < pending.fresh_until:
                # Nobody can insert before our claim is given back or runs out, and the cancel cut off our own
                # insert if it was under way.
                self._settle(slot, pending, Event.FRESH, error=Cancelled())
                await self._withdraw_later(slot, pending.fresh_until + self.store.lease_seconds / 2)
                return
            try:
                claim = await self._call(withdraw, session_id, digest, self.owner)
            except Exception as exc:
                if self._clock() < pending.claimed_until:
                    # The claim was ours when the cancel came (held: nothing of ours was committing) and its lease
                    # has not run out, so nobody else can have inserted: the prompt is withdrawn (-32800), not
                    # failed, and the withdrawal keeps trying to reach the store until the lease ends.
                    self._settle(slot, pending, Event.FRESH, error=Cancelled())
                    await self._withdraw_later(slot, pending.claimed_until)
                    return
                self._settle(slot, pending, Event.FAILED, error=exc)
                return
            seen = pending.seen
            if claim.state == "recorded" and (seen is None or claim.withdrawals <= seen):
                if self._differ(pending.fingerprint, claim.fingerprint):
                    self._settle(slot, pending, Event.FAILED, error=KeyReused())
                else:
                    self._settle(slot, pending, Event.RECORDED, claim.message_id)
            else:
                self._settle(slot, pending, Event.WITHDRAWAL_ENDED, error=Cancelled())
        finally:
            if pending.state is State.WITHDRAWN:
                pending.fire(Event.WITHDRAWAL_ENDED)
            pending.fresh_until = pending.claimed_until = 0.0
            self._forget(slot, pending)

    async def _withdraw_later(self, slot: Slot, until: float) -> None:
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
                    await _wait_done(call, None)  # its COMMIT was sent: the answer is that COMMIT's outcome
                if not call.cancelled() and call.exception() is None:
                    return
            if self._clock() + self._max_poll >= until:
                return
            await asyncio.sleep(self._max_poll)
