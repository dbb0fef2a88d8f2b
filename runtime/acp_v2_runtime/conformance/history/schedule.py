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

OPS = (
    "prompt", "retry", "reuse", "twin", "again", "cross", "unkeyed", "malformed", "list",
    "cancel", "release", "close", "kill", "stall", "restart", "pause", "net",
)  # fmt: skip
"""Every kind of step. prompt: a new keyed submission (with `fail`, carrying the failInsert hook); retry: the same
submission again (same key and content, new request id), on any instance; reuse: an earlier submission's key with
other content; twin: a new submission whose key differs from an earlier one's only in how it looks (`form`: its
case, white space around it, its Unicode normalisation), with the same text; again: a new key with an earlier
submission's text (the user sending it again on purpose); cross: an earlier submission's key and text in another
session; unkeyed: a prompt without a key (`form` "null": the key sent as null), sometimes with an earlier unkeyed
prompt's text; malformed: a prompt whose key is not a valid key (`form` says which); list: `session/list`;
cancel: `$/cancel_request` for an earlier attempt, on the connection that carries it; release: the conformance
release for a session on one instance (ends its holds); close: the instance's stdin closed, then a new process
started; kill: SIGKILL, then a new process; stall: the store stops answering for a while (only where the kit runs
it); restart: the store drops every connection (likewise); pause: the Client waits a moment; net (over URLs only):
a network fault of the kit's fault proxy (`form` names it) armed for the next prompt. Over URLs, kill is a node of
the cluster killed (SIGKILL) behind the balancer and started again, and close is the instance's bridge ended
politely (its connection closed, a DELETE on HTTP), then a new one."""

SUBMITTING = ("prompt", "twin", "again", "cross", "unkeyed", "malformed")
"""The steps that make a new submission (a new key, or none): each is judged as one submission with its retries."""
PROMPTING = (*SUBMITTING, "retry", "reuse")
"""The steps that send a session/prompt."""
TWINS = ("upper", "padded", "nfd")
"""How a twin's key differs from its subject's (the kit's keys hold a composed letter, so `nfd` differs)."""
MALFORMED = ("empty", "too-long", "number", "boolean", "array", "object", "lone-surrogate")
"""The malformed keys a schedule sends, each answered -32602 by a correct Agent."""

FAULTS = ("cancel", "close", "kill", "stall", "restart", "net")
"""The steps counted as faults in the summary.

A new kind of fault (a network fault of a remote transport, say) is added in four places: its name in `OPS` and
`FAULTS` and a weight in `_WEIGHTS` (drawn only where `Shape` says the kit can do it, as stalls are); what it does in
`run._Schedule._step`, which records it as an `Event` with its time; and, if it may hold an attempt up, how long in
`check.free_at`, so that the answer bound starts after it."""


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
    form: str = ""  # twin: how its key looks (TWINS); malformed: which bad key (MALFORMED); unkeyed: "null" or ""
    text: int = -1  # the step whose text it sends (its own for a new text; an earlier one for again, cross...)
    keyof: int = -1  # the step whose key it sends, in its `form` (its own for a new key; -1: no key)
    fail: bool = False  # a prompt carrying the failInsert hook
    node: bool = False  # kill: a node behind the balancer (over URLs), not a process of the kit's

    def describe(self) -> str:
        """One line of a printed trace."""
        on = f"on agent {self.instance}"
        held = ", held before insertion" if self.hold else ""
        if self.op == "prompt":
            failing = ", its insertion failing (failInsert)" if self.fail else ""
            return f"prompt in session {self.session} {on}{held}{failing}"
        if self.op == "unkeyed":
            how = "key null" if self.form == "null" else "no key"
            text = f", the text of #{self.text}" if self.text != self.n else ""
            return f"prompt with {how} in session {self.session} {on}{held}{text}"
        if self.op == "twin":
            return f"new key looking like submission #{self.subject}'s ({self.form}), same text, {on}{held}"
        if self.op == "again":
            return f"new key, the text of submission #{self.text} again, {on}{held}"
        if self.op == "cross":
            return f"the key and text of submission #{self.subject} in session {self.session} {on}{held}"
        if self.op == "malformed":
            return f"prompt with a malformed key ({self.form}) in session {self.session} {on}"
        if self.op == "list":
            return f"session/list {on}"
        if self.op in ("retry", "reuse"):
            what = "retry of" if self.op == "retry" else "other content with the key of"
            return f"{what} submission #{self.subject} {on}{held}"
        if self.op == "cancel":
            return f"$/cancel_request for the attempt of step #{self.subject}, on its connection"
        if self.op == "release":
            return f"release the holds of session {self.session} {on}"
        if self.op == "net":
            return f"network fault {self.form} armed for the next prompt"
        if self.op == "kill" and self.node:
            return f"kill the node behind the balancer serving agent {self.instance}, then start it again"
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
    fail: bool = False  # the Agent offers failInsert
    net: tuple[str, ...] = ()  # the network faults the kit's proxy can make (over URLs): drawn as `net` steps
    kill: str = "process"  # what a kill is: "process" (stdio), "node" (a cluster node), "" (none: a bare URL)


_WEIGHTS = {
    "prompt": 16,
    "retry": 18,
    "reuse": 4,
    "twin": 10,
    "again": 6,
    "cross": 5,
    "unkeyed": 6,
    "malformed": 3,
    "list": 3,
    "cancel": 12,
    "release": 13,
    "close": 4,
    "kill": 6,
    "stall": 4,
    "restart": 3,
    "pause": 4,
    "net": 10,
}


def generate(seed: int, steps: int, shape: Shape) -> list[Step]:
    """The schedule of `steps` steps that `seed` gives for `shape` (the same list every time)."""
    rng = random.Random(seed)
    leave = {op for op, can in (("stall", shape.stall), ("restart", shape.restart), ("net", shape.net)) if not can}
    if not shape.kill:
        leave.add("kill")
    ops = [op for op in OPS if op not in leave]
    weights = [_WEIGHTS[op] for op in ops]
    made: list[Step] = []
    submissions: list[int] = []  # step numbers of keyed submissions
    attempts: list[int] = []  # step numbers of every prompt sent
    where: dict[int, tuple[int, int]] = {}  # step number of a submission -> (instance, session) of its first attempt
    sends: dict[int, tuple[int, str, int]] = {}  # step number of a submission -> (keyof, form, text) it sends
    held: list[tuple[int, int]] = []  # (instance, session) of each held attempt not yet released
    unkeyed: list[int] = []  # step numbers of unkeyed prompts
    pair = -1  # a held attempt with a retry held beside it on the same process: the next cancel takes it
    armed = False  # a network fault was armed: the next step is a keyed prompt for it to fall on
    for n in range(steps):
        op = rng.choices(ops, weights)[0]
        if armed and op not in ("prompt", "retry", "twin", "again", "cross"):
            op = "retry"
        if op == "net" and n == steps - 1:
            op = "prompt"  # a fault armed by the last step would have no prompt to fall on
        armed = op == "net"
        if op in ("retry", "reuse", "twin", "again", "cross") and not submissions:
            op = "prompt"
        if op == "cross" and shape.sessions < 2:
            op = "again"
        if op == "cancel" and not attempts:
            op = "prompt"
        instance = rng.randrange(shape.instances)
        session = rng.randrange(shape.sessions)
        hold = shape.hold and rng.random() < 0.5
        if op == "prompt":
            fail = shape.fail and rng.random() < 0.15
            step = Step(n, op, instance, session, hold=hold and not fail, fail=fail, text=n, keyof=n)
            submissions.append(n)
            where[n] = (instance, session)
        elif op in ("retry", "reuse"):
            # Recent submissions are retried most, as a Client does; any of them may be. Most retries go to another
            # Agent than the first attempt's (a failover): the case where what one Agent knows must reach the rest.
            subject = submissions[-1 - min(int(rng.expovariate(0.7)), len(submissions) - 1)]
            first = where[subject][0]
            beside = op == "retry" and shape.hold and (first, where[subject][1]) in held and rng.random() < 0.4
            if beside:  # two attempts of one key pending on one process, for a cancel to come to
                instance, hold, pair = first, True, subject
            elif shape.instances > 1 and instance == first and rng.random() < 0.7:
                instance = (first + 1 + rng.randrange(shape.instances - 1)) % shape.instances
            keyof, form, text = sends[subject]
            text = text if op == "retry" else n
            session = where[subject][1]
            step = Step(n, op, instance, session, subject, hold and op == "retry", form=form, text=text, keyof=keyof)
        elif op in ("twin", "again", "cross"):
            subject = submissions[-1 - min(int(rng.expovariate(0.7)), len(submissions) - 1)]
            home = where[subject][1]
            other = (home + 1 + rng.randrange(shape.sessions - 1)) % shape.sessions if shape.sessions > 1 else home
            session = other if op == "cross" else home
            keyof, form, text = sends[subject]
            if op == "twin":
                form = rng.choice([f for f in TWINS if f != form])
            elif op == "again":
                keyof, form = n, ""
            step = Step(n, op, instance, session, subject, hold, form=form, text=text, keyof=keyof)
            submissions.append(n)
            where[n] = (instance, session)
        elif op == "unkeyed":
            text = rng.choice(unkeyed) if unkeyed and rng.random() < 0.4 else n
            step = Step(n, op, instance, session, hold=hold, form="null" if rng.random() < 0.5 else "", text=text)
            unkeyed.append(n)
        elif op == "malformed":
            step = Step(n, op, instance, session, form=rng.choice(MALFORMED), text=n)
        elif op == "cancel":
            if pair >= 0 and pair in attempts:
                subject, pair = pair, -1
            else:
                subject = attempts[-1 - min(int(rng.expovariate(0.5)), len(attempts) - 1)]
            step = Step(n, op, subject=subject)
        elif op == "stall":
            step = Step(n, op, seconds=shape.stall_seconds)
        elif op == "net":
            step = Step(n, op, instance, session, form=rng.choice(shape.net))
        elif op == "kill":
            step = Step(n, op, instance, session, node=shape.kill == "node")
        elif op == "pause":
            step = Step(n, op, seconds=round(rng.uniform(0.05, 0.6), 2))
        elif op == "release" and held and rng.random() < 0.8:
            # Mostly the holds a schedule made, so that a held attempt goes on after what came while it waited.
            instance, session = held.pop(rng.randrange(len(held)))
            held[:] = [h for h in held if h != (instance, session)]
            step = Step(n, op, instance, session)
        else:
            step = Step(n, op, instance, session)
        if op in SUBMITTING:
            sends[n] = (step.keyof, step.form, step.text)
        if op in PROMPTING:
            attempts.append(n)
            if step.hold:
                held.append((step.instance, step.session))
        made.append(step)
    return made


def kept(schedule: list[Step], keep: list[int] | None) -> list[Step]:
    """The steps of `schedule` whose numbers are in `keep` (all of them when `keep` is None)."""
    if keep is None:
        return list(schedule)
    wanted = set(keep)
    return [step for step in schedule if step.n in wanted]
