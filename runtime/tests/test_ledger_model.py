"""Model-based exploration of the key ledger: three Agents (ledgers) on one store, driven by a Hypothesis state
machine through the events of `acp_v2_runtime.idempotency.states`: submit (or join), cancel, cancel_session, prepared
(a held prompt's `prepare` returns), crash (the insertion tasks are stopped), restart, lease_lost (every lease runs
out) and a stalled store (whose bound answers failed).

Each step runs on one event loop shared by the three ledgers; after a submit the loop runs until the attempt is
answered or has reached the store, so "pending" means the same to the test as to the ledger (an attempt that has
not reached the store yet is, to every other Agent, still on the network). The test plays a Client that keeps
the protocol: while a cancel for a key is outstanding it sends that key no new attempt, and a key's *round* (its
attempts, from the first sent while none is open until every one is answered or lost) is what one submission is.

Invariants, checked after every step:

1. at most one message per (session, key), ever;
2. every messageId answered is the message committed for that key;
3. a round with a -32800 answer (its key went through `withdrawing`) never gets a message: neither before that
   answer nor at any time after it;
4. at most one attempt is told it `inserted` the key's message;
5. every attempt is answered in bounded time (its key `settled` or `inserted`): a cancelled one within the store's
   bound, and at the end (holds released, stall lifted, leases lost) every attempt of a live Agent;
6. every key a ledger keeps is in flight: in a state of the table that is not `new`, `inserted` or `settled`, and
   one `withdrawn` has its attempts answered.

`make test` draws a modest number of runs per store kind; `make fuzz` (ACP_FUZZ_DRAWS) thousands. The counts are
printed at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
from acp_v2_schema.protocol import KnownErrorCode
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from ledger_places import Counted, Place, place_factory  # noqa: F401  (a fixture)

from acp_v2_runtime.idempotency import KeyLedger
from acp_v2_runtime.idempotency.sql import TABLE
from acp_v2_runtime.idempotency.states import FINAL, Event, State

pytestmark = pytest.mark.fuzz  # `make fuzz` runs it with thousands of runs
CANCELLED = int(KnownErrorCode.REQUEST_CANCELLED)
PROMPT = [{"type": "text", "text": "hello"}]
AGENTS = 3
SESSIONS = ("s0", "s1")
KEYS = ("k0", "k1")
LEASE = 30.0
# Short store timeouts, so a stall is answered quickly; the answer bound each store derives from them.
STORE_OPTIONS = {
    "memory": {},
    "sqlite": {"busy_timeout_seconds": 0.3, "statement_timeout_seconds": 0.5},
    "postgres": {"connect_timeout_seconds": 2, "statement_timeout_seconds": 0.5, "lock_timeout_seconds": 0.3},
}
SLACK = 10  # a busy 2-core machine: what is due within a bound may take this many times longer
RUNS = {"memory": 40, "sqlite": 30, "postgres": 25}  # per `make test`; the share of ACP_FUZZ_DRAWS under `make fuzz`
SHARE = {"memory": 0.5, "sqlite": 0.15, "postgres": 0.1}
STEPS = 16
COUNTS: Counter[str] = Counter()
# The rules that drive the machine, by the events of the state table they bring about.
RULE_EVENTS = {
    "submit": (Event.SUBMIT, Event.SUBMIT_ONE_STEP, Event.JOIN),
    "retry_elsewhere": (Event.SUBMIT, Event.JOIN),
    "submit_and_cancel_at_once": (Event.SUBMIT, Event.CANCEL),
    "cancel": (Event.CANCEL, Event.CUT),
    "cancel_session": (Event.CANCEL, Event.CUT),
    "prepared": (Event.PREPARED,),
    "crash": (Event.STOPPED,),
    "lose_leases": (Event.LEASE_LOST,),
    "stall_store": (Event.FAILED,),
}


def runs(kind: str) -> int:
    value = os.environ.get("ACP_FUZZ_DRAWS")
    return max(RUNS[kind], int(int(value) * SHARE[kind])) if value else RUNS[kind]


@dataclass
class Attempt:
    number: int
    agent: int
    slot: tuple[str, str]
    round: int
    task: asyncio.Task
    outcome: object = None  # a Submitted, or the exception it raised
    lost: bool = False  # its Agent crashed: the Client never hears back
    calls: int = 0  # store calls its Agent had made when it was sent

    @property
    def answered(self) -> bool:
        return self.task.done() and not self.lost


@dataclass
class Agent:
    ledger: KeyLedger
    view: Counted
    holds: dict[tuple[str, str], asyncio.Event] = field(default_factory=dict)
    alive: bool = True


def machine_for(place: Place):
    """A state machine class bound to one place (one store kind, one database)."""
    kind = place.kind
    bound = {"memory": 1.0}.get(kind) or place.store(**STORE_OPTIONS[kind]).answer_timeout_seconds

    class LedgerModel(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            COUNTS[f"{kind}: runs"] += 1
            self.loop = asyncio.new_event_loop()
            self.offset = [0.0]  # the fake clock's lead over the real one (leases of memory and SQLite)
            self.sessions = {name: place.session() for name in SESSIONS}
            self.stores: list[Any] = []
            self.agents = [self._agent(i) for i in range(AGENTS)]
            self.attempts: list[Attempt] = []
            self.rounds: dict[tuple[str, str], int] = {}  # the open round of each slot (absent: none open)
            self.next_round = 0
            self.cancelling: set[tuple[str, str]] = set()  # slots with a cancel sent in their open round
            self.withdrawn: set[int] = set()  # rounds with a -32800 answer
            self.message_round: dict[tuple[str, str], int | None] = {}  # the round open when the message appeared
            self.stall: Any = None

        # -- helpers ---------------------------------------------------------------------------------------

        def _clock(self) -> float:
            return time.time() + self.offset[0]

        def _monotonic(self) -> float:  # the ledgers' clock: a lease expiry is time passing for everyone
            return time.monotonic() + self.offset[0]

        def _agent(self, number: int) -> Agent:
            options = dict(STORE_OPTIONS[kind], lease_seconds=LEASE)
            if kind != "postgres":
                options["clock"] = self._clock
            store = place.store(**options) if kind != "memory" or not self.stores else self.stores[0]
            if kind == "memory":
                store.lease_seconds, store._clock = LEASE, self._clock  # the memory place shares one store
            self.stores.append(store)
            view = Counted(store)
            ledger = KeyLedger(view, owner=f"agent-{number}-{len(self.stores)}", clock=self._monotonic)
            return Agent(ledger, view)

        def _tag(self, slot: tuple[str, str]) -> str:
            return f"{self.sessions[slot[0]]}|{slot[1]}"

        def _run(self, condition, limit: float) -> bool:
            async def wait() -> bool:
                end = time.monotonic() + limit
                while not condition():
                    if time.monotonic() > end:
                        return False
                    await asyncio.sleep(0.002)
                return True

            return self.loop.run_until_complete(wait())

        def _open(self, slot: tuple[str, str]) -> list[Attempt]:
            return [a for a in self.attempts if a.slot == slot and not a.task.done() and not a.lost]

        def _reached(self, attempt: Attempt) -> bool:
            """Answered, or its ledger has been to the store for the key (so other Agents can see it)."""
            if attempt.task.done() or attempt.lost:
                return True
            session = attempt.slot[0]
            state = self.agents[attempt.agent]
            for (sid, _digest), pending in state.ledger._pending.items():
                seen = getattr(pending, "seen", attempt)  # a ledger without withdrawal counts: any store call
                if sid == self.sessions[session] and seen is not None:
                    return seen is not attempt or sum(state.view.calls.values()) > attempt.calls
            return False

        def _submit(self, agent: int, slot: tuple[str, str], hold: bool) -> Attempt:
            state = self.agents[agent]
            if slot not in self.rounds:
                self.rounds[slot] = self.next_round
                self.next_round += 1
            number = len(self.attempts)
            prepare = None
            if hold:
                event = state.holds.setdefault(slot, asyncio.Event())

                async def prepare() -> None:
                    await event.wait()

            coro = state.ledger.submit(
                self.sessions[slot[0]],
                slot[1],
                number,
                prompt=PROMPT,
                prepare=prepare,
                write=place.writer(self._tag(slot)),
            )
            task = self.loop.create_task(coro)
            attempt = Attempt(number, agent, slot, self.rounds[slot], task, calls=sum(state.view.calls.values()))
            self.attempts.append(attempt)
            COUNTS[f"{kind}: attempts"] += 1
            return attempt

        def _collect(self) -> None:
            """Read the answers that came in, and close rounds whose attempts are all answered or lost."""
            for attempt in self.attempts:
                if attempt.task.done() and not attempt.lost and attempt.outcome is None:
                    attempt.outcome = attempt.task.exception() or attempt.task.result()
                    if getattr(attempt.outcome, "code", None) == CANCELLED:
                        self.withdrawn.add(attempt.round)
                    COUNTS[f"{kind}: answers {_label(attempt.outcome)}"] += 1
            messages = place.message_ids()
            for slot in list(self.rounds) + [s for s in self.message_round if s not in self.rounds]:
                if slot not in self.message_round and messages.get(self._tag(slot)):
                    self.message_round[slot] = self.rounds.get(slot)
            for slot in list(self.rounds):
                if not self._open(slot):
                    del self.rounds[slot]
                    self.cancelling.discard(slot)

        # -- rules ---------------------------------------------------------------------------------------

        @rule(agent=st.integers(0, AGENTS - 1), session=st.sampled_from(SESSIONS), key=st.sampled_from(KEYS),
              hold=st.booleans())  # fmt: skip
        def submit(self, agent: int, session: str, key: str, hold: bool) -> None:
            """Event.SUBMIT, or Event.JOIN when the Agent has the key in flight; `hold` keeps it `held`."""
            slot = (session, key)
            if not self.agents[agent].alive or slot in self.cancelling:
                return
            attempt = self._submit(agent, slot, hold)
            limit = bound * SLACK
            assert self._run(lambda: self._reached(attempt), limit), f"attempt not in the store after {limit} s"
            self._collect()

        # Rules draw the same values whatever the state (an index, then taken modulo what there is): the state
        # depends on threads and timing, and Hypothesis requires the same choices to draw the same kinds of value.
        @rule(pick=st.integers(0, 64), agent=st.integers(0, AGENTS - 1), hold=st.booleans())
        def retry_elsewhere(self, pick: int, agent: int, hold: bool) -> None:
            """The Client fails over: another attempt of an open round, on any Agent (Event.JOIN or Event.SUBMIT)."""
            open_slots = sorted(slot for slot in self.rounds if slot not in self.cancelling)
            if not open_slots:
                return
            slot = open_slots[pick % len(open_slots)]
            self.submit(agent, slot[0], slot[1], hold)

        @rule(agent=st.integers(0, AGENTS - 1), session=st.sampled_from(SESSIONS), key=st.sampled_from(KEYS),
              whole_session=st.booleans())  # fmt: skip
        def submit_and_cancel_at_once(self, agent: int, session: str, key: str, whole_session: bool) -> None:
            """An early cancel (Event.CANCEL in `claiming`): in the same tick as the submit, before the ledger's task
            ran."""
            slot = (session, key)
            state = self.agents[agent]
            if not state.alive or slot in self.cancelling:
                return
            attempt = self._submit(agent, slot, hold=True)

            async def tick() -> None:
                await asyncio.sleep(0)  # submit registers the attempt; its task has not run
                if whole_session:
                    state.ledger.cancel_session(self.sessions[session])
                else:
                    state.ledger.cancel(attempt.number)

            self.cancelling.add(slot)
            self.loop.run_until_complete(tick())
            self._await_answer([attempt])

        @rule(pick=st.integers(0, 64))
        def cancel(self, pick: int) -> None:
            """Event.CANCEL (or Event.CUT) for one waiting attempt."""
            waiting = [a for a in self.attempts if not a.task.done() and not a.lost]
            if not waiting:
                return
            attempt = waiting[pick % len(waiting)]
            self.cancelling.add(attempt.slot)
            if self.agents[attempt.agent].ledger.cancel(attempt.number):
                self._await_answer([attempt])
            self._collect()

        @rule(agent=st.integers(0, AGENTS - 1), session=st.sampled_from(SESSIONS))
        def cancel_session(self, agent: int, session: str) -> None:
            """Event.CANCEL for every key of a session on one Agent."""
            state = self.agents[agent]
            if not state.alive:
                return
            mine = [a for a in self.attempts if a.agent == agent and a.slot[0] == session and not a.task.done()]
            self.cancelling.update(a.slot for a in mine)
            state.ledger.cancel_session(self.sessions[session])
            self._await_answer([a for a in mine if not a.lost and self._withdrawable(a)])

        def _withdrawable(self, attempt: Attempt) -> bool:
            # A prompt whose insertion is under way gets its messageId; the others must be answered now.
            return True

        def _await_answer(self, attempts: list[Attempt]) -> None:
            limit = bound * SLACK
            assert self._run(lambda: all(a.task.done() for a in attempts), limit), (
                f"a cancel unanswered after {limit} s"
            )
            self._collect()

        @rule(agent=st.integers(0, AGENTS - 1), session=st.sampled_from(SESSIONS), key=st.sampled_from(KEYS))
        def prepared(self, agent: int, session: str, key: str) -> None:
            """Event.PREPARED: the held prompts of a key on one Agent end their `prepare`."""
            event = self.agents[agent].holds.pop((session, key), None)
            if event is not None:
                event.set()
                self._run(lambda: False, 0.01)
                self._collect()

        @rule(agent=st.integers(0, AGENTS - 1), chance=st.integers(0, 3))
        def crash(self, agent: int, chance: int) -> None:
            """The Agent's process dies: its store calls fail from now on, its Client hears nothing more, and its
            insertion tasks are cancelled from outside (Event.STOPPED)."""
            state = self.agents[agent]
            if not state.alive or chance:  # one draw in four: a crash ends most of what a run could show
                return
            state.alive = False
            state.view.dead = True
            for attempt in self.attempts:
                if attempt.agent == agent and not attempt.task.done():
                    attempt.lost = True
                    attempt.task.cancel()
            for pending in list(state.ledger._pending.values()):
                if pending.task is not None:
                    pending.task.cancel()
            self._run(lambda: False, 0.02)
            self._collect()
            COUNTS[f"{kind}: crashes"] += 1

        @rule(agent=st.integers(0, AGENTS - 1))
        def restart(self, agent: int) -> None:
            if self.agents[agent].alive or self.stall is not None:  # opening a store needs the stalled lock
                return
            self.agents[agent] = self._agent(agent)

        @rule(chance=st.integers(0, 1))
        def lose_leases(self, chance: int = 0) -> None:
            """Every claim's lease runs out (as after a long stall or a crash), held ones included: Event.LEASE_LOST
            for an insert that finds it so."""
            if chance or (kind == "postgres" and self.stall is not None):  # the stall holds the table's lock
                return
            self.offset[0] += LEASE + 1  # the ledgers' clock, and the stores' (memory, SQLite)
            if kind == "postgres":
                import psycopg

                with psycopg.connect(place.where, autocommit=True, connect_timeout=5) as conn:
                    conn.execute(
                        f"UPDATE {TABLE} SET lease_until = clock_timestamp() - interval '1 second' "
                        "WHERE state = 'pending' AND owner IS NOT NULL"
                    )
            self._run(lambda: False, 0.01)
            self._collect()
            COUNTS[f"{kind}: lease expiries"] += 1

        @precondition(lambda self: kind != "memory" and self.stall is None)
        @rule()
        def stall_store(self) -> None:
            """Another connection holds the lock every store transaction needs, until `unstall_store`: calls end
            with Event.FAILED at the store's bound."""
            if kind == "sqlite":
                conn = sqlite3.connect(place.where, isolation_level=None)
                conn.execute("BEGIN IMMEDIATE")
            else:
                import psycopg

                conn = psycopg.connect(place.where, connect_timeout=5)
                conn.execute(f"LOCK TABLE {TABLE} IN ACCESS EXCLUSIVE MODE")
            self.stall = conn
            COUNTS[f"{kind}: stalls"] += 1

        @precondition(lambda self: self.stall is not None)
        @rule()
        def unstall_store(self) -> None:
            self._unstall()

        def _unstall(self) -> None:
            if self.stall is not None:
                with contextlib.suppress(Exception):
                    self.stall.rollback() if kind == "postgres" else self.stall.execute("ROLLBACK")
                self.stall.close()
                self.stall = None

        @rule()
        def wait(self) -> None:
            self._run(lambda: False, 0.03)
            self._collect()

        # -- invariants ------------------------------------------------------------------------------------

        @invariant()
        def checked(self) -> None:
            COUNTS[f"{kind}: steps"] += 1
            self._collect()
            messages = place.message_ids()
            inserted: Counter[tuple[str, str]] = Counter()
            for slot in {(s, k) for s in SESSIONS for k in KEYS}:
                ids = messages.get(self._tag(slot), [])
                assert len(ids) <= 1, f"{len(ids)} messages for one key"  # 1
                round_ = self.message_round.get(slot)
                assert not (ids and round_ is not None and round_ in self.withdrawn), (
                    "a round answered -32800 got a message"  # 3
                )
            for attempt in self.attempts:
                outcome = attempt.outcome
                if isinstance(outcome, str):
                    ids = messages.get(self._tag(attempt.slot), [])
                    assert ids == [str(outcome)], "a messageId answered for a message not committed"  # 2
                    if outcome.inserted:
                        inserted[attempt.slot] += 1
            assert all(count <= 1 for count in inserted.values()), "two attempts were told they inserted"  # 4

        @invariant()
        def in_flight(self) -> None:
            for number, agent in enumerate(self.agents):
                for pending in agent.ledger._pending.values():
                    state = pending.state
                    COUNTS[f"{kind}: in {state.value}"] += 1
                    assert state is not State.NEW and state not in FINAL, f"agent {number} keeps a key {state.value}"
                    if state is State.WITHDRAWN:
                        assert pending.future is None or pending.future.done(), "withdrawn, attempts unanswered"  # 6

        def teardown(self) -> None:
            try:
                # The end: every hold released, the stall lifted, leases run out; every live attempt is answered.
                self._unstall()
                for state in self.agents:
                    for event in state.holds.values():
                        event.set()
                self.lose_leases()
                limit = bound * SLACK * 2
                live = [a for a in self.attempts if not a.lost]
                assert self._run(lambda: all(a.task.done() for a in live), limit), f"unanswered after {limit} s"  # 5
                self._collect()
                self.checked()
            finally:
                for attempt in self.attempts:
                    attempt.task.cancel()
                with contextlib.suppress(Exception):
                    self.loop.run_until_complete(asyncio.sleep(0.05))
                self.loop.run_until_complete(self.loop.shutdown_default_executor())
                self.loop.close()
                for store in {id(s): s for s in self.stores}.values():
                    store.close()

    return LedgerModel


def _label(outcome: object) -> str:
    if isinstance(outcome, str):
        return "inserted" if getattr(outcome, "inserted", False) else "messageId"
    code = getattr(outcome, "code", None)
    return f"error {code}" if code is not None else f"error {type(outcome).__name__}"


def test_ledgers_on_one_store_keep_every_promise(place_factory, capsys):  # noqa: F811
    place: Place = place_factory()
    machine = machine_for(place)
    assert [name for name in RULE_EVENTS if not callable(getattr(machine, name, None))] == []
    started = time.monotonic()
    machine.TestCase.settings = settings(
        max_examples=runs(place.kind),
        stateful_step_count=STEPS,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[p for p in Phase if p is not Phase.shrink] if os.environ.get("ACP_FUZZ_SHRINK") != "1" else list(Phase),
        derandomize=os.environ.get("ACP_FUZZ_DRAWS") is None,  # `make test` runs the same interleavings each time
        database=None,
    )
    machine.TestCase().runTest()
    elapsed = time.monotonic() - started
    kind = place.kind
    counts = {name.split(": ", 1)[1]: n for name, n in sorted(COUNTS.items()) if name.startswith(f"{kind}: ")}
    with capsys.disabled():
        print(
            f"\nledger model ({kind}): {counts.get('runs', 0)} runs, {counts.get('steps', 0)} steps in {elapsed:.1f}s"
        )
        print(f"  {counts}")
