"""Store calls: how the key ledger runs a blocking store's calls in worker threads, in bounded time, and the gate
that keeps its -32603 answer true.

The ledger waits for a store call at most its bound (`store_timeout_seconds`), then answers -32603
(StoreUnavailable) and leaves the call running. That answer must mean that nothing was inserted, so every such call
runs behind a `CommitGate`: a store passes it just before COMMIT (`begin_commit`), and the waiter, once its bound has
passed, either gives up (the call then never commits) or, when the COMMIT was sent already, waits for its outcome.
A cancel of the ledger gives up on the gate of the call under way in the same way, so that a prompt whose COMMIT was
not sent can be answered -32800 at once (see `KeyLedger.cancel`).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from .keys import StoreUnavailable

T = TypeVar("T")

_GATE = threading.local()
# One lock for every gate: it is held for a few steps at most, and a lock of each gate's own would be made and freed
# on every store call.
_GATES_LOCK = threading.Lock()


class CommitGate:
    """What a store call's worker thread and the side waiting for it agree on, so that an answer of -32603
    (StoreUnavailable) is always true: the call commits nothing after it.

    The worker calls `enter` just before it sends COMMIT; the waiter calls `give_up` when its bound has passed.
    Both hold the gates' lock, so exactly one of them wins: either the worker finds the deadline passed or the
    waiter gone and rolls back, or it is committing, and the waiter does not answer an error but waits for the
    call's result (a COMMIT whose outcome is unknown can succeed). The bound thus holds for everything except a
    COMMIT already sent, whose outcome the answer waits for.
    """

    __slots__ = ("_abandoned", "_committing", "at", "bound", "guard")

    def __init__(self, at: float, guard: float | None, bound: float) -> None:
        self.at = at  # time.monotonic() after which the worker may no longer start a COMMIT
        self.guard = guard  # how long after its transaction began a server may commit (None: no server guard)
        self.bound = bound  # the waiter's bound, for the error's text
        self._committing = False
        self._abandoned = False

    def enter(self) -> float | None:
        """The worker, just before COMMIT: raise StoreUnavailable if the deadline has passed or the waiter has given
        up; else note that COMMIT is being sent and return the server guard (or None)."""
        with _GATES_LOCK:
            if self._abandoned or time.monotonic() >= self.at:
                raise StoreUnavailable(self.bound)
            self._committing = True
        return self.guard

    def give_up(self) -> bool:
        """The waiter, once its bound has passed (or the ledger, on a cancel): True when it may answer an error (the
        worker will then never commit); False when a COMMIT was sent already, so the waiter must wait for the call's
        result."""
        with _GATES_LOCK:
            if self._committing:
                return False
            self._abandoned = True
        return True

    @property
    def abandoned(self) -> bool:
        """Whether the waiting side gave up on this gate: the call's transactions never commit."""
        return self._abandoned


@contextmanager
def commit_deadline(at: float, guard_seconds: float | None, bound: float) -> Iterator[CommitGate]:
    """Within this block (in this thread), a store transaction commits only through a new gate (`CommitGate`)
    whose deadline is `at` (time.monotonic()); the block gives the gate, for a waiter in another thread.

    A server store also makes the server refuse a commit more than `guard_seconds` after the transaction began (by
    the server's clock), which covers a server that stalls between the check and the COMMIT's arrival.
    """
    gate = CommitGate(at, guard_seconds, bound)
    _GATE.gate = gate
    try:
        yield gate
    finally:
        _GATE.gate = None


def run_gated(gate: CommitGate, function: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """`function(*args)` with `gate` guarding its commits, without a generator's cost (a store call's)."""
    local = _GATE
    local.gate = gate
    try:
        return function(*args)
    finally:
        local.gate = None


def begin_commit() -> float | None:
    """What a store calls just before it sends COMMIT: passes this thread's gate (`CommitGate.enter`), if any,
    raising StoreUnavailable when it may not commit; returns the server guard in seconds, or None."""
    gate = getattr(_GATE, "gate", None)
    if gate is None:
        return None
    return gate.enter()


class CallHolder(Protocol):
    """What `StoreCalls._call` tells about the call under way (the ledger's record of a key's attempts): `gate` is
    that call's CommitGate while it runs (None between calls, and for a call with no gate)."""

    gate: CommitGate | None


class StoreCalls:
    """The ledger's way of calling its store (KeyLedger is one): `_bound` (seconds, or None for no bound) and
    `_threaded` (whether calls go to a worker thread) are set by the ledger."""

    _bound: float | None
    _threaded: bool

    def _start_call(self, function: Callable[..., T], *args: Any) -> tuple[asyncio.Future[T], CommitGate | None]:
        """Start a store call in a worker thread; with a bound, also the gate its COMMIT must pass (see CommitGate),
        which the waiter gives up on once the bound has passed."""
        loop = asyncio.get_running_loop()
        bound = self._bound
        if bound is None:
            return loop.run_in_executor(None, function, *args), None
        # The transaction must send COMMIT within 0.6 of the bound and the server commit within 0.3 of it after the
        # transaction began, so a commit normally lands before the ledger stops waiting (0.9 < 1); one that does
        # not is waited for (the gate), as its outcome is unknown.
        gate = CommitGate(time.monotonic() + 0.6 * bound, 0.3 * bound, bound)
        return loop.run_in_executor(None, run_gated, gate, function, args), gate

    async def _call(
        self,
        function: Callable[..., T],
        *args: Any,
        final: bool = False,
        late: Callable[[T], None] | None = None,
        holder: CallHolder | None = None,
    ) -> T:
        """Run a store call; blocking stores run in a worker thread, and a cancel waits for that call to end, unless
        the canceller gave up on the call's gate (`holder.gate`, set while the call runs): then the call can commit
        nothing, and the cancel is raised at once.

        `final` marks the call that may insert the message: a cancel that arrives during it is dropped, because
        once the message may be in, the attempts must get its messageId, never -32800 (unless the canceller gave up
        on its gate, as above: then the message is not in, and never will be through this call).

        The wait is bounded (`store_timeout_seconds`): past it, StoreUnavailable (-32603) is raised and the call is
        left to end on its own. A transaction of it that is still under way then commits nothing (its COMMIT must
        pass the gate made here, which this side gives up on), and `late`, if given, gets the result of a call that
        ends after all. The one exception: a COMMIT sent before the bound passed may still succeed, so then this
        waits for the call's result, however long it takes, rather than answer an error that may be untrue.
        """
        if not self._threaded:
            return function(*args)
        loop = asyncio.get_running_loop()
        bound = self._bound
        future, gate = self._start_call(function, *args)
        if holder is not None:
            holder.gate = gate
        deadline = None if bound is None else loop.time() + bound
        cancelled = False
        try:
            while not future.done():
                if deadline is not None and loop.time() >= deadline:
                    assert gate is not None  # a deadline means a bound, and a bound a gate
                    if gate.give_up():
                        future.add_done_callback(lambda done: _late(done, late))
                        if cancelled and not final:
                            # The caller was cancelled while it waited: that, not the store's silence, is its
                            # outcome. (Raised as StoreUnavailable, the cancel was lost: a lease heartbeat cancelled
                            # during a frozen store's call went on renewing its claim after the attempt had been
                            # answered.)
                            raise asyncio.CancelledError
                        raise StoreUnavailable(bound)  # type: ignore[arg-type]  # a deadline means a bound
                    deadline = None  # its COMMIT was sent: the answer is that COMMIT's outcome
                try:
                    await _wait_done(future, None if deadline is None else deadline - loop.time())
                except asyncio.CancelledError:
                    if gate is not None and gate.abandoned:
                        # The canceller gave up on the gate first (the withdrawal of a prompt whose COMMIT was not
                        # sent): nothing of the call will commit, so there is nothing to wait for.
                        future.add_done_callback(lambda done: _late(done, late))
                        raise
                    cancelled = True  # a cancel of this task: the store call still runs to its end, so wait for it
        finally:
            if holder is not None:
                holder.gate = None
        if cancelled and not final:
            raise asyncio.CancelledError
        return future.result()


async def _wait_done(future: asyncio.Future[Any], timeout: float | None) -> None:
    """Wait until `future` is done or `timeout` seconds pass, never cancelling it; a cancel of the caller raises.

    Not asyncio.wait_for, which on Python 3.11 can drop a cancel that arrives as the future ends (the caller would
    go on as if never cancelled), and not asyncio.wait, which costs a store call's worth of bookkeeping."""
    if future.done():
        return
    loop = asyncio.get_running_loop()
    waiter = loop.create_future()

    def wake(_: object = None) -> None:
        if not waiter.done():
            waiter.set_result(None)

    future.add_done_callback(wake)
    timer = None if timeout is None else loop.call_later(max(timeout, 0.0), wake)
    try:
        await waiter
    finally:
        if timer is not None:
            timer.cancel()
        future.remove_done_callback(wake)


def _quietly(function: Callable[..., Any], *args: Any) -> None:
    with contextlib.suppress(Exception):  # nobody waits for it: a failure leaves the lease to run out
        function(*args)


def _late(done: asyncio.Future[Any], late: Callable[[Any], None] | None) -> None:
    """A store call that ended after the ledger stopped waiting: hand its result on, mark its error as seen."""
    if done.cancelled():
        return
    if done.exception() is None and late is not None:
        late(done.result())
