"""A held prompt cancelled while the store does not answer (issue 50, item 8).

The prompt is held (`prepare` runs, the claim is this process's), the store stops answering, and the claim was last
confirmed more than half a lease ago, so the cancel is not answered at once: the withdrawal's own store call is
tried for one bound. When it fails, the claim is still ours by its lease, so nobody else can have inserted: the
attempt gets -32800 (the proposal's answer for a withdrawn prompt), not the store's -32603, and the withdrawal
reaches the store once it answers again. Past the lease, another Agent may have taken the key over, so the store's
error stands.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from test_ledger_cancel_stall import SAFETY, Stall, StalledSQLiteStore, answered_in, settled, sqlite_place, withdrawals

from acp_v2_runtime.idempotency import Cancelled, KeyLedger
from acp_v2_runtime.idempotency.keys import StoreUnavailable
from acp_v2_runtime.idempotency.states import State

__all__ = ["sqlite_place"]  # a fixture, used by name
PROMPT = [{"type": "text", "text": "hello"}]
BOUND = 0.5  # the ledger's bound for one store call: short, the test waits for one
LEASE = 60.0  # long: no heartbeat renews the claim while the test runs


@pytest.mark.parametrize(("passed", "answer"), [(0.6, Cancelled), (1.1, StoreUnavailable)], ids=["in lease", "past"])
def test_a_held_prompt_cancelled_on_a_stalled_store(sqlite_place, passed, answer):
    stall = Stall("withdraw")
    store = StalledSQLiteStore(sqlite_place.where, stall, answer_timeout_seconds=BOUND, lease_seconds=LEASE)
    sqlite_place.opened.append(store)
    offset = [0.0]
    ledger = KeyLedger(store, clock=lambda: time.monotonic() + offset[0])
    sid = sqlite_place.session()

    async def go():
        holding = asyncio.Event()

        async def held() -> None:
            holding.set()
            await asyncio.Event().wait()  # only the cancel ends it

        first = asyncio.ensure_future(ledger.submit(sid, "k", 1, prompt=PROMPT, prepare=held, write=sqlite_place.write))
        await asyncio.wait_for(holding.wait(), SAFETY)
        assert [p.state for p in ledger._pending.values()] == [State.HELD]
        offset[0] += passed * LEASE  # the claim was confirmed that long ago (a fraction of its lease)
        stall.go.clear()
        try:
            assert ledger.cancel(1)
            outcome, _ = await answered_in(first, time.monotonic())
        finally:
            stall.go.set()
        await settled(ledger)
        return outcome

    outcome = asyncio.run(go())
    assert isinstance(outcome, answer), repr(outcome)
    assert sqlite_place.messages() == 0
    if answer is Cancelled:
        assert withdrawals(sqlite_place, sid) == 1  # the withdrawal reached the store once it answered again
