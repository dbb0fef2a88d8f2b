"""The states of a key in flight in one ledger (one process), and the one table of the transitions between them.

Every event the ledger sees for a key (an attempt, a cancel, a store's answer, a failure) is a transition through
`TRANSITIONS`: the ledger fires the event (`Pending.fire`) and acts on the state the table gives, and an event that
the table does not allow in the key's state raises `ImpossibleTransition`. `mermaid()` draws the table; the docs'
diagram is that drawing (`python -m acp_v2_runtime.idempotency` prints it).
"""

from __future__ import annotations

import enum


class State(enum.Enum):
    """Where a key with attempts in flight in this process stands."""

    __hash__ = object.__hash__  # Enum's own hash is Python code: the table is looked up on every keyed prompt

    NEW = "new"  # no attempt of the key in flight here (only the start of the table)
    CLAIMING = "claiming"  # a task asks the store for the key's claim, or waits while another process holds it
    ONE_STEP = "one_step"  # one store call claims the key and inserts its message, nothing coming before
    HELD = "held"  # this process holds the claim and `prepare` runs
    INSERTING = "inserting"  # the store call that inserts the message (`record`) is under way, the claim held
    RELEASING = "releasing"  # the claim is given back after an error: the attempts get that error
    WITHDRAWING = "withdrawing"  # cancelled: the withdrawal's store call decides the answer
    WITHDRAWN = "withdrawn"  # cancelled with the claim surely ours: answered -32800, the withdrawal still going in
    INSERTED = "inserted"  # answered: this process inserted the message
    SETTLED = "settled"  # answered: another attempt's messageId, an error or -32800


class Event(enum.Enum):
    """What happens to a key in flight."""

    __hash__ = object.__hash__

    SUBMIT = "submit"  # the key's first attempt here, inserted by a task of its own
    SUBMIT_ONE_STEP = "submit_one_step"  # the key's first attempt here, claimed and inserted in one store call
    JOIN = "join"  # another attempt of the key in flight joins it (and gets its outcome)
    BUSY = "busy"  # the one-step call found the key claimed by another process
    CLAIMED = "claimed"  # the store gave this process the key's claim
    PREPARED = "prepared"  # `prepare` returned: the insert goes out
    LEASE_LOST = "lease_lost"  # the insert found the lease run out and the key taken over: wait for the new owner
    RELEASE = "release"  # `prepare`, `write` or the store failed while the claim was ours, or a withdrawal came first
    COMMITTED = "committed"  # this process's insert committed
    RECORDED = "recorded"  # the store holds the key's message from another attempt: its messageId
    FAILED = "failed"  # an error answers every attempt (the store's, `write`'s, a stall's bound, a reused key, ...)
    CANCEL = "cancel"  # `cancel` or `cancel_session`
    CUT = "cut"  # a cancel that cut the key's store call off before its COMMIT
    STOPPED = "stopped"  # the insertion task ended cancelled (by a withdrawal, or from outside)
    FRESH = "fresh"  # the withdrawal found the claim confirmed less than half a lease ago: -32800 at once
    WITHDRAWAL_ENDED = "withdrawal_ended"  # the withdrawal's store call ended (-32800), or its time ran out


class ImpossibleTransition(RuntimeError):
    """An event the table does not allow in the key's state: a bug in the ledger, never a Client's doing."""

    def __init__(self, state: State, event: Event) -> None:
        super().__init__(f"no transition for {event.value} in {state.value}")
        self.state = state
        self.event = event


S, E = State, Event
# (state, event) -> the next state; a pair not listed cannot happen. Read top to bottom it is the life of a key.
TRANSITIONS: dict[tuple[State, Event], State] = {
    (S.NEW, E.SUBMIT): S.CLAIMING,
    (S.NEW, E.SUBMIT_ONE_STEP): S.ONE_STEP,
    (S.ONE_STEP, E.JOIN): S.ONE_STEP,
    (S.ONE_STEP, E.CANCEL): S.ONE_STEP,  # the call that may insert is under way: the attempts get its outcome
    (S.ONE_STEP, E.BUSY): S.CLAIMING,
    (S.ONE_STEP, E.COMMITTED): S.INSERTED,
    (S.ONE_STEP, E.RECORDED): S.SETTLED,
    (S.ONE_STEP, E.FAILED): S.SETTLED,
    (S.CLAIMING, E.JOIN): S.CLAIMING,
    (S.CLAIMING, E.CLAIMED): S.HELD,
    (S.CLAIMING, E.RECORDED): S.SETTLED,
    (S.CLAIMING, E.RELEASE): S.RELEASING,
    (S.CLAIMING, E.FAILED): S.SETTLED,
    (S.CLAIMING, E.CANCEL): S.WITHDRAWING,
    (S.CLAIMING, E.CUT): S.WITHDRAWING,
    (S.CLAIMING, E.STOPPED): S.WITHDRAWING,
    (S.HELD, E.JOIN): S.HELD,
    (S.HELD, E.PREPARED): S.INSERTING,
    (S.HELD, E.RELEASE): S.RELEASING,
    (S.HELD, E.CANCEL): S.WITHDRAWING,
    (S.HELD, E.STOPPED): S.WITHDRAWING,
    (S.INSERTING, E.JOIN): S.INSERTING,
    (S.INSERTING, E.CANCEL): S.INSERTING,  # its COMMIT may be on its way: the attempts get its outcome
    (S.INSERTING, E.CUT): S.WITHDRAWING,
    (S.INSERTING, E.COMMITTED): S.INSERTED,
    (S.INSERTING, E.RECORDED): S.SETTLED,
    (S.INSERTING, E.LEASE_LOST): S.CLAIMING,
    (S.INSERTING, E.RELEASE): S.RELEASING,
    (S.INSERTING, E.FAILED): S.SETTLED,  # withdrawn on another Agent before the insert
    (S.RELEASING, E.JOIN): S.RELEASING,
    (S.RELEASING, E.FAILED): S.SETTLED,
    (S.RELEASING, E.CANCEL): S.WITHDRAWING,
    (S.RELEASING, E.STOPPED): S.WITHDRAWING,
    (S.WITHDRAWING, E.STOPPED): S.WITHDRAWING,
    (S.WITHDRAWING, E.RELEASE): S.WITHDRAWING,  # `prepare` turned the cancel into another error: that is the answer
    (S.WITHDRAWING, E.FRESH): S.WITHDRAWN,
    (S.WITHDRAWING, E.RECORDED): S.SETTLED,  # the message went in before the withdrawal reached the store
    (S.WITHDRAWING, E.FAILED): S.SETTLED,
    (S.WITHDRAWING, E.WITHDRAWAL_ENDED): S.SETTLED,
    (S.WITHDRAWN, E.WITHDRAWAL_ENDED): S.SETTLED,
}
del S, E

WITHDRAWAL = frozenset({State.WITHDRAWING, State.WITHDRAWN})
"""A withdrawal of the key is being recorded: a cancel is answered already, a new attempt waits for it to end."""
FINAL = frozenset({State.INSERTED, State.SETTLED})
"""Every attempt is answered and the key is no longer in flight."""


def step(state: State, event: Event) -> State:
    """The state that `event` leads to from `state`; raises ImpossibleTransition if it cannot happen there."""
    try:
        return TRANSITIONS[state, event]
    except KeyError:
        raise ImpossibleTransition(state, event) from None


def mermaid() -> str:
    """The table as a Mermaid flowchart, top to bottom: one arrow per (state, next state) with the events that lead
    along it, in the table's order; an event that leaves the state as it is (an attempt joining, say) is written
    in the state's box after ↺ rather than drawn as a loop, and the states that answer every attempt have a thick
    border."""
    edges: dict[tuple[State, State], list[str]] = {}
    stays: dict[State, list[str]] = {}
    for (source, event), target in TRANSITIONS.items():
        if source is target:
            stays.setdefault(source, []).append(event.value)
        else:
            edges.setdefault((source, target), []).append(event.value)

    def box(state: State) -> str:
        if state is State.NEW:
            return "start((start))"
        kept = stays.get(state)
        label = f"{state.value}<br/><small>↺ {', '.join(kept)}</small>" if kept else state.value
        return f'{state.value}("{label}")'

    # A flowchart, not a stateDiagram: its layout keeps the labels of many arrows apart, and the loops an event
    # makes on its own state are words in the box, so the drawing fits the page's column.
    # Close together, so that it needs little shrinking to fit the page's column; on a phone the page keeps it
    # at a readable width and scrolls it sideways (the wide-diagram box of site/stylesheets/extra.css).
    lines = ["---", "config:", "  flowchart:", "    nodeSpacing: 8", "    rankSpacing: 30", "---", "flowchart TB"]
    drawn: set[State] = set()
    for (source, target), events in edges.items():
        ends = []
        for state in (source, target):
            ends.append(box(state) if state not in drawn else ("start" if state is State.NEW else state.value))
            drawn.add(state)
        lines.append(f"    {ends[0]} -->|{', '.join(events)}| {ends[1]}")
    # The states that answer every attempt are drawn with a thick border, not led to an exit of their own.
    final = ",".join(state.value for state in State if state in FINAL)
    lines += ["    classDef final stroke-width:4px,stroke-dasharray:0", f"    class {final} final"]
    return "\n".join(lines) + "\n"
