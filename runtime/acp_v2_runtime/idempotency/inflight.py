"""A key in flight in one ledger: its record (`Pending`, whose state moves only through the table in `states`), what
`submit` returns (`Submitted`), and the ledger's shared part (`LedgerBase`): how a key's outcome is given to its
attempts, and how prompts are compared.

The ledger is one class made of parts by concern: this base, the insertion task (`insertion`), cancels and
withdrawals (`withdrawals`) and the submit path (`ledger`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable

from .calls import CommitGate, StoreCalls
from .keys import Fingerprint, fingerprints_differ, prompt_fingerprint
from .states import FINAL, TRANSITIONS, Event, ImpossibleTransition, State
from .store import LedgerStore, Write

Prepare = Callable[[], Awaitable[None]]
"""Pre-insertion work (hooks, waiting for a turn). Cancellable until it returns; an exception releases the key."""
Slot = tuple[str, str]
"""A key's place in the ledger: (session id, what its row is filed under)."""


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


_NEW = State.NEW  # read once: every keyed prompt in a worker thread makes a Pending


class Pending:
    """A key with attempts in flight in this process: its state (see `states`) and the data its attempts share.

    `future` carries the outcome to the attempts that joined the first one. It is made only when one joins (or
    when a task drives the insertion): most keyed prompts are never sent twice at once, and their first attempt
    reads the store's answer itself.
    """

    __slots__ = (
        "claimed_until",
        "fingerprint",
        "fresh_until",
        "future",
        "gate",
        "gone",
        "seen",
        "state",
        "stored",
        "task",
    )

    def __init__(self, fingerprint: Fingerprint | str | None, stored: object, first: Event, seen: int | None = None):
        try:
            self.state = TRANSITIONS[_NEW, first]
        except KeyError:
            raise ImpossibleTransition(_NEW, first) from None
        self.fingerprint = fingerprint  # what this process compares a store's row with
        self.stored = stored  # what the store is given to keep: the prompt itself, or its digest (LedgerBase._stored)
        self.future: asyncio.Future[str] | None = None
        self.task: asyncio.Task[str] | None = None
        # Until when (the ledger's clock) the key's claim is surely still ours: half its lease after the store last
        # confirmed it; 0 when the claim is not ours (never had, given back, or lost).
        self.fresh_until = 0.0
        # Until when (the ledger's clock) nobody else can have taken the claim over: its whole lease after the store
        # last confirmed it (taken before the call was sent); 0 when the claim is not ours.
        self.claimed_until = 0.0
        self.seen: int | None = seen  # the key's withdrawal count when this process first reached the store
        self.gone: asyncio.Event | None = None  # what new attempts wait on while a withdrawal is recorded
        self.gate: CommitGate | None = None  # the commit gate of the insertion task's store call under way, if any

    def fire(self, event: Event) -> State:
        """Move to the state the table gives for `event`, and return it; ImpossibleTransition if there is none."""
        try:
            self.state = state = TRANSITIONS[self.state, event]
        except KeyError:
            raise ImpossibleTransition(self.state, event) from None
        return state

    def outcome(self) -> asyncio.Future[str]:
        """The future that the joined attempts wait on, made the first time it is asked for."""
        if self.future is None:
            self.future = asyncio.get_running_loop().create_future()
        return self.future


def _answered(pending: Pending) -> bool:
    return pending.future is not None and pending.future.done()


class LedgerBase(StoreCalls):
    """What every part of the ledger shares: its store, its keys in flight, and how an outcome is given out."""

    store: LedgerStore
    owner: str
    derive_message_ids: bool
    _pending: dict[Slot, Pending]
    _by_attempt: dict[Hashable, Slot]
    _withdrawals: set[asyncio.Task[None]]
    _clock: Callable[[], float]
    _poll: float
    _max_poll: float
    _cuts: bool
    _lazy: bool
    _new_message_id: Callable[[], str]

    # The parts call one another through the ledger: the insertion task's end is a withdrawal's start.
    def _ended(self, slot: Slot, pending: Pending, task: asyncio.Task[str]) -> None:
        raise NotImplementedError

    def _drive_task(
        self, slot: Slot, pending: Pending, derived: str | None, prepare: Prepare | None, write: Write | None
    ) -> None:
        raise NotImplementedError

    def _settle(
        self,
        slot: Slot,
        pending: Pending,
        event: Event,
        message_id: str | None = None,
        error: BaseException | None = None,
    ) -> None:
        """Fire the event that decides the key's outcome, give that outcome to the attempts that joined (if any
        did), and forget the key's attempts in flight unless a withdrawal is still being recorded (new attempts
        wait for it)."""
        if pending.fire(event) in FINAL:
            self._forget(slot, pending)
        future = pending.future
        if future is None or future.done():
            return
        if error is not None:
            future.set_exception(error)
            future.exception()  # nobody may be waiting any more: mark the outcome as seen
        else:
            future.set_result(message_id or "")

    def _forget(self, slot: Slot, pending: Pending) -> None:
        """Drop the key's entry (if it is still this one) and let attempts that waited for it go on."""
        if self._pending.get(slot) is pending:
            del self._pending[slot]
        if pending.gone is not None:
            pending.gone.set()

    def pending_count(self, session_id: str | None = None) -> int:
        """How many keys have attempts in flight (in this process); a withdrawn key whose attempts are answered is
        not counted while its withdrawal is still being recorded."""
        return sum(
            1
            for slot, pending in self._pending.items()
            if (session_id is None or slot[0] == session_id)
            and not (pending.state is State.WITHDRAWN and _answered(pending))
        )

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
