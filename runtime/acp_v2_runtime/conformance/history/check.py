"""The invariants a history must keep, judged by what each Client was told against what the store finally holds.

Each check returns `Violation`s naming its invariant (`INVARIANTS` says what each one means), the attempts
involved and what was seen. The answer bound is judged from the moment nothing the kit did could still hold the
attempt up: a hold released, a stall over for an attempt whose work began before it, the lease run out after the
death of a process carrying another attempt of the key.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from acp_v2_schema.protocol import KnownErrorCode as Code

from .run import Attempt, History

INVARIANTS = {
    "at-most-one": "at most one message is stored per (session, key), whatever the faults",
    "distinct-submissions": "two submissions never share a message (keys that differ only in case, white space or"
    " Unicode normalisation, one key in two sessions, no key or a null one, the same text under a new key), and a"
    " new submission is never refused -32602 as a reused key",
    "malformed-refused": "a prompt whose key is not a valid key is answered -32602 and inserts nothing",
    "errors-mean-nothing": "a key whose attempts all got error answers has no stored message",
    "success-names-stored": "every success of a key (and of an unkeyed prompt) names the stored messageId",
    "no-insert-after-cancel": "no -32800 is followed by an insert, unless an attempt of the submission sent after"
    " the cancel succeeded (or got no answer: it may have)",
    "reuse-never-inserts": "a key reused with other content after it was recorded never inserts that content",
    "answered-within-bound": "every attempt on a live connection is answered within the stated bound",
    "no-second-round": "no retry, restart or failover starts a second round of work: each round of work an Agent"
    " process reports for a session follows a new user message it reported",
    "transport-not-refusal": "a failure the network made (over URLs, a fault of the kit's proxy on the attempt) is"
    " never told to the Client as an error answer, which would say 'not inserted': the Client is told nothing",
    "protocol": "every line is valid JSON-RPC of the spec's types, and no key appears in updates or listings",
}


DEATHS = ("close", "kill", "lost")
"""The events that end an instance's process (over URLs, `lost`: its bridge ended when its connection failed)."""


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
    found += _transport(history)
    found += _rounds(history)
    order = list(INVARIANTS)
    return sorted(found, key=lambda v: order.index(v.invariant))


def _describe(attempt: Attempt) -> str:
    told = {"ok": f"messageId {attempt.message_id!r}", "none": "no answer"}.get(attempt.outcome)
    return told or f"error {attempt.code} ({_code_name(attempt.code)})"


def submissions(history: History) -> dict[tuple[Any, ...], list[Attempt]]:
    """The attempts of each submission: a key's in its session (compared exactly), or one prompt without a valid
    key."""
    groups: dict[tuple[Any, ...], list[Attempt]] = defaultdict(list)
    for attempt in history.attempts:
        ident = (attempt.session, attempt.key) if attempt.key is not None else (attempt.session, None, attempt.n)
        groups[ident].append(attempt)
    return groups


def _name(attempts: list[Attempt]) -> str:
    first = attempts[0]
    if first.key is not None:
        return f"key {first.key!r} in session {first.session}"
    what = "the malformed-key prompt" if first.malformed else "the unkeyed prompt"
    return f"{what} of step #{first.n}"


def _all_error(attempts: list[Attempt]) -> bool:
    return all(a.outcome == "error" for a in attempts)


def _keys(history: History) -> list[Violation]:
    found: list[Violation] = []
    groups = submissions(history)
    for session in sorted({a.session for a in history.attempts}):
        stored = history.stored.get(session, [])
        mine = {i: g for i, g in groups.items() if g[0].session == session}
        found += _session(history, session, stored, mine)
    return found


def _session(
    history: History, session: int, stored: list[tuple[str, str]], groups: dict[tuple[Any, ...], list[Attempt]]
) -> list[Violation]:
    """The key invariants in one session. A stored message belongs to the submission an answer named it to; one no
    answer names, to the only submission without a message of its own that sent its text."""
    found: list[Violation] = []
    stored_ids = {mid for mid, _ in stored}
    owners: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    for ident, attempts in groups.items():
        for mid in dict.fromkeys(a.message_id for a in attempts if a.outcome == "ok"):
            owners[str(mid)].append(ident)
    named = {i: [mid for mid, _ in stored if i in owners.get(mid, ())] for i in groups}
    unclaimed: dict[str, list[str]] = defaultdict(list)
    for mid, text in stored:
        if mid not in owners:
            unclaimed[text].append(mid)
    inserted = {i: list(named[i]) for i in groups}
    for text, mids in unclaimed.items():
        senders = [i for i, g in groups.items() if any(a.content == text for a in g)]
        free = [i for i in senders if not named[i]]
        possible = [i for i in free if not _all_error(groups[i])]
        if len(free) == 1:
            inserted[free[0]] += mids
        elif len(mids) > len(free):
            steps = tuple(a.n for i in senders for a in groups[i])
            found.append(
                Violation(
                    "at-most-one",
                    f"session {session}: {len(mids)} stored messages {mids} with the text"
                    f" {text!r}, which {len(free)} submission(s) without a message of their own sent",
                    steps,
                )
            )
        elif len(mids) > len(possible):
            erred = [i for i in free if i not in possible]
            found.append(
                Violation(
                    "errors-mean-nothing",
                    f"session {session}: {len(mids)} stored messages {mids} with the text {text!r}, and only"
                    f" {len(possible)} submission(s) sending it that were not told an error"
                    f" ({', '.join(_name(groups[i]) for i in erred)} got only errors)",
                    tuple(a.n for i in erred for a in groups[i]),
                )
            )
    for mid, idents in owners.items():
        if len(idents) > 1 and mid in stored_ids:
            told = "; ".join(
                f"{_name(groups[i])} (step{'s' if len(groups[i]) > 1 else ''}"
                f" {', '.join('#' + str(a.n) for a in groups[i] if a.message_id == mid)})"
                for i in idents
            )
            found.append(
                Violation(
                    "distinct-submissions",
                    f"one message {mid!r} was answered to {len(idents)} submissions: {told}",
                    tuple(a.n for i in idents for a in groups[i]),
                )
            )
    for ident, attempts in groups.items():
        found += _submission(history, attempts, inserted[ident], stored)
    return found


def _submission(
    history: History, attempts: list[Attempt], inserted: list[str], stored: list[tuple[str, str]]
) -> list[Violation]:
    """The invariants of one submission, given the stored messages that are its own (`inserted`)."""
    found: list[Violation] = []
    what = _name(attempts)
    steps = tuple(a.n for a in attempts)
    stored_ids = {mid for mid, _ in stored}
    if attempts[0].malformed:
        attempt = attempts[0]
        if attempt.outcome == "ok" or (attempt.outcome == "error" and attempt.code != Code.INVALID_PARAMS):
            found.append(Violation("malformed-refused", f"{what} was told {_describe(attempt)}, not -32602", steps))
        if inserted:
            found.append(Violation("malformed-refused", f"{what} was inserted as {inserted[0]!r}", steps))
        return found
    if len(inserted) > 1:
        found.append(Violation("at-most-one", f"{what}: the store holds {len(inserted)} messages {inserted}", steps))
    if inserted and _all_error(attempts):
        codes = sorted({a.code for a in attempts if a.code is not None})
        found.append(
            Violation(
                "errors-mean-nothing",
                f"{what}: every attempt got an error {codes}, yet {inserted[0]!r} is stored",
                steps,
            )
        )
    for attempt in attempts:
        if attempt.outcome == "ok" and attempt.message_id not in stored_ids:
            held = f"the store holds {inserted}" if inserted else "the store holds no message for it"
            found.append(
                Violation(
                    "success-names-stored",
                    f"{what}: step #{attempt.n} was answered messageId {attempt.message_id!r}, but {held}",
                    steps,
                )
            )
    if len({a.content for a in attempts}) == 1:
        for attempt in attempts:
            if attempt.code == Code.INVALID_PARAMS:
                found.append(
                    Violation(
                        "distinct-submissions",
                        f"{what}: step #{attempt.n} was refused -32602 (invalid params), though its key (or none) was"
                        " never sent with another text in the session: a new submission taken for a reused key",
                        (attempt.n,),
                    )
                )
    texts = dict(stored)
    for attempt in attempts:
        # Only the cancelled attempt's own text: a reuse sent after the withdrawal may insert its other text.
        own = [mid for mid in inserted if texts.get(mid) == attempt.content]
        if attempt.code != Code.REQUEST_CANCELLED or not own or attempt.answered is None:
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
                    f" +{attempt.answered - history.started:.2f}s, yet it is stored as {own[0]!r}, and no later"
                    " attempt could have inserted it",
                    steps,
                )
            )
    for attempt in attempts:
        reused = [mid for mid, text in stored if text == attempt.content]
        if not attempt.reuse or not reused:
            continue
        recorded = any(a.outcome == "ok" and a.answered is not None and a.answered < attempt.sent for a in attempts)
        if recorded:
            found.append(
                Violation(
                    "reuse-never-inserts",
                    f"{what}: step #{attempt.n} reused the recorded key with other content, and that content"
                    f" was inserted as {reused[0]!r}",
                    (attempt.n,),
                )
            )
    return found


def free_at(history: History, attempt: Attempt, lease: float) -> float:
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
            elif event.kind == "lost" and other.hold and same_process and pending(other, event.at):
                # A release sent after a fault fell on the connection may never have left (a held POST holds
                # every later one behind it).
                cut = min([a.sent for a in history.attempts if a.fault and _same_process(a, other)], default=event.at)
                released = (r for r in history.events if r.kind == "release" and _same(r, other))
                if not any(other.sent <= r.at <= min(event.at, cut) for r in released):
                    # The kit's own hold on a connection that failed: nobody can release it now, and the Agent
                    # may keep it as long as it keeps the connection (see the history page): no bound.
                    return float("inf")
                if other is not attempt:
                    start = max(start, event.at + lease)
            elif event.kind in DEATHS and same_process and other is not attempt and pending(other, event.at):
                start = max(start, event.at + lease)
            elif event.kind == "node" and other is not attempt and pending(other, event.at):
                start = max(start, event.at + lease)  # the dead node may have held its claim
            elif event.kind == "stall" and other.sent < event.at and pending(other, event.at):
                start = max(start, event.until)  # its COMMIT may have been sent before the stall: its outcome waits
            elif event.kind == "restart" and other.sent < event.at and pending(other, event.at):
                start = max(start, event.at)
    return start


def _same_process(one: Attempt, other: Attempt) -> bool:
    return one.instance == other.instance and one.generation == other.generation


def _same(event: Any, attempt: Attempt) -> bool:
    """The event acted on the process and session that carry `attempt`."""
    same = event.instance == attempt.instance and event.generation == attempt.generation
    return same and event.session == attempt.session


def _bound(history: History, bound: float, lease: float) -> list[Violation]:
    found: list[Violation] = []
    deaths = {(e.instance, e.generation): e.at for e in history.events if e.kind in DEATHS}
    for attempt in history.attempts:
        if attempt.fault is not None and attempt.answered is None:
            continue  # the network took its answer (the Client may only resend it)
        due = free_at(history, attempt, lease) + bound
        if due == float("inf"):
            continue  # held up by what nobody can end (free_at)
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


def _transport(history: History) -> list[Violation]:
    return [
        Violation(
            "transport-not-refusal",
            f"step #{a.n} met the network fault {a.fault}, and the Client was told {_describe(a)}",
            (a.n,),
        )
        for a in history.attempts
        if a.fault is not None and a.outcome == "error"
    ]


def _rounds(history: History) -> list[Violation]:
    # Per process: a round may serve several messages queued together, but a round with no new message behind it
    # is work nobody asked that process for (a retry's, a resumed session's, another process's).
    found = []
    for w in history.work:
        if w.rounds <= w.fresh:
            continue
        # The steps involved: the death that started this process, and every prompt of the session.
        steps = {e.step for e in history.events if e.kind in (*DEATHS, "node") and e.instance == w.instance}
        steps = {s for s in steps if s >= 0} | {a.n for a in history.attempts if a.session == w.session}
        found.append(
            Violation(
                "no-second-round",
                f"session {w.session}: agent {w.instance} (process {w.generation + 1}) reported {w.rounds} round(s)"
                f" of work (idle to running) after {w.fresh} new user message(s)",
                tuple(sorted(steps)),
            )
        )
    return found


def _code_name(code: int | None) -> str:
    try:
        return Code(code).name.replace("_", " ").lower() if code is not None else "none"
    except ValueError:
        return "unknown code"
