"""Run the keyed-prompt conformance traces against an Agent command over stdio.

    python -m acp_v2_runtime.conformance -- python -m acp_v2_runtime.reference_agent --db '{tmp}/agent.db'

Each connection of a trace is one Agent process speaking newline-delimited JSON-RPC on stdin/stdout; `{tmp}`
in the command becomes a temporary directory shared by every process of the run, so a restarted Agent finds
its stored sessions. One line is printed per trace: PASS; FAIL with what was expected and what was seen
instead; or SKIP naming what the trace needs that the Agent does not offer. Then a summary
(`N passed, M failed, K skipped, of T traces`). Waiting for an answer is bounded by `--timeout`, so a silent
Agent fails rather than hangs.

The protocol comes first. Whether sessions outlive the Agent process is found by resuming the session from a new
process: the trace is skipped only when that process answers that it does not know the session (-32002). A
method the Agent answers with -32601 (session/resume, session/list) skips the trace, naming the method. History
is read by `session/resume` with `replayFrom: {"type": "start"}`; an Agent that does not replay has the user
messages it reported live counted instead, where one connection saw them all. The inserted user message may be
reported as one `user_message` update or as `user_message_chunk` updates, before or after the answer; a messageId
answered and never reported fails, quoting the rule. After a retry of an inserted message the runner checks that
no new turn starts.

Only the test hooks with no protocol equivalent (holdInsert, holdWork, failInsert) come from a handshake: the
runner's `initialize` params carry `"_meta": {"acp-v2-retry/conformance": {}}` and an Agent that offers hooks
says so in its result, `"_meta": {"acp-v2-retry/conformance": {"offers": ["holdInsert", ...]}}`. Each offered
hook is checked: one that does not hold fails the trace, naming it. `--list` shows what each trace needs.

The runner is a Client: it answers `session/request_permission` by `--permission` (the first allow option by
default, or the first reject option, or the cancelled outcome) and every other request of the Agent's (`fs/*`,
`terminal/*`: its `initialize` offers neither) with -32601.

Everything the Agent writes is read as it arrives by the generated `acp_v2_schema.reader.MessageReader` (the one
classifier of JSON-RPC, which the validator and the reference Agent use too): a line that is not JSON or is longer
than 16 MiB, a message that is not valid JSON-RPC 2.0 (an `error` that is not an error object, a bad `id`, a
second answer, an answer to an id never sent), a result or a notification whose params do not fit the types the
spec names for that method, a key of the trace inside a session/update or a session/list result (at any depth,
however it is escaped): each fails the trace that saw it, with the reason, and the run goes on with the next
trace. Stderr is drained and only its tail kept, so no amount of it costs the runner memory."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from importlib import resources
from typing import Any, NamedTuple

from .connection import PERMISSION_POLICIES, AgentNotStarted, Connection, TraceFailure, TraceSkipped
from .steps import TraceRun

__all__ = [
    "PERMISSION_POLICIES",
    "AgentNotStarted",
    "Connection",
    "TraceFailure",
    "TraceRun",
    "TraceSkipped",
    "Verdict",
    "handshake_key",
    "load_traces",
    "main",
    "run_all",
    "run_trace",
]


def load_traces() -> dict[str, Any]:
    """The traces document shipped with the package (the same as generated/conformance/idempotency-traces.json)."""
    text = resources.files("acp_v2_schema").joinpath("data", "idempotency-traces.json")
    return json.loads(text.read_text(encoding="utf-8"))


def handshake_key() -> str:
    """The `_meta` key of the handshake and of the prompt hooks, from the traces document."""
    key: str = load_traces()["handshake"]["metaKey"]
    return key


class Verdict(NamedTuple):
    """How one trace went: "PASS", "FAIL" or "SKIP", and for the last two why."""

    outcome: str
    reason: str | None = None


async def run_trace(
    trace: dict[str, Any],
    command: list[str],
    timeout: float,
    workdir: str,
    document: dict[str, Any] | None = None,
    permission: str = "allow",
) -> Verdict:
    """Run one trace against the Agent command. Raises AgentNotStarted (the whole run stops)."""
    document = document if document is not None else load_traces()
    run = TraceRun(command, timeout, workdir, document, trace.get("needs"), permission)
    verdict = Verdict("PASS")
    steps = [next(iter(step.items())) for step in trace["steps"]]
    try:
        for number, (kind, body) in enumerate([*steps, ("conclude", None)], 1):
            try:
                await run.step(kind, body)
            except TraceSkipped as exc:
                verdict = Verdict("SKIP", str(exc))
                break
            except TraceFailure as exc:
                where = f"step {number} ({kind})" if kind != "conclude" else "after the last step"
                verdict = Verdict("FAIL", f"{where}: {exc}")
                break
            except (AgentNotStarted, asyncio.CancelledError):
                raise
            except Exception as exc:  # whatever the Agent did, it fails this trace and the run goes on
                reason = f"step {number} ({kind}): the runner could not go on ({type(exc).__name__}: {exc})"
                verdict = Verdict("FAIL", reason)
                break
    finally:
        leak = await run.finish()
    if leak is not None and verdict.outcome != "FAIL":
        return Verdict("FAIL", leak)  # a problem seen after the last wait still fails the trace
    return verdict


async def run_all(
    command: list[str], *, timeout: float, traces: list[dict[str, Any]], permission: str = "allow"
) -> int:
    """Run the traces one after another, print one verdict line each and a summary; the exit status."""
    document = load_traces()
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    with tempfile.TemporaryDirectory(prefix="acp-conformance-") as workdir:
        for trace in traces:
            verdict = await run_trace(trace, command, timeout, workdir, document, permission)
            counts[verdict.outcome] += 1
            said = f" — {verdict.reason}" if verdict.reason else ""
            print(f"{verdict.outcome} {trace['id']}: {trace['title']}{said}", flush=True)
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped, of {len(traces)} traces")
    return 1 if counts["FAIL"] else 0


EPILOG = """\
exit status: 0 when no trace fails (a skipped trace is not a failure), 1 when any fails, 2 on a usage error (an
unknown trace id, no command) or an Agent command that cannot be started.
"""


def bridge_command(url: str, profile: str = "http") -> list[str]:
    """The Agent command that carries each connection to a served Agent (`acp_v2_runtime.remote.bridge`)."""
    return [sys.executable, "-m", "acp_v2_runtime.remote.bridge", "--url", url, "--profile", profile]


def main(argv: list[str] | None = None) -> int:
    """The command line: parse, pick the traces, run them; returns the exit status."""
    args_in = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="python -m acp_v2_runtime.conformance",
        usage="%(prog)s [-h] [--timeout SECONDS] [--permission POLICY] [--only ID]... [--list]"
        " (--url URL [--profile P] | -- AGENT COMMAND...)",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--timeout", type=float, default=10.0, metavar="SECONDS", help="seconds to wait for each answer (default 10)"
    )
    parser.add_argument(
        "--permission",
        choices=PERMISSION_POLICIES,
        default=PERMISSION_POLICIES[0],
        help="how session/request_permission is answered: the first allow option (default), the first reject"
        " option, or the cancelled outcome (when no option of that kind is offered: cancelled)",
    )
    parser.add_argument("--only", action="append", default=[], metavar="ID", help="run only this trace (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the traces and exit")
    parser.add_argument(
        "--url",
        default=None,
        help="run against an Agent served at this URL (ACP's remote transport) instead of a command: each connection"
        " of a trace is a `python -m acp_v2_runtime.remote.bridge` process",
    )
    parser.add_argument("--profile", choices=("http", "websocket"), default="http", help="with --url (default http)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the Agent command; {tmp} is a shared dir")
    args = parser.parse_args(args_in)
    every = load_traces()["traces"]
    if args.list:
        for trace in every:
            flag = "key-dependent" if trace["keyDependent"] else "any Agent"
            needs = ", ".join(trace.get("needs") or []) or "nothing"
            print(f"{trace['id']}: {trace['title']} ({trace['origin']}, {flag}; needs {needs})")
        return 0
    if not args.timeout > 0:
        parser.error("--timeout must be a positive number of seconds")
    known = [trace["id"] for trace in every]
    unknown = [name for name in args.only if name not in known]
    if unknown:
        parser.error(f"no trace named {', '.join(map(repr, unknown))}; known: {', '.join(known)}")
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.url is not None:
        if command:
            parser.error("give either --url or an Agent command, not both")
        command = bridge_command(args.url, args.profile)
    if not command:
        parser.error("give the Agent command after --, or --url")
    traces = [trace for trace in every if not args.only or trace["id"] in args.only]
    try:
        return asyncio.run(run_all(command, timeout=args.timeout, traces=traces, permission=args.permission))
    except AgentNotStarted as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of our output went away (`| head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
