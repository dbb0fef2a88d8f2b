"""Run one schedule against N Agent processes on one store, and record the history a Client could see.

Every prompt sent becomes an `Attempt` with its times and its answer (a messageId, an error code, or none when
its connection ended first); every fault and release becomes an `Event`. At the end the run settles (stalls end,
every hold is released, every live attempt is awaited for the answer bound, every Agent's stdin is closed) and
reads what the store finally holds, the only way a Client can: a new Agent process resumes each session with
`replayFrom: {"type": "start"}` and the user messages it replays are the store's, each with its messageId and text.
The check ties a stored message to a submission by the messageId an attempt was answered with, and by its text
only where no answer names it (two submissions may send the same text on purpose; keys are never echoed).
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from acp_v2_schema import protocol as M
from acp_v2_schema.protocol import KnownErrorCode as Code
from acp_v2_schema.reader import KEY_PARAMS
from acp_v2_schema.retry import IDEMPOTENCY_KEY_MAX_LENGTH as KEY_MAX_LENGTH
from acp_v2_schema.retry import IDEMPOTENCY_KEY_MIN_LENGTH as KEY_MIN_LENGTH

from ..connection import Connection, TraceFailure
from ..network.faults import FAILS_THE_ATTEMPT
from ..steps import PROTOCOL_VERSION, RELEASE, REPLAY_FROM_START, USER_MESSAGE
from .schedule import PROMPTING, Step

KEY_PARAM = KEY_PARAMS[M.SESSION_PROMPT]
ON_INSTANCE = ("release", "close", "kill", "list")
"""The steps besides prompts that act on an instance (`Step.instance`)."""


class TimedConnection(Connection):
    """A Connection that also notes when each answer arrived."""

    def _answer(self, rid: int | str | None, raw: dict[str, Any]) -> None:
        if rid is not None:
            self.__dict__.setdefault("answered_at", {})[rid] = time.monotonic()
        super()._answer(rid, raw)


QUIET_SECONDS = 3.0
"""How long a kill step over a cluster waits, at most, for the answers on their way from the node it kills (an
attempt that waits on a held twin's claim or a stalled store is not answered sooner: the kill comes after this)."""


@dataclass
class Attempt:
    """One session/prompt sent: what, where and when, and what came back."""

    n: int  # the step that sent it
    session: int
    key: str | None
    content: str
    submission: int  # the step number of its submission (its own for a new prompt or a reuse)
    reuse: bool
    instance: int
    generation: int  # which process of the instance carried it
    hold: bool
    sent: float
    rid: int | str = 0
    answered: float | None = None
    message_id: str | None = None
    code: int | None = None
    conn: Any = field(default=None, repr=False)
    malformed: bool = False  # its key was not a valid key (then `key` is None): -32602 is its only right answer
    fail: bool = False  # it carried the failInsert hook
    fault: str | None = None  # the network fault the kit's proxy made on it (over URLs), by name

    @property
    def outcome(self) -> str:
        """ "ok", "error" or "none"."""
        if self.answered is None:
            return "none"
        return "ok" if self.code is None else "error"


@dataclass(frozen=True)
class Event:
    """A release, a death (close, kill) of an instance's process, a stall or a store restart, with its time.

    Over URLs, also: `net` (a network fault armed, `step` its own), `node` (a node killed behind the balancer) and
    `lost` (an instance's bridge ended by itself: its connection failed, so its attempts get no answer)."""

    kind: str
    at: float
    instance: int = -1
    generation: int = -1
    session: int = -1
    until: float = 0.0  # a stall's end
    step: int = -1  # a cancel's: the step of the attempt it cancels; a close's or kill's: its own


BRIDGE_NOTICE_SECONDS = 5.0
"""How long the kit waits, after a node was killed, for the bridges it served to see their connection end (their event
stream or socket breaks with the node: milliseconds, unless the machine is very busy)."""


@dataclass
class History:
    """What one schedule did and saw, and what the store held at the end."""

    seed: int
    steps: list[Step]
    started: float
    attempts: list[Attempt] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    stored: dict[int, list[tuple[str, str]]] = field(default_factory=dict)  # session -> [(messageId, content)]
    work: list[Work] = field(default_factory=list)  # what each process reported, per session
    problems: list[str] = field(default_factory=list)  # protocol problems the connections saw
    requests: int = 0
    made: list[str] = field(default_factory=list)  # over URLs: the network faults that fell on a prompt, by name


@dataclass(frozen=True)
class Work:
    """What one Agent process reported live for one session: rounds of work begun (idle to running) and new user
    messages (`user_message` updates: an insertion it made)."""

    session: int
    instance: int
    generation: int
    rounds: int
    fresh: int


class NeedsMissing(Exception):
    """The Agent lacks what a history needs (stored sessions, replay): the run cannot judge it."""


class Runner:
    """Runs schedules against an Agent command: `await Runner(...).run(seed, steps)` gives the History."""

    def __init__(self, command: list[str], store: Any, *, instances: int, sessions: int, timeout: float) -> None:
        self.command, self.store, self.instances, self.sessions = command, store, instances, sessions
        self.timeout = timeout  # bounds the kit's own waits (initialize, resume), not the judged answers
        self.meta_key: str | None = None
        self.offers: set[str] = set()
        # When an attempt's answer is due (the check's bound): settling waits no longer than that for it.
        self.due: Callable[[History, Attempt], float] | None = None
        self.remote: Any = None  # over URLs: the fault proxy and the cluster (history.remote.Remote)

    async def _start(self, db: str, workdir: str, secrets: set[str], instance: int | None = None) -> TimedConnection:
        command = [part.replace("{tmp}", workdir).replace("{db}", db) for part in self.command]
        if instance is not None and self.remote is not None:
            command += self.remote.placement(instance)  # over a cluster: each instance asks for a node of its own
        conn = await TimedConnection.start("agent", command, secrets)
        params: dict[str, Any] = {
            "protocolVersion": PROTOCOL_VERSION,
            "info": {"name": "acp-v2-history", "version": "1"},
        }
        if self.meta_key:
            params["_meta"] = {self.meta_key: {}}
        result = await self._call(conn, M.INITIALIZE, params)
        meta = result.get("_meta") if isinstance(result.get("_meta"), dict) else {}
        entry = meta.get(self.meta_key) if self.meta_key else None
        offers = entry.get("offers") if isinstance(entry, dict) else None
        self.offers = {o for o in offers if isinstance(o, str)} if isinstance(offers, list) else set()
        return conn

    async def _call(self, conn: Connection, method: str, params: dict[str, Any]) -> dict[str, Any]:
        rid = self._send(conn, method, params)
        answer = await conn.wait(lambda: conn.responses.get(rid), method, self.timeout)
        if answer.error is not None:
            raise TraceFailure(f"{method}: error {answer.error.get('code')} {str(answer.error.get('message'))[:120]!r}")
        return answer.result if isinstance(answer.result, dict) else {}

    def _send(self, conn: Connection, method: str, params: Any) -> int:
        self.next_id += 1
        conn.write({"id": self.next_id, "method": method, "params": params})
        return self.next_id

    async def probe(self, meta_key: str) -> None:
        """Learn the handshake's offers (under `meta_key`) from one process: they decide whether prompts may be
        held."""
        self.meta_key = meta_key
        self.next_id = 0
        with tempfile.TemporaryDirectory(prefix="acp-history-") as workdir:
            db = await self.store.begin(workdir)
            try:
                conn = await self._start(db, workdir, set())
                await conn.close()
            finally:
                await self.store.end()

    async def run(self, seed: int, steps: list[Step], pace: float = 0.02) -> History:
        """Run `steps`, settle, and read back the store: the whole History."""
        self.next_id = 0
        with tempfile.TemporaryDirectory(prefix="acp-history-") as workdir:
            db = await self.store.begin(workdir)
            try:
                return await _Schedule(self, db, workdir, seed, steps, pace).play()
            finally:
                await self.store.end()


class _Schedule:
    def __init__(self, runner: Runner, db: str, workdir: str, seed: int, steps: list[Step], pace: float) -> None:
        self.runner, self.db, self.workdir, self.pace = runner, db, workdir, pace
        self.history = History(seed, steps, time.monotonic())
        self.secrets: set[str] = set()
        self.token = f"{seed}-{int(time.time() * 1000) % 100000}"
        self.conns: list[TimedConnection | None] = [None] * runner.instances
        self.generation = [0] * runner.instances
        self.all_conns: list[TimedConnection] = []
        self.process: dict[int, tuple[int, int]] = {}  # id(conn) -> (instance, generation)
        self.session_ids: list[str] = []
        self.by_step: dict[int, Attempt] = {}
        self.background: list[asyncio.Task[Any]] = []
        self.stalls: list[tuple[int, asyncio.Task[Any]]] = []  # (index of its Event, the task that stalls the store)
        self.judge: asyncio.Task[TimedConnection] | None = None
        self.restarting: dict[int, asyncio.Task[None]] = {}  # instance -> the start of its new process
        self.armed: list[Any] = []  # the network faults armed (their records say which request each fell on)

    async def _instance(self, index: int, started: asyncio.Task[TimedConnection] | None = None) -> None:
        """Start instance `index` (or take the process `started` for it) and resume every session on it; tried
        again while it exits (a stalled store may keep an Agent from starting), for at most the kit's timeout.

        Over URLs the whole of it is tried again: a bridge whose connection ends while it resumes (a node killed
        meanwhile) is a lost connection, and a new bridge takes its place. On stdio a resume that fails is the
        Agent's failure. A process that was started and not kept is always ended, whatever interrupts this."""
        deadline = self._now() + self.runner.timeout
        while True:
            conn: TimedConnection | None = None
            try:
                conn = await (started or self.runner._start(self.db, self.workdir, self.secrets, index))
                started = None
                for sid in self.session_ids:
                    await self._resume(conn, sid)
            except TraceFailure:
                if conn is not None:
                    await conn.close(kill=True)
                    if self.runner.remote is None:
                        raise
                if self._now() > deadline:
                    raise
                started = None
                await asyncio.sleep(0.3)
                continue
            except BaseException:
                if conn is not None:
                    await asyncio.shield(conn.close(kill=True))
                raise
            break
        assert conn is not None
        self.conns[index] = conn
        self.all_conns.append(conn)
        self.process[id(conn)] = (index, self.generation[index])

    async def _resume(self, conn: TimedConnection, sid: str) -> None:
        """Resume a stored session on a new process; tried again while the store is stalled or restarting."""
        params = {"sessionId": sid, "cwd": self.workdir, "mcpServers": []}
        deadline = self._now() + self.runner.timeout
        while True:
            rid = self.runner._send(conn, M.SESSION_RESUME, params)
            answer = await conn.wait(lambda rid=rid: conn.responses.get(rid), M.SESSION_RESUME, self.runner.timeout)
            if answer.error is None:
                return
            said = f"error {answer.error.get('code')} {str(answer.error.get('message'))[:120]!r}"
            if answer.error.get("code") in (Code.RESOURCE_NOT_FOUND, Code.METHOD_NOT_FOUND) or self._now() > deadline:
                raise NeedsMissing(f"a new Agent process could not resume a stored session: {said}")
            await asyncio.sleep(0.2)

    async def play(self) -> History:
        if self.runner.remote is not None:
            self.runner.remote.reset()
        try:
            # Every process an instance needs starts at once (a process start is most of a short schedule's time),
            # and only the instances a step acts on: a shrunk schedule may need fewer.
            used = {s.instance for s in self.history.steps if s.op in (*PROMPTING, *ON_INSTANCE)} - {0}
            starting = {
                i: asyncio.create_task(self.runner._start(self.db, self.workdir, self.secrets, i)) for i in used
            }
            self.background.extend(starting.values())
            first = await self.runner._start(self.db, self.workdir, self.secrets, 0)
            self.all_conns.append(first)
            self.process[id(first)] = (0, 0)
            for _ in range(self.runner.sessions):
                result = await self.runner._call(first, M.SESSION_NEW, {"cwd": self.workdir, "mcpServers": []})
                self.session_ids.append(str(result.get("sessionId")))
            self.conns[0] = first
            await asyncio.gather(*(self._instance(index, starting[index]) for index in sorted(used)))
            self.background = [task for task in self.background if task not in starting.values()]
            for step in self.history.steps:
                await self._after_kills()
                self._reap()
                await self._step(step)
                await asyncio.sleep(self.pace)
            await self._settle()
            await self._read_back()
        finally:
            for task in [*self.background, *(t for _, t in self.stalls), *self.restarting.values()]:
                task.cancel()
            for task in self.background:  # a process started for an instance the run never got to
                if task.done() and not task.cancelled() and task.exception() is None:
                    made = task.result()
                    if isinstance(made, Connection) and made not in self.all_conns:
                        await made.close(kill=True)
            judge = self.judge
            started = judge is not None and judge.done() and not judge.cancelled() and judge.exception() is None
            if started and judge.result() not in self.all_conns:  # started, never read: the run failed before
                await judge.result().close(kill=True)
            for conn in self.all_conns:
                await conn.close(kill=True)
        return self.history

    def _now(self) -> float:
        return time.monotonic()

    async def _ready(self, instance: int) -> None:
        """Wait for the restart of `instance` under way, if any (its failure is the run's)."""
        task = self.restarting.pop(instance, None)
        if task is not None:
            await task

    def _reap(self, again: bool = True) -> None:
        """Over URLs, a bridge whose connection failed has exited by itself: note it `lost` and start another (an
        Agent process that exits on stdio is not forgiven so: there it is the Agent's failure)."""
        if self.runner.remote is None:
            return
        for index, conn in enumerate(self.conns):
            if conn is None or index in self.restarting or conn.process.returncode is None:
                continue
            self.history.events.append(Event("lost", self._now(), index, self.generation[index]))
            self.conns[index] = None
            self.generation[index] += 1
            if again:
                self.restarting[index] = asyncio.create_task(self._instance(index))

    async def _after_kills(self) -> None:
        """Over a cluster, after a node was killed (by a step, or by the proxy), wait a few seconds at most for the
        bridges it served to see their connection end, so that the next step is never written into a bridge that is
        about to exit, where it would be lost before it left (then whether it was sent would depend on timing, and a
        shrunk schedule would not replay). The node a bridge is on is the cookie it said on stderr."""
        remote = self.runner.remote
        killed = remote.take_killed() if remote is not None and remote.cluster is not None else set()
        if not killed:
            return
        served = [
            conn
            for conn in self.conns
            if conn is not None and remote.node_of(conn.stderr_tail.decode("utf-8", "replace")) in killed
        ]
        deadline = self._now() + BRIDGE_NOTICE_SECONDS
        while any(conn.process.returncode is None for conn in served) and self._now() < deadline:
            await asyncio.sleep(0.02)

    async def _quiet(self, node: str) -> None:
        """Before a kill step over a cluster, wait (QUIET_SECONDS at most) for the answers on their way from `node`:
        every live attempt its bridges sent and the Agent does not hold on purpose. A kill a few milliseconds after a
        prompt would otherwise fall before or after its insertion as the machine's load decides, and a shrunk
        schedule would not replay. A kill in the middle of an insertion is the `node-kill-after-forward` fault's."""
        remote = self.runner.remote
        deadline = self._now() + QUIET_SECONDS
        while self._now() < deadline:
            waiting = [
                a
                for a in self._pending_live()
                if not a.hold and remote.node_of(a.conn.stderr_tail.decode("utf-8", "replace")) == node
            ]
            if not waiting:
                return
            await asyncio.sleep(0.02)

    async def _step(self, step: Step) -> None:
        h = self.history
        if step.op == "net":
            self.armed.append(self.runner.remote.arm(step.form))
            h.events.append(Event("net", self._now(), step=step.n))
            return
        if step.op == "kill" and step.node:
            conn = self.conns[step.instance]
            said = conn.stderr_tail.decode("utf-8", "replace") if conn is not None else ""
            await self._quiet(self.runner.remote.node_serving(step.instance, said))
            await self.runner.remote.kill_node(step.instance, said)
            h.events.append(Event("node", self._now(), step.instance, step=step.n))
            await self._after_kills()
            return
        if step.op in (*PROMPTING, *ON_INSTANCE):
            await self._ready(step.instance)
        if step.op in PROMPTING:
            self._prompt(step)
        elif step.op == "list":
            conn = self.conns[step.instance]
            if conn is not None:  # the connection checks the listing for keys, as every session/update
                with contextlib.suppress(TraceFailure):
                    self.runner._send(conn, M.SESSION_LIST, {})
        elif step.op == "cancel":
            attempt = self.by_step.get(step.subject)
            if attempt is not None and attempt.answered is None and attempt.conn is self.conns[attempt.instance]:
                with contextlib.suppress(TraceFailure):
                    attempt.conn.write({"method": M.CANCEL_REQUEST, "params": {"requestId": attempt.rid}})
                h.events.append(Event("cancel", self._now(), attempt.instance, attempt.generation, step=attempt.n))
        elif step.op == "release":
            conn = self.conns[step.instance]
            if conn is not None:
                params = {"sessionId": self.session_ids[step.session]}
                with contextlib.suppress(TraceFailure):
                    conn.write({"method": RELEASE, "params": params})
                h.events.append(
                    Event("release", self._now(), step.instance, self.generation[step.instance], step.session)
                )
        elif step.op in ("close", "kill"):
            conn = self.conns[step.instance]
            self.conns[step.instance] = None
            if conn is not None:
                h.events.append(Event(step.op, self._now(), step.instance, self.generation[step.instance], step=step.n))
                ending = asyncio.create_task(conn.close(kill=step.op == "kill"))
                if step.op == "kill":
                    await ending
                else:  # a closed Agent may take its time to finish: the new process starts meanwhile
                    self.background.append(ending)
            self.generation[step.instance] += 1
            # The new process starts while the steps for other instances go on, as an operator's restart does;
            # a step for this instance waits for it (`_ready`).
            self.restarting[step.instance] = asyncio.create_task(self._instance(step.instance))
        elif step.op == "stall":
            start = self._now()
            h.events.append(Event("stall", start, until=start + step.seconds))
            self.stalls.append((len(h.events) - 1, asyncio.create_task(self.runner.store.stall(step.seconds))))
        elif step.op == "restart":
            h.events.append(Event("restart", self._now()))
            await self.runner.store.restart()
        elif step.op == "pause":
            await asyncio.sleep(step.seconds)

    def key_of(self, step: Step) -> Any:
        """The idempotencyKey value a prompting step sends (None: omitted or null)."""
        if step.op == "malformed":
            return malformed_key(step.form)
        if step.keyof < 0:
            return None
        # A composed letter in every key, so that a key's decomposed twin is another key that normalises to it.
        return twin_key(f"hk-{self.token}-{step.keyof}-\u00e9", step.form)

    def _prompt(self, step: Step) -> None:
        conn = self.conns[step.instance]
        if conn is None:
            return
        key = self.key_of(step)
        content = f"history {self.token} submission {step.text}"
        params: dict[str, Any] = {
            "sessionId": self.session_ids[step.session],
            "prompt": [{"type": "text", "text": content}],
        }
        if key is not None or step.form == "null":
            params[KEY_PARAM] = key
        if isinstance(key, str) and step.op != "malformed":
            self.secrets.add(key)
        hooks = {"holdInsert": True} if step.hold and "holdInsert" in self.runner.offers else {}
        if step.fail and "failInsert" in self.runner.offers:
            hooks["failInsert"] = True
        if hooks and self.runner.meta_key:
            params["_meta"] = {self.runner.meta_key: hooks}
        attempt = Attempt(
            step.n, step.session, key if step.op != "malformed" else None, content,
            step.subject if step.op in ("retry", "reuse") else step.n, step.op == "reuse", step.instance,
            self.generation[step.instance], bool(hooks.get("holdInsert")), self._now(), conn=conn,
            malformed=step.op == "malformed", fail=bool(hooks.get("failInsert")),
        )  # fmt: skip
        try:
            attempt.rid = self.runner._send(conn, M.SESSION_PROMPT, params)
        except TraceFailure:
            return
        self.history.requests += 1
        self.history.attempts.append(attempt)
        self.by_step[step.n] = attempt

    def _collect(self) -> None:
        for attempt in self.history.attempts:
            if attempt.answered is not None:
                continue
            conn = attempt.conn
            answer = conn.responses.get(attempt.rid)
            if answer is not None:
                attempt.answered = conn.__dict__.get("answered_at", {}).get(attempt.rid, self._now())
                if answer.error is not None:
                    attempt.code = int(answer.error.get("code", Code.INTERNAL_ERROR))
                elif isinstance(answer.result, dict):
                    attempt.message_id = answer.result.get("messageId")

    def _pending_live(self) -> list[Attempt]:
        self._collect()
        return [
            a
            for a in self.history.attempts
            if a.answered is None and a.conn is self.conns[a.instance] and a.conn.process.returncode is None
        ]

    async def _settle(self) -> None:
        """Release every hold, end stalls, and wait for every live attempt (no longer than its answer is due)."""
        if self.runner.remote is not None:
            await self.runner.remote.settle()
            await asyncio.sleep(0.3)  # a bridge whose node died may take a moment to see it
            self._reap()
        for instance in list(self.restarting):
            await self._ready(instance)
        for index, conn in enumerate(self.conns):
            if conn is None:
                continue
            for session, sid in enumerate(self.session_ids):
                with contextlib.suppress(TraceFailure):
                    conn.write({"method": RELEASE, "params": {"sessionId": sid}})
                self.history.events.append(Event("release", self._now(), index, self.generation[index], session))
        # A stall that no attempt in flight waits on holds nothing up any more: it ends early (its Event says when).
        # While one does, the stall lasts its full length, since how the Agent answers meanwhile is what it tests.
        while any(not task.done() for _, task in self.stalls):
            if not self._pending_live():
                self.runner.store.end_stall()
                for index, task in self.stalls:
                    if not task.done():
                        event = self.history.events[index]
                        self.history.events[index] = replace(event, until=min(event.until, self._now()))
                break
            await asyncio.sleep(0.05)
        for task in [*(t for _, t in self.stalls), *self.background]:
            with contextlib.suppress(Exception):
                await task
        self.stalls.clear()
        self.background.clear()
        # The judge's process starts while the last answers come in; it reads nothing before its replay.
        self.judge = asyncio.create_task(self.runner._start(self.db, self.workdir, self.secrets))
        deadline = self._now() + self.runner.timeout
        while (pending := self._pending_live()) and self._now() < deadline:
            # An answer after its due time is late whenever it comes: waiting longer tells nothing more.
            dues = [self.runner.due(self.history, a) for a in pending] if self.runner.due is not None else []
            if self.runner.due is not None and self._now() > max([d for d in dues if d != float("inf")], default=0):
                break
            await asyncio.sleep(0.05)
            self._reap(again=False)
        self._reap(again=False)
        await asyncio.gather(*(conn.close() for conn in self.conns if conn is not None))
        self._collect()
        by_rid = {a.rid: a for a in self.history.attempts}
        for armed in self.armed:
            attempt = by_rid.get(armed.request_id) if armed.request_id is not None else None
            if attempt is None:
                continue
            self.history.made.append(armed.fault.value)
            if armed.fault in FAILS_THE_ATTEMPT:
                attempt.fault = armed.fault.value  # the Client heard no answer: the outcome is unknown to it
            if armed.killed is not None and armed.killed_at is not None:
                # The proxy killed the node the attempt reached: as a node-kill step would, at that moment.
                node = Event("node", armed.killed_at, attempt.instance, attempt.generation, step=attempt.n)
                self.history.events.append(node)
        for conn in self.all_conns:
            if conn.problem is not None:
                self.history.problems.append(conn.problem)

    async def _read_back(self) -> None:
        """What the store holds: each session replayed from the start by a new process; the work seen live."""
        assert self.judge is not None
        judge = await self.judge
        self.all_conns.append(judge)
        for session, sid in enumerate(self.session_ids):
            start = len(judge.notifications)
            params = {"sessionId": sid, "cwd": self.workdir, "mcpServers": [], "replayFrom": REPLAY_FROM_START}
            rid = self.runner._send(judge, M.SESSION_RESUME, params)
            # Not judge.wait: a key leaked in the replay is a problem of the connection (judged as `protocol`), and
            # the replay after it is still the store's history.
            answer = await _answer(judge, rid, self.runner.timeout)
            if answer is None or answer.error is not None:
                said = "no answer" if answer is None else f"error {answer.error.get('code')}"
                raise NeedsMissing(f"the history is read by session/resume with replay from the start ({said})")
            texts: dict[str, str] = {}
            for note in judge.notifications[start:]:
                update = (note.get("params") or {}).get("update") or {}
                if note.get("method") == M.SESSION_UPDATE and update.get("sessionUpdate") in USER_MESSAGE:
                    mid = str(update.get("messageId"))
                    texts[mid] = texts.get(mid, "") + _text(update.get("content"))
            self.history.stored[session] = list(texts.items())
        await judge.close()
        if judge.problem is not None:
            self.history.problems.append(judge.problem)
        for conn in self.all_conns:
            if conn is judge:
                continue
            instance, generation = self.process[id(conn)]
            for session, sid in enumerate(self.session_ids):
                rounds, fresh = _work(conn, sid)
                self.history.work.append(Work(session, instance, generation, rounds, fresh))


def _text(content: Any) -> str:
    """The text of a content block or a list of them."""
    blocks = content if isinstance(content, list) else [content]
    return "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str))


def _work(conn: Connection, session_id: str) -> tuple[int, int]:
    """The rounds of work a connection reported for a session (each time its state became running) and the new
    user messages it reported (no connection but the judge's asks for a replay, so each is an insertion)."""
    state, rounds, fresh = "idle", 0, set()
    for index, note in enumerate(conn.notifications):
        params = note.get("params") or {}
        update = params.get("update") or {}
        if params.get("sessionId") != session_id:
            continue
        if update.get("sessionUpdate") in USER_MESSAGE:
            fresh.add(update.get("messageId") or index)  # chunks of one message count once
        if update.get("sessionUpdate") != "state_update":
            continue
        if update.get("state") == "running" and state != "running":
            rounds += 1
        state = update.get("state")
    return rounds, len(fresh)


async def _answer(conn: Connection, rid: int, timeout: float) -> Any:
    """The answer to request `rid`, whatever problems the connection had; None when none came in `timeout`."""
    deadline = time.monotonic() + timeout
    while (answer := conn.responses.get(rid)) is None:
        ended = conn.process.returncode is not None and conn.process.stdout is not None and conn.process.stdout.at_eof()
        if ended or time.monotonic() > deadline:
            return None
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(conn.changed.wait(), 0.5)
    return answer


def twin_key(key: str, form: str) -> str:
    """`key` as a twin of the form `form` (schedule.TWINS) sends it: another key that only looks like it."""
    if form == "upper":
        return key.upper()
    if form == "padded":
        return f" {key} "
    if form == "nfd":
        return unicodedata.normalize("NFD", key)
    return key


def malformed_key(form: str) -> Any:
    """The malformed key of the form `form` (schedule.MALFORMED): the key type's bounds come from the spec."""
    return {
        "empty": "k" * (KEY_MIN_LENGTH - 1),
        "too-long": "k" * (KEY_MAX_LENGTH + 1),
        "number": 42,
        "boolean": True,
        "array": ["k"],
        "object": {"k": "v"},
        "lone-surrogate": "k\ud800k",
    }[form]
