"""`python -m acp_v2_runtime.conformance history -- AGENT COMMAND`: random faults across several Agents on one store.

The kit starts `--instances` processes of the Agent command (3 by default), all on one store: `{db}` in the
command becomes the store (an SQLite file of the schedule's own, or with `--postgres URL` a schema of its own on
that server, reached through the kit's relay), `{tmp}` a directory of the schedule's own. It then runs seeded
random schedules of keyed prompts, retries on the same or another Agent, prompts held before insertion (when the
Agent offers the holdInsert hook), `$/cancel_request` before, during and after insertion, closed connections,
SIGKILL and restart of an Agent, store stalls and restarts, a key reused with other content, keys that only look
like an earlier one (case, white space, Unicode normalisation), the same text under a new key, one key in two
sessions, unkeyed and null-keyed prompts, malformed keys, failed inserts (failInsert, when offered) and
`session/list`.
Every request and its answer (or none) is recorded with its time; after each schedule the history is judged
against what the store finally holds, read back by replaying every session from a new process (see `check`).

A failing schedule is shrunk (steps removed while the same invariant still fails, at most `--shrink-runs` runs,
each run printed as it ends; stalls made short when the failure is not a late answer) and printed as a trace,
with the command that replays it: its seed and the numbers of the steps it kept. Counts
(schedules, requests, faults by kind, answers by code) are printed at the end.

Over URLs (`--url URL [--profile http|websocket]`, or `--nodes N --postgres URL -- NODE COMMAND` with `{port}` and
`{db}` in the command, started N times behind the kit's own balancer), each Agent instance is a bridge process to
the kit's fault proxy in front of the Agent (see `remote`), schedules draw network faults of the proxy (`net`), a
kill is a node killed behind the balancer and started again (with `--nodes`; none with a bare `--url`), and store
faults are not drawn (the store is the served Agent's own). With `--nodes N` there are N+1 instances by default,
instance i asking the balancer for node i modulo N, and the proxy's faults include killing the node a prompt
reached just after it took the prompt or just after it answered.

What the Agent must offer: sessions that another process on the same store resumes, and replay from the start
(`session/resume` with `replayFrom`); without either the run stops with exit status 2, saying which.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shlex
import sys
import time
from collections import Counter
from dataclasses import replace
from typing import Any

from .. import handshake_key
from ..connection import AgentNotStarted, TraceFailure
from .check import INVARIANTS, Violation, check, free_at
from .remote import remote_target
from .run import History, NeedsMissing, Runner
from .schedule import FAULTS, PROMPTING, Shape, Step, generate, kept
from .store import open_store

SHORT_STALL = 1.5
"""Seconds a stall lasts in a shrink once the failure does not need a long one (a failure that is not a late
answer): long enough to outlast a store call, short enough that a shrink of a dozen runs takes seconds."""

__all__ = ["INVARIANTS", "History", "Shape", "Step", "Violation", "check", "generate", "main"]

EPILOG = """\
exit status: 0 when every schedule keeps every invariant, 1 when one does not (shrunk and printed), 2 on a usage
error, an Agent command that cannot be started, or an Agent that lacks what a history needs.

invariants:
""" + "\n".join(f"  {name}: {text}" for name, text in INVARIANTS.items())


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m acp_v2_runtime.conformance history",
        usage="%(prog)s [options] -- AGENT COMMAND...",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add(
        "--instances",
        type=int,
        default=None,
        help="Agent processes at once on the store (default 3; with --nodes N, N+1 connections, so that two share a"
        " node and the rest do not)",
    )
    add("--sessions", type=int, default=2, help="sessions each schedule uses (default 2)")
    add("--schedules", type=int, default=20, help="the budget: how many schedules to run (default 20)")
    add("--steps", type=int, default=16, help="steps per schedule (default 16)")
    add("--seed", type=int, default=None, help="the first schedule's seed (schedule i uses seed + i; default random)")
    add("--keep", default=None, metavar="N,N,...", help="run only these steps of each schedule (a shrunk replay)")
    add("--bound", type=float, default=15.0, help="seconds within which every attempt must be answered (default 15)")
    add("--lease", type=float, default=30.0, help="the Agent's claim lease in seconds (default 30, the ledger's)")
    add("--stall", type=float, default=20.0, help="seconds a store stall lasts; keep it above --bound (default 20)")
    add("--postgres", default=None, metavar="URL", help="share this PostgreSQL server (a schema per schedule)")
    add("--shrink-runs", type=int, default=40, help="at most this many runs to shrink a failure (default 40)")
    add("--timeout", type=float, default=30.0, help="seconds the kit waits for set-up answers (default 30)")
    add("--url", default=None, help="judge the Agent served at this URL (through the kit's fault proxy and bridges)")
    add("--profile", choices=("http", "websocket"), default="http", help="the remote profile over URLs (default http)")
    add("--nodes", type=int, default=0, help="start N nodes of the command (a node command) behind a balancer")
    add("command", nargs=argparse.REMAINDER, help="-- then the Agent command; {db} is the store, {tmp} a dir")
    return parser


class _Tally:
    def __init__(self) -> None:
        self.schedules = self.requests = 0
        self.faults: Counter[str] = Counter()
        self.answers: Counter[str] = Counter()
        self.made: Counter[str] = Counter()  # network faults that fell on an attempt

    def add(self, history: History) -> None:
        self.schedules += 1
        self.requests += history.requests
        self.faults.update(_fault_label(step) for step in history.steps if step.op in FAULTS)
        self.made.update(history.made)
        for attempt in history.attempts:
            self.answers[_answer_label(attempt.outcome, attempt.code)] += 1

    def lines(self) -> list[str]:
        faults = ", ".join(f"{k} {v}" for k, v in sorted(self.faults.items())) or "none"
        answers = ", ".join(f"{k} {v}" for k, v in sorted(self.answers.items())) or "none"
        lines = [
            f"schedules: {self.schedules}, requests (prompts): {self.requests}",
            f"faults: {faults}",
            f"answers: {answers}",
        ]
        if self.made:
            made = ", ".join(f"{k} {v}" for k, v in sorted(self.made.items()))
            lines.append(f"network faults made on a prompt: {made}")
        return lines


def _fault_label(step: Step) -> str:
    if step.op == "net":
        return f"net {step.form}"
    return "node-kill" if step.op == "kill" and step.node else step.op


def _answer_label(outcome: str, code: int | None) -> str:
    return {"ok": "messageId", "none": "no answer"}.get(outcome, str(code))


async def _shrink(
    runner: Runner, seed: int, steps: list[Step], history: History, first: Violation, budget: int, judge: Any
) -> tuple[list[Step], History, int]:
    """Remove steps while the invariant of `first` still fails: halves first, then smaller pieces, at most `budget`
    runs.

    Two cheap tries come first. The steps the violation names (with the submissions and cancels that refer to them,
    and for a late answer the faults before it) are often the whole story, so one run tries them alone. And a
    failure that is not a late answer rarely needs the long stall that finds one, so one run tries the stalls short
    (`SHORT_STALL`); the shrinking goes on with short stalls when the failure stays. Each run prints a line, so a
    long shrink shows how far it got."""
    invariant = first.invariant
    current, runs = steps, 0

    async def fails(candidate: list[Step]) -> History | None:
        nonlocal runs
        runs += 1
        began = time.monotonic()
        trial = await runner.run(seed, candidate)
        kept = any(v.invariant == invariant for v in judge(trial))
        said = "still fails" if kept else "passes"
        print(
            f"  shrink run {runs}/{budget}: {len(candidate)} step(s), {said} ({time.monotonic() - began:.1f}s)",
            flush=True,
        )
        return trial if kept else None

    named = set(first.steps)
    named |= {s.subject for s in steps if s.n in named and s.subject >= 0}
    named |= {s.n for s in steps if s.op == "cancel" and s.subject in named}
    # A process closed or killed after one of those attempts was sent to it may be what answered it.
    sent = [(s.instance, s.n) for s in steps if s.n in named and s.op in PROMPTING]
    named |= {s.n for s in steps if s.op in ("close", "kill") and any(i == s.instance and n < s.n for i, n in sent)}
    named |= {s.n for s in steps if s.op == "net" and s.n + 1 in named}  # the fault armed for a named prompt
    if invariant == "answered-within-bound" and named:  # what held the answer up: a fault before it
        named |= {s.n for s in steps if s.op in FAULTS and s.op != "cancel" and s.n < max(named)}
    alone = [s for s in steps if s.n in named]
    if named and len(alone) < len(steps) and runs < budget:
        trial = await fails(alone)
        if trial is not None:
            current, history = alone, trial
    chunk = max(1, len(current) // 2)
    stalls = [s for s in current if s.op == "stall" and s.seconds > SHORT_STALL]
    if stalls and invariant != "answered-within-bound" and runs < budget:
        shorter = [replace(s, seconds=SHORT_STALL) if s.op == "stall" else s for s in current]
        trial = await fails(shorter)
        if trial is not None:
            current, history = shorter, trial
    while chunk >= 1 and runs < budget:
        removed, i = False, 0
        while i < len(current) and runs < budget:
            candidate = current[:i] + current[i + chunk :]
            if not candidate:
                i += chunk
                continue
            trial = await fails(candidate)
            if trial is not None:
                current, history, removed = candidate, trial, True
            else:
                i += chunk
        if not removed:
            if chunk == 1:
                break
            chunk //= 2
    return current, history, runs


def _trace(history: History) -> list[str]:
    """The steps of a history, each with what its attempt was told."""
    told = {a.n: a for a in history.attempts}
    lines = []
    for step in history.steps:
        line = f"  #{step.n:<3} {step.describe()}"
        attempt = told.get(step.n)
        if attempt is not None:
            at = f"+{attempt.sent - history.started:.2f}s"
            answer = {"ok": f"messageId {attempt.message_id}", "none": "no answer"}.get(
                attempt.outcome, f"error {attempt.code}"
            )
            line += f"  [sent {at}, {answer}]"
        lines.append(line)
    for session, stored in sorted(history.stored.items()):
        lines.append(f"  store, session {session}: {len(stored)} user message(s) {[mid for mid, _ in stored]}")
    return lines


async def _run(args: argparse.Namespace, command: list[str], seed: int, remote: Any = None) -> int:
    store = open_store(args.postgres if remote is None else None)
    agent = command if remote is None else remote.bridge()
    runner = Runner(agent, store, instances=args.instances, sessions=args.sessions, timeout=args.timeout)
    runner.remote = remote
    runner.due = lambda history, attempt: free_at(history, attempt, args.lease) + args.bound
    tally = _Tally()
    keep = [int(n) for n in args.keep.split(",") if n.strip()] if args.keep else None

    def judge(history: History) -> list[Violation]:
        return check(history, bound=args.bound, lease=args.lease)

    try:
        await runner.probe(handshake_key())
        shape = Shape(
            instances=args.instances,
            sessions=args.sessions,
            hold="holdInsert" in runner.offers,
            stall=store.can_stall and remote is None,
            restart=store.can_restart and remote is None,
            stall_seconds=args.stall,
            fail="failInsert" in runner.offers,
            net=remote.faults if remote is not None else (),
            kill="process" if remote is None else "node" if remote.cluster is not None else "",
        )
        holds = "on" if shape.hold else "off (no holdInsert offered)"
        where = f"on {store.kind}" if remote is None else f"over {args.profile} through the kit's fault proxy"
        if remote is not None and remote.cluster is not None:
            where += f", {len(remote.cluster.nodes)} nodes behind a balancer"
        print(
            f"history: seed {seed}, {args.schedules} schedule(s) of {args.steps} steps, {args.instances} Agents"
            f" {where}; holds {holds}",
            flush=True,
        )
        for index in range(args.schedules):
            schedule_seed = seed + index
            steps = kept(generate(schedule_seed, args.steps, shape), keep)
            began = time.monotonic()
            history = await runner.run(schedule_seed, steps)
            tally.add(history)
            violations = judge(history)
            took = time.monotonic() - began
            if not violations:
                print(
                    f"PASS schedule {index} (seed {schedule_seed}): {history.requests} prompts, {took:.1f}s", flush=True
                )
                continue
            print(f"FAIL schedule {index} (seed {schedule_seed}) after {took:.1f}s:", flush=True)
            for v in violations:
                print(f"  {v.invariant}: {v.detail}")
            first = violations[0].invariant
            small, shown, runs = await _shrink(
                runner, schedule_seed, steps, history, violations[0], args.shrink_runs, judge
            )
            print(f"shrunk to {len(small)} of {len(steps)} steps in {runs} run(s), still failing {first}:")
            for line in _trace(shown):
                print(line)
            for v in judge(shown):
                print(f"  {v.invariant}: {v.detail}")
            stall = min([s.seconds for s in small if s.op == "stall"] or [args.stall])
            print("replay: " + _replay(args, command, schedule_seed, small, stall))
            for line in tally.lines():
                print(line)
            return 1
    finally:
        await store.close()
    for line in tally.lines():
        print(line)
    print(f"{tally.schedules} passed, 0 failed")
    return 0


def _replay(args: argparse.Namespace, command: list[str], seed: int, steps: list[Step], stall: float) -> str:
    words = ["python", "-m", "acp_v2_runtime.conformance", "history", "--seed", str(seed), "--schedules", "1"]
    words += ["--steps", str(args.steps), "--keep", ",".join(str(s.n) for s in steps)]
    words += ["--instances", str(args.instances), "--sessions", str(args.sessions)]
    words += ["--bound", f"{args.bound:g}", "--lease", f"{args.lease:g}", "--stall", f"{stall:g}"]
    if args.postgres:
        words += ["--postgres", args.postgres]
    if args.url or args.nodes:
        words += ["--url", args.url] if args.url else ["--nodes", str(args.nodes)]
        words += ["--profile", args.profile]
    return shlex.join([*words, "--", *command] if command else words)


def main(argv: list[str] | None = None) -> int:
    """The `history` command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.url and (command or args.nodes):
        parser.error("--url judges a served Agent: give no command and no --nodes")
    if args.nodes and not args.postgres:
        parser.error("--nodes needs --postgres URL: the nodes' shared store")
    if not command and not args.url:
        parser.error("give the Agent command after -- (or --url URL)")
    if args.nodes < 0:
        parser.error("--nodes must not be negative")
    if args.instances is None:
        # Over a cluster, instance i asks for node i modulo N: with N+1 of them, two connections share a node (what
        # one connection's answer must never reach) and the others are each on a node of their own (failover).
        args.instances = args.nodes + 1 if args.nodes else 3
    for name in ("instances", "sessions", "schedules", "steps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    for name in ("bound", "lease", "stall", "timeout"):
        if not getattr(args, name) > 0:
            parser.error(f"--{name} must be a positive number of seconds")
    if args.shrink_runs < 0:
        parser.error("--shrink-runs must not be negative")
    seed = args.seed if args.seed is not None else random.randrange(1, 10**6)
    try:
        if not (args.url or args.nodes):
            return asyncio.run(_run(args, command, seed))
        with remote_target(args.url, args.profile, nodes=args.nodes, command=command, postgres=args.postgres) as remote:
            return asyncio.run(_run(args, command, seed, remote))
    except AgentNotStarted as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return 2
    except (NeedsMissing, TraceFailure) as exc:
        print(f"{parser.prog}: the Agent cannot be judged here: {exc}", file=sys.stderr)
        return 2
