"""The invariants a history must keep, judged by what each Client was told against what the store finally holds.

Each check returns `Violation`s naming its invariant (`INVARIANTS` says what each one means), the attempts
involved and what was seen. The answer bound is judged from the moment nothing the kit did could still hold the
attempt up: a hold released, a stall over for an attempt whose work began before it, the lease run out after the
death of a process carrying another attempt of the key.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from acp_v2_schema.protocol import KnownErrorCode as Code

from .run import Attempt, History

INVARIANTS = {
    "at-most-one": "at most one message is stored per (session, key), whatever the faults",
    "errors-mean-nothing": "a key whose attempts all got error answers has no stored message",
    "success-names-stored": "every success of a key (and of an unkeyed prompt) names the stored messageId",
    "no-insert-after-cancel": "no -32800 is followed by an insert, unless an attempt of the submission sent after"
    " the cancel succeeded (or got no answer: it may have)",
    "reuse-never-inserts": "a key reused with other content after it was recorded never inserts that content",
    "answered-within-bound": "every attempt on a live connection is answered within the stated bound",
    "no-second-round": "no retry, restart or failover starts a second round of work: each round of work an Agent"
    " process reports for a session follows a new user message it reported",
    "protocol": "every line is valid JSON-RPC of the spec's types, and no key appears in updates or listings",
}


@dataclass(frozen=True)
class Violation:
    """One broken invariant: its name, what was seen, and the step numbers of the attempts involved."""

    invariant: str
    detail: str
    steps: tuple[int, ...] = ()


def check(history: History, *, bound: float, lease: float) -> list[Violation]:
    """Every violation of the history, in the order of INVARIANTS."""
    found: list[Violation] = [Violation("protocol", problem) for problem in history.problems]
    found += _keys(history)
    found += _bound(history, bound, lease)
    found += _rounds(history)
    order = list(INVARIANTS)
    return sorted(found, key=lambda v: order.index(v.invariant))


def _stored_by_content(history: History, session: int) -> dict[str, list[str]]:
    table: dict[str, list[str]] = defaultdict(list)
    for message_id, content in history.stored.get(session, []):
        table[content].append(message_id)
    return table


def _describe(attempt: Attempt) -> str:
    told = {"ok": f"messageId {attempt.message_id!r}", "none": "no answer"}.get(attempt.outcome)
    return told or f"error {attempt.code} ({_code_name(attempt.code)})"


def _keys(history: History) -> list[Violation]:
    found: list[Violation] = []
    groups: dict[tuple[int, str | None, str], list[Attempt]] = defaultdict(list)
    for attempt in history.attempts:  # unkeyed prompts: one group each
        groups[(attempt.session, attempt.key, attempt.content if attempt.key is None else "")].append(attempt)
    for (session, key, _), attempts in groups.items():
        contents = _stored_by_content(history, session)
        own = {a.content for a in attempts}
        stored = [mid for content in sorted(own) for mid in contents.get(content, [])]
        steps = tuple(a.n for a in attempts)
        what = f"key {key!r} in session {session}" if key else f"the unkeyed prompt of step #{attempts[0].n}"
        if len(stored) > 1:
            found.append(Violation("at-most-one", f"{what}: the store holds {len(stored)} messages {stored}", steps))
        if stored and all(a.outcome == "error" for a in attempts):
            codes = sorted({a.code for a in attempts if a.code is not None})
            found.append(
                Violation(
                    "errors-mean-nothing",
                    f"{what}: every attempt got an error {codes}, yet {stored[0]!r} is stored",
                    steps,
                )
            )
        for attempt in attempts:
            if attempt.outcome == "ok" and attempt.message_id not in stored:
                held = f"the store holds {stored}" if stored else "the store holds no message for it"
                found.append(
                    Violation(
                        "success-names-stored",
                        f"{what}: step #{attempt.n} was answered messageId {attempt.message_id!r}, but {held}",
                        (attempt.n,),
                    )
                )
        for attempt in attempts:
            if attempt.code != Code.REQUEST_CANCELLED or attempt.content not in contents or attempt.answered is None:
                continue
            told = attempt.answered
            # The withdrawal began with a cancel of one of the key's attempts (or, with none, with this answer): an
            # attempt sent after that is a new try, which may insert. Inserted before the cancel was answered (a
            # success said so by then), or by such a later attempt: the -32800 was not followed by an insert.
            mine = {a.n for a in attempts}
            began = min([e.at for e in history.events if e.kind == "cancel" and e.step in mine] + [told])
            before = [a for a in attempts if a.outcome == "ok" and a.answered is not None and a.answered < told]
            later = [a for a in attempts if a.content == attempt.content and a.sent > began and a.outcome != "error"]
            if not before and not later:
                found.append(
                    Violation(
                        "no-insert-after-cancel",
                        f"{what}: step #{attempt.n} was told {_describe(attempt)} at"
                        f" +{attempt.answered - history.started:.2f}s, yet its content is stored as"
                        f" {contents[attempt.content][0]!r}, and no later attempt could have inserted it",
                        (attempt.n,),
                    )
                )
        for attempt in attempts:
            if not attempt.reuse or attempt.content not in contents:
                continue
            recorded = any(a.outcome == "ok" and a.answered is not None and a.answered < attempt.sent for a in attempts)
            if recorded:
                found.append(
                    Violation(
                        "reuse-never-inserts",
                        f"{what}: step #{attempt.n} reused the recorded key with other content, and that content"
                        f" was inserted as {contents[attempt.content][0]!r}",
                        (attempt.n,),
                    )
                )
    return found


def _free_at(history: History, attempt: Attempt, lease: float) -> float:
    """When nothing the kit did could still hold `attempt` up (its send time at the earliest)."""
    start = attempt.sent
    end = attempt.answered if attempt.answered is not None else float("inf")
    related = [
        a for a in history.attempts
        if a is attempt or (a.key is not None and a.key == attempt.key and a.session == attempt.session)
    ]  # fmt: skip

    def pending(a: Attempt, at: float) -> bool:
        return a.sent <= at and (a.answered is None or a.answered > at)

    for event in history.events:
        if event.at > end:
            continue
        for other in related:
            same_process = event.instance == other.instance and event.generation == other.generation
            if event.kind == "release" and other.hold and same_process and event.session == other.session:
                if pending(other, event.at):
                    start = max(start, event.at)
            elif event.kind in ("close", "kill") and same_process and other is not attempt and pending(other, event.at):
                start = max(start, event.at + lease)
            elif event.kind == "stall" and other.sent < event.at and pending(other, event.at):
                start = max(start, event.until)  # its COMMIT may have been sent before the stall: its outcome waits
            elif event.kind == "restart" and other.sent < event.at and pending(other, event.at):
                start = max(start, event.at)
    return start


def _bound(history: History, bound: float, lease: float) -> list[Violation]:
    found: list[Violation] = []
    deaths = {(e.instance, e.generation): e.at for e in history.events if e.kind in ("close", "kill")}
    for attempt in history.attempts:
        due = _free_at(history, attempt, lease) + bound
        died = deaths.get((attempt.instance, attempt.generation))
        if attempt.answered is None and died is not None and died <= due:
            continue  # its process was closed or killed in time: no answer is a lost answer, not a late one
        at = attempt.answered
        if at is None or at > due:
            seen = "no answer at all" if at is None else f"the answer at +{at - history.started:.2f}s"
            found.append(
                Violation(
                    "answered-within-bound",
                    f"step #{attempt.n} was due by +{due - history.started:.2f}s ({bound:g}s after nothing held it"
                    f" up), and got {seen}",
                    (attempt.n,),
                )
            )
    return found


def _rounds(history: History) -> list[Violation]:
    # Per process: a round may serve several messages queued together, but a round with no new message behind it
    # is work nobody asked that process for (a retry's, a resumed session's, another process's).
    return [
        Violation(
            "no-second-round",
            f"session {w.session}: agent {w.instance} (process {w.generation + 1}) reported {w.rounds} round(s) of"
            f" work (idle to running) after {w.fresh} new user message(s)",
        )
        for w in history.work
        if w.rounds > w.fresh
    ]


def _code_name(code: int | None) -> str:
    try:
        return Code(code).name.replace("_", " ").lower() if code is not None else "none"
    except ValueError:
        return "unknown code"
