"""Seeded random schedules of what a Client, its network and its operator do to several Agents on one store.

A schedule is a list of `Step`s; the same seed and length always give the same list, so a failing schedule can be
replayed from its seed alone, and a shrunk one from its seed and the numbers of the steps it kept (`keep`). Each
step keeps the number it had in the whole schedule (`n`), and steps name what they act on by those numbers: a
retry names the step that made its submission, a cancel the step whose attempt it cancels. A step whose subject
was shrunk away still makes sense: a retry whose first attempt is gone is the first attempt, a cancel of an
attempt never sent is skipped.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

OPS = ("prompt", "retry", "reuse", "unkeyed", "cancel", "release", "close", "kill", "stall", "restart", "pause")
"""Every kind of step. prompt: a new keyed submission; retry: the same submission again (same key and content,
new request id), on any instance; reuse: an earlier submission's key with other content; unkeyed: a prompt
without a key; cancel: `$/cancel_request` for an earlier attempt, on the connection that carries it; release: the
conformance release for a session on one instance (ends its holds); close: the instance's stdin closed, then a
new process started; kill: SIGKILL, then a new process; stall: the store stops answering for a while (only where
the kit runs it); restart: the store drops every connection (likewise); pause: the Client waits a moment."""

FAULTS = ("cancel", "close", "kill", "stall", "restart")
"""The steps counted as faults in the summary."""


@dataclass(frozen=True)
class Step:
    """One step of a schedule. `n` is its number in the whole schedule; the other fields matter per `op`."""

    n: int
    op: str
    instance: int = 0
    session: int = 0
    subject: int = -1  # the step number of the submission (retry, reuse) or of the attempt (cancel)
    hold: bool = False  # a prompt or retry carrying the holdInsert hook
    seconds: float = 0.0  # pause and stall

    def describe(self) -> str:
        """One line of a printed trace."""
        on = f"on agent {self.instance}"
        if self.op in ("prompt", "unkeyed"):
            held = ", held before insertion" if self.hold else ""
            return f"{self.op} in session {self.session} {on}{held}"
        if self.op in ("retry", "reuse"):
            held = ", held before insertion" if self.hold else ""
            what = "retry of" if self.op == "retry" else "other content with the key of"
            return f"{what} submission #{self.subject} {on}{held}"
        if self.op == "cancel":
            return f"$/cancel_request for the attempt of step #{self.subject}, on its connection"
        if self.op == "release":
            return f"release the holds of session {self.session} {on}"
        if self.op in ("close", "kill"):
            how = "stdin closed" if self.op == "close" else "SIGKILL"
            return f"{self.op} agent {self.instance} ({how}), then start it again"
        if self.op == "stall":
            return f"stall the store for {self.seconds:g}s"
        if self.op == "restart":
            return "restart the store (every connection dropped)"
        return f"pause {self.seconds:g}s"


@dataclass(frozen=True)
class Shape:
    """What a schedule may use: how many Agents and sessions, which hooks and which store faults."""

    instances: int = 3
    sessions: int = 2
    hold: bool = True  # the Agent offers holdInsert
    stall: bool = False  # the kit can stall the store
    restart: bool = False  # the kit can drop the store's connections
    stall_seconds: float = 6.0


_WEIGHTS = {
    "prompt": 22,
    "retry": 22,
    "reuse": 4,
    "unkeyed": 5,
    "cancel": 12,
    "release": 13,
    "close": 4,
    "kill": 6,
    "stall": 4,
    "restart": 3,
    "pause": 5,
}


def generate(seed: int, steps: int, shape: Shape) -> list[Step]:
    """The schedule of `steps` steps that `seed` gives for `shape` (the same list every time)."""
    rng = random.Random(seed)
    ops = [op for op in OPS if (op != "stall" or shape.stall) and (op != "restart" or shape.restart)]
    weights = [_WEIGHTS[op] for op in ops]
    made: list[Step] = []
    submissions: list[int] = []  # step numbers of keyed submissions
    attempts: list[int] = []  # step numbers of every prompt sent
    where: dict[int, tuple[int, int]] = {}  # step number of a submission -> (instance, session) of its first attempt
    held: list[tuple[int, int]] = []  # (instance, session) of each held attempt not yet released
    for n in range(steps):
        op = rng.choices(ops, weights)[0]
        if op in ("retry", "reuse") and not submissions:
            op = "prompt"
        if op == "cancel" and not attempts:
            op = "prompt"
        instance = rng.randrange(shape.instances)
        session = rng.randrange(shape.sessions)
        hold = shape.hold and rng.random() < 0.5
        if op == "prompt":
            step = Step(n, op, instance, session, hold=hold)
            submissions.append(n)
            where[n] = (instance, session)
        elif op in ("retry", "reuse"):
            # Recent submissions are retried most, as a Client does; any of them may be. Most retries go to another
            # Agent than the first attempt's (a failover): the case where what one Agent knows must reach the rest.
            subject = submissions[-1 - min(int(rng.expovariate(0.7)), len(submissions) - 1)]
            first = where[subject][0]
            if shape.instances > 1 and instance == first and rng.random() < 0.7:
                instance = (first + 1 + rng.randrange(shape.instances - 1)) % shape.instances
            step = Step(n, op, instance, session, subject=subject, hold=hold and op == "retry")
        elif op == "unkeyed":
            step = Step(n, op, instance, session, hold=hold)
        elif op == "cancel":
            subject = attempts[-1 - min(int(rng.expovariate(0.5)), len(attempts) - 1)]
            step = Step(n, op, subject=subject)
        elif op == "stall":
            step = Step(n, op, seconds=shape.stall_seconds)
        elif op == "pause":
            step = Step(n, op, seconds=round(rng.uniform(0.05, 0.6), 2))
        elif op == "release" and held and rng.random() < 0.8:
            # Mostly the holds a schedule made, so that a held attempt goes on after what came while it waited.
            instance, session = held.pop(rng.randrange(len(held)))
            held[:] = [h for h in held if h != (instance, session)]
            step = Step(n, op, instance, session)
        else:
            step = Step(n, op, instance, session)
        if op in ("prompt", "retry", "reuse", "unkeyed"):
            attempts.append(n)
            if step.hold:
                target = where[step.subject][1] if op == "retry" else step.session
                held.append((step.instance, target))
        made.append(step)
    return made


def kept(schedule: list[Step], keep: list[int] | None) -> list[Step]:
    """The steps of `schedule` whose numbers are in `keep` (all of them when `keep` is None)."""
    if keep is None:
        return list(schedule)
    wanted = set(keep)
    return [step for step in schedule if step.n in wanted]
