"""The insertion task of a key in flight: claim the key in the store (waiting while another process holds it), run
`prepare` while a heartbeat renews the claim's lease, then insert the message with the key (`record`).

    claiming ─ claimed ─► held ─ prepared ─► inserting ─ committed ─► inserted
       ▲  └ recorded, failed ─► settled          │ └ recorded ─► settled
       └──────────────── lease lost ─────────────┘

Each step is a transition of `states.TRANSITIONS`; a cancel of the task is a withdrawal (see `withdrawals`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from .calls import _quietly
from .inflight import LedgerBase, Pending, Prepare, Slot, Submitted
from .keys import Cancelled, Fingerprint, KeyReused
from .states import Event, State
from .store import INSERTED, ClaimResult, Write


class Insertion(LedgerBase):
    """The part of the ledger that inserts a key's message from a task of its own."""

    def _start(
        self,
        slot: Slot,
        fingerprint: Fingerprint | str | None,
        stored: object,
        derived: str | None,
        prepare: Prepare | None,
        write: Write | None,
        seen: int | None = None,
    ) -> Pending:
        """Register the first attempt of a key in this process and start the task that inserts its message."""
        pending = Pending(fingerprint, stored, Event.SUBMIT, seen)
        self._pending[slot] = pending
        pending.outcome()  # the task settles it
        self._drive_task(slot, pending, derived, prepare, write)
        return pending

    def _drive_task(
        self, slot: Slot, pending: Pending, derived: str | None, prepare: Prepare | None, write: Write | None
    ) -> None:
        """Start the task that inserts the key's message. A cancel of that task is a withdrawal, answered by
        `_ended` even when the task is cancelled before it ever ran (then its own code never runs)."""
        task = asyncio.get_running_loop().create_task(self._drive(slot, pending, derived, prepare, write))
        pending.task = task
        task.add_done_callback(lambda done: self._ended(slot, pending, done))

    def _claimed(
        self,
        call: asyncio.Future[ClaimResult],
        slot: Slot,
        pending: Pending,
        message_id: str,
        derived: str | None,
        write: Write | None,
        *,
        answer: bool = False,
    ) -> str | None:
        """Settle a key from the answer of the threaded `claim_record` call that the one-step path made.

        With `answer`, also return the outcome to the caller (the first attempt): the messageId, or the error
        raised; None when the key was busy and the general path took over. Without it (a callback), return None.
        """
        error: BaseException | None = None
        outcome: str | None = None
        try:
            claim = call.result()
        except BaseException as exc:  # the store or `write` failed: every attempt gets the error, the key is unused
            error, event = exc, Event.FAILED
        else:
            if claim is INSERTED or claim.state == "claimed":
                outcome, event = message_id, Event.COMMITTED
            elif claim.state == "recorded":
                if self._differ(pending.fingerprint, claim.fingerprint):
                    error, event = KeyReused(), Event.FAILED
                else:
                    outcome, event = claim.message_id or "", Event.RECORDED
            else:  # busy: another owner holds a claim, so take the general path (which can be withdrawn again)
                pending.fire(Event.BUSY)
                pending.seen = claim.withdrawals
                self._drive_task(slot, pending, derived, None, write)
                return None
        self._settle(slot, pending, event, outcome, error)
        if not answer:
            return None
        if error is not None:
            raise error
        return outcome

    async def _drive(
        self, slot: Slot, pending: Pending, derived: str | None, prepare: Prepare | None, write: Write | None
    ) -> str:
        try:
            message_id = await self._run(slot, pending, derived, prepare, write)
        except asyncio.CancelledError:
            raise  # a withdrawal: `_ended` records it and answers
        except BaseException as exc:
            self._settle(slot, pending, Event.FAILED, error=exc)
            if not isinstance(exc, Exception):
                raise
            return ""
        self._settle(slot, pending, Event.COMMITTED if message_id.inserted else Event.RECORDED, message_id)
        return message_id

    def _changed(self, pending: Pending, claim: ClaimResult) -> bool:
        """Whether the key was withdrawn since this process first reached the store (the first call notes the count)."""
        if pending.seen is None:
            pending.seen = claim.withdrawals
            return False
        return claim.withdrawals > pending.seen

    async def _run(
        self, slot: Slot, pending: Pending, derived: str | None, prepare: Prepare | None, write: Write | None
    ) -> Submitted:
        session_id, digest = slot
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
            if pending.state is State.WITHDRAWING:
                raise asyncio.CancelledError  # the cancel came as the call ended: `_withdraw` frees a claim we got
            if self._changed(pending, claim):
                if claim.state == "claimed":
                    pending.fire(Event.RELEASE)
                    await self._call(self.store.release, session_id, digest, self.owner)
                raise Cancelled  # withdrawn on another Agent while this attempt waited in the store
            different = self._differ(pending.fingerprint, claim.fingerprint)
            if claim.state == "recorded":
                if different:
                    raise KeyReused
                assert claim.message_id is not None
                return Submitted(claim.message_id)
            if claim.state == "busy":
                if different:
                    raise KeyReused
                await asyncio.sleep(delay)  # another process holds the key: wait for its record or its lease
                delay = min(delay * 2, self._max_poll)
                continue
            pending.fire(Event.CLAIMED)
            pending.fresh_until = asked + self.store.lease_seconds / 2
            pending.claimed_until = asked + self.store.lease_seconds
            result = await self._insert(slot, pending, derived, prepare, write)
            if result is not None:
                return result
            delay = self._poll  # our lease ran out and another owner took the key over: wait for it

    def _late_claim(self, slot: Slot) -> Callable[[ClaimResult], None]:
        """Give back a claim whose call ended after its attempt was answered -32603 (or the key stays taken until
        the lease runs out)."""

        def late(claim: ClaimResult) -> None:
            if claim.state == "claimed":
                release = self.store.release
                asyncio.get_running_loop().run_in_executor(None, _quietly, release, *slot, self.owner)

        return late

    async def _insert(
        self, slot: Slot, pending: Pending, derived: str | None, prepare: Prepare | None, write: Write | None
    ) -> Submitted | None:
        """Run `prepare` and insert the message while this process holds the claim; None when the lease ran out
        and another owner took the key over."""
        session_id, digest = slot
        heartbeat = asyncio.get_running_loop().create_task(self._heartbeat(session_id, digest, pending))
        try:
            if prepare is not None:
                await prepare()
            if pending.state is State.WITHDRAWING:
                raise asyncio.CancelledError  # cancelled as `prepare` returned: still before the insert
            pending.fire(Event.PREPARED)  # from here on, only a cancel that cuts the record off withdraws the prompt
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
            pending.fire(Event.RELEASE)
            pending.fresh_until = pending.claimed_until = 0.0  # the claim is being given back
            await self._call(self.store.release, session_id, digest, self.owner)
            raise
        heartbeat.cancel()
        if result.withdrawn:
            raise Cancelled  # withdrawn on another Agent before our insert: the store gave the claim back
        if result.message_id is None:
            pending.fire(Event.LEASE_LOST)
            pending.fresh_until = pending.claimed_until = 0.0
            return None
        return Submitted(result.message_id, result.inserted)

    async def _heartbeat(self, session_id: str, digest: str, pending: Pending) -> None:
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
                pending.fresh_until = pending.claimed_until = 0.0  # the lease ran out and another took it
                return
            pending.fresh_until = asked + lease / 2
            pending.claimed_until = asked + lease
