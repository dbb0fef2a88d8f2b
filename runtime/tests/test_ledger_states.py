"""The table of a key's states (`acp_v2_runtime.idempotency.states`): every transition in it can be reached and
leads on to an answer, a transition it does not list raises, the ledger moves a key only through it, and the helpers
page shows it as it is."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest

from acp_v2_runtime import idempotency
from acp_v2_runtime.idempotency import Cancelled, KeyLedger, MemoryStore
from acp_v2_runtime.idempotency.inflight import Pending
from acp_v2_runtime.idempotency.states import (
    FINAL,
    TRANSITIONS,
    Event,
    ImpossibleTransition,
    State,
    mermaid,
    step,
)

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "site" / "keyed-prompts-helpers.md"
PROMPT = [{"type": "text", "text": "hello"}]


def _reachable(start: State) -> set[State]:
    seen, todo = {start}, [start]
    while todo:
        here = todo.pop()
        for (source, _event), target in TRANSITIONS.items():
            if source is here and target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def test_every_transition_can_be_reached_and_leads_to_an_answer() -> None:
    reached = _reachable(State.NEW)
    assert reached == set(State)  # every state, so the source of every transition
    assert {event for _state, event in TRANSITIONS} == set(Event)  # every event is a transition somewhere
    for state in State:
        assert _reachable(state) & FINAL, f"{state.value} never leads to an answer"
    for (source, event), target in TRANSITIONS.items():
        assert step(source, event) is target
        assert source not in FINAL, "an answered key has no transitions left"


def test_a_transition_not_in_the_table_raises() -> None:
    missing = [(state, event) for state in State for event in Event if (state, event) not in TRANSITIONS]
    assert (State.SETTLED, Event.JOIN) in missing and (State.ONE_STEP, Event.CUT) in missing
    for state, event in missing:
        with pytest.raises(ImpossibleTransition) as raised:
            step(state, event)
        assert (raised.value.state, raised.value.event) == (state, event)
    pending = Pending(None, None, Event.SUBMIT)
    assert pending.state is State.CLAIMING and pending.fire(Event.CLAIMED) is State.HELD
    with pytest.raises(ImpossibleTransition):
        pending.fire(Event.COMMITTED)  # an insert that never went out cannot commit
    assert pending.state is State.HELD  # a refused event leaves the state as it was
    with pytest.raises(ImpossibleTransition):
        Pending(None, None, Event.JOIN)  # a key starts with its first attempt


def test_only_the_pending_record_sets_a_state() -> None:
    """The table decides every move: no ledger module assigns a key's state, or a flag in its place."""
    folder = Path(idempotency.__file__).parent
    found = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Attribute) and target.attr in ("state", "withdrawn", "inserting"):
                        found.append(f"{path.name}:{node.lineno}")
    # Pending.__init__ (the start) and Pending.fire; ImpossibleTransition keeps the state it was raised in
    assert [place.split(":")[0] for place in found] == ["inflight.py", "inflight.py", "states.py"], found


def test_the_ledger_fires_only_transitions_of_the_table(monkeypatch) -> None:
    """A held prompt inserted, a retry that joins it, and a held prompt cancelled: the transitions they make."""
    fired: list[tuple[State, Event, State]] = []
    fire = Pending.fire

    def record(self: Pending, event: Event) -> State:
        before = self.state
        after = fire(self, event)
        fired.append((before, event, after))
        return after

    monkeypatch.setattr(Pending, "fire", record)
    ledger = KeyLedger(MemoryStore())

    async def go() -> None:
        turn = asyncio.Event()

        async def prepare() -> None:
            await turn.wait()

        first = asyncio.ensure_future(ledger.submit("s", "k1", 1, prompt=PROMPT, prepare=prepare))
        await asyncio.sleep(0.01)
        retry = asyncio.ensure_future(ledger.submit("s", "k1", 2, prompt=PROMPT))
        await asyncio.sleep(0.01)
        turn.set()
        assert (await first).inserted and not (await retry).inserted
        held = asyncio.ensure_future(ledger.submit("s", "k2", 3, prompt=PROMPT, prepare=asyncio.Event().wait))
        await asyncio.sleep(0.01)
        assert ledger.cancel(3)
        with pytest.raises(Cancelled):
            await held
        while ledger._withdrawals:
            await asyncio.gather(*ledger._withdrawals)

    asyncio.run(go())
    # The start (new to claiming, on submit) is made by Pending's constructor, which this does not see.
    assert [(b.value, e.value, a.value) for b, e, a in fired] == [
        ("claiming", "claimed", "held"),
        ("held", "join", "held"),
        ("held", "prepared", "inserting"),
        ("inserting", "committed", "inserted"),
        ("claiming", "claimed", "held"),
        ("held", "cancel", "withdrawing"),
        ("withdrawing", "stopped", "withdrawing"),
        ("withdrawing", "fresh", "withdrawn"),
        ("withdrawn", "withdrawal_ended", "settled"),
    ]


def test_the_helpers_page_shows_the_table() -> None:
    """The page's state diagram is `mermaid()` exactly: a change to the table without the page's is caught here."""
    page = PAGE.read_text(encoding="utf-8")
    section = page.split("### The states of a key in flight", 1)[1].split("\n### ", 1)[0]
    diagram = section.split("```mermaid\n", 1)[1].split("```", 1)[0]
    assert diagram == mermaid(), "paste the output of `python -m acp_v2_runtime.idempotency` into the page"
    for state in State:
        if state is not State.NEW:
            assert f"`{state.value}`" in section, f"the page does not say what {state.value} is"
