"""The conformance runner against Agents built on the real TypeScript SDK that nobody here wrote for the kit: each
one gets, trace by trace, the verdict the protocol gives it, and each FAIL or SKIP says why.

The Agents are keyed_agent.ts with flags (an ordinary keyed Agent on the SDK's AgentApp; with a store it keeps
its sessions in a file and speaks no handshake; with --offers it offers the test hooks; --chunks, --ask-permission,
--claim, --rerun-work, --no-report and --ignore-keys make the other Agents of `AGENTS`) and example_agent.ts,
written as the SDK's own v2 example Agent is (it answers session/prompt with `result: null`), as it is and with
its one-line fix. The verdicts are listed in `VERDICTS`, one column per trace; the reasons in `REASONS`.

The runs go at most `PARALLEL` at once, and the runner waits generously (`TIMEOUT`): a correct Agent answers at
once, so only a missing report costs a wait, and that run is limited to two traces.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from generator import paths
from tests.interop.conftest import PARALLEL, environment, verdicts
from tests.support import ROOT

TRACES = json.loads((ROOT / paths.TRACES).read_text(encoding="utf-8"))
BY_ID = {trace["id"]: trace for trace in TRACES["traces"]}
HOOKS = ",".join(name for name, need in TRACES["needs"].items() if need["from"] == "handshake")
LEARNED_BY_PROTOCOL = ",".join(name for name, need in TRACES["needs"].items() if need["from"] == "protocol")
TIMEOUT = 60  # the runner's --timeout; nothing but a missing report waits for it
REPORT_TIMEOUT = 20  # for the Agent that never reports its user messages: each of its traces waits this once

STORE = ("--store", "{tmp}/store.json")
AGENTS: dict[str, tuple[str, ...]] = {  # name -> (program, arguments...)
    "in-memory, no handshake": ("keyed_agent.js",),
    "stored sessions, no handshake": ("keyed_agent.js", *STORE),
    "stored sessions and hooks": ("keyed_agent.js", *STORE, "--offers", HOOKS),
    "ignores keys, stored sessions, no handshake": ("keyed_agent.js", *STORE, "--ignore-keys"),
    "ignores keys, stored sessions and hooks": ("keyed_agent.js", *STORE, "--offers", HOOKS, "--ignore-keys"),
    "reports chunks after the answer": ("keyed_agent.js", *STORE, "--offers", HOOKS, "--chunks"),
    "asks permission each turn": ("keyed_agent.js", *STORE, "--offers", HOOKS, "--ask-permission"),
    "offers every hook, implements none": ("keyed_agent.js", "--claim", f"{HOOKS},{LEARNED_BY_PROTOCOL}"),
    "reruns the turn on a retry": ("keyed_agent.js", *STORE, "--offers", HOOKS, "--rerun-work"),
    "never reports the user message": ("keyed_agent.js", *STORE, "--offers", HOOKS, "--no-report"),
    "the SDK's v2 example": ("example_agent.js",),
    "the SDK's v2 example, fixed": ("example_agent.js", "--fixed"),
}
ONLY = {"never reports the user message": ("retry-same-connection", "retry-after-resume")}

# One column per trace, in this order (checked against the spec's traces); `-` where the run leaves it out.
COLUMNS = (
    "retry-same-connection",
    "retry-after-resume",
    "retry-after-restart",
    "retry-while-pending",
    "retry-after-error",
    "same-key-other-session",
    "retry-during-work",
    "cancel-pending",
    "key-reuse-different-prompt",
    "malformed-keys",
    "keys-stay-private",
    "distinct-keys",
    "same-text-new-key",
)
VERDICTS = {  # same  resume restart pending error other work  cancel reuse malformed private alike text
    "in-memory, no handshake": "PASS SKIP SKIP SKIP SKIP PASS SKIP SKIP PASS PASS PASS PASS PASS",
    "stored sessions, no handshake": "PASS PASS PASS SKIP SKIP PASS SKIP SKIP PASS PASS PASS PASS PASS",
    "stored sessions and hooks": "PASS PASS PASS PASS PASS PASS PASS PASS PASS PASS PASS PASS PASS",
    "ignores keys, stored sessions, no handshake": "FAIL FAIL FAIL SKIP SKIP PASS SKIP SKIP FAIL FAIL PASS PASS PASS",
    "ignores keys, stored sessions and hooks": "FAIL FAIL FAIL FAIL PASS PASS FAIL FAIL FAIL FAIL PASS PASS PASS",
    "reports chunks after the answer": "PASS PASS PASS PASS PASS PASS PASS PASS PASS PASS PASS PASS PASS",
    "asks permission each turn": "PASS PASS PASS PASS PASS PASS PASS PASS PASS PASS PASS PASS PASS",
    "offers every hook, implements none": "PASS FAIL FAIL FAIL FAIL PASS FAIL FAIL PASS PASS PASS PASS PASS",
    "reruns the turn on a retry": "FAIL FAIL FAIL PASS PASS PASS PASS PASS PASS PASS PASS PASS PASS",
    "never reports the user message": "FAIL FAIL - - - - - - - - - - -",
    "the SDK's v2 example": "FAIL SKIP SKIP SKIP SKIP FAIL SKIP SKIP FAIL FAIL FAIL FAIL FAIL",
    "the SDK's v2 example, fixed": "FAIL SKIP SKIP SKIP SKIP PASS SKIP SKIP FAIL FAIL SKIP PASS PASS",
}
RULE = TRACES["rules"]["userMessageReport"]["text"]
SECOND_ROUND = TRACES["rules"]["noSecondRound"]["text"]
# What each FAIL or SKIP line of an Agent must say, by trace (`*`: every other such line of that Agent).
REASONS: dict[str, dict[str, str]] = {
    "in-memory, no handshake": {
        "retry-after-resume": "needs storedSessions: a new Agent process answered session/resume for the session"
        " with error -32002",
        "retry-after-restart": "so its sessions do not outlive the process",
        "retry-while-pending": "needs holdInsert, which the Agent does not offer",
        "retry-after-error": "needs failInsert, which the Agent does not offer",
    },
    "ignores keys, stored sessions, no handshake": {
        "retry-after-resume": "step 9 (expect): answer to r2: expected messageId 'msg_",
        "retry-after-restart": "(the one saved as m1), got messageId 'msg_",
    },
    "ignores keys, stored sessions and hooks": {"*": "got "},
    "offers every hook, implements none": {
        "retry-after-resume": "the Agent offers storedSessions, but a new process answered error -32002",
        "retry-after-restart": "the storedSessions offer does not hold",
        "retry-while-pending": "the Agent offers holdInsert, but before the runner ended the hold it",
        "cancel-pending": "the hook does not hold",
        "retry-during-work": "the Agent offers holdWork, but before the runner ended the hold it reported the"
        " session idle",
        "retry-after-error": "carried the failInsert hook, which the Agent offers): expected error -32603",
    },
    "reruns the turn on a retry": {
        "*": f"(noSecondRound): after r2, a retry of a message already inserted, the Agent"
        f" reported state running: it started a second round of work for the message;"
        f' the idempotency-keys proposal says: "{SECOND_ROUND}"'
    },
    "never reports the user message": {
        "*": f'reported no user_message or user_message_chunk update with it; the prompt lifecycle says: "{RULE}"',
        "retry-after-resume": f"user_message or user_message_chunk update: nothing within {REPORT_TIMEOUT}s on A; the"
        f' prompt lifecycle says: "{RULE}"',
    },
    "the SDK's v2 example": {
        "retry-same-connection": "answer to r1: the result does not fit the spec",
        "retry-after-resume": "needs session/resume, which the Agent does not implement: it answered error -32601",
        "retry-after-error": "needs failInsert, which the Agent does not offer",
    },
    "the SDK's v2 example, fixed": {
        "retry-same-connection": "expected messageId",
        "keys-stay-private": "needs session/list, which the Agent does not implement: it answered error -32601",
        "malformed-keys": "expected error -32602 (invalid params), got a result with messageId",
    },
}


def run(built: Path, node: str, name: str) -> tuple[str, dict[str, tuple[str, str]]]:
    """The runner against one Agent: its output and its verdicts."""
    program, *args = AGENTS[name]
    only = [arg for trace in ONLY.get(name, ()) for arg in ("--only", trace)]
    timeout = REPORT_TIMEOUT if name in ONLY else TIMEOUT
    runner = [sys.executable, "-m", "acp_v2_runtime.conformance", "--timeout", str(timeout), *only, "--"]
    done = subprocess.run(
        [*runner, node, str(built / program), *args],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=1200,
        check=False,
    )
    assert "Traceback" not in done.stdout + done.stderr and done.stderr == "", done.stderr
    found = verdicts(done.stdout)
    failed = any(v == "FAIL" for v, _ in found.values())
    assert done.returncode == (1 if failed else 0), done.stdout
    return done.stdout, found


@pytest.fixture(scope="module")
def runs(built: Path, node: str) -> dict[str, tuple[str, dict[str, tuple[str, str]]]]:
    """Every Agent of AGENTS, at most PARALLEL runners at once."""
    with ThreadPoolExecutor(PARALLEL) as pool:
        return dict(zip(AGENTS, pool.map(lambda name: run(built, node, name), AGENTS), strict=True))


def test_the_verdict_table_has_a_column_for_every_trace_of_the_spec():
    assert tuple(BY_ID) == COLUMNS and set(VERDICTS) == set(AGENTS)
    assert all(len(row.split()) == len(COLUMNS) for row in VERDICTS.values())


@pytest.mark.parametrize("name", list(AGENTS))
def test_each_sdk_agent_gets_the_verdicts_the_protocol_gives_it(runs, name: str):
    output, found = runs[name]
    expected = {trace: v for trace, v in zip(COLUMNS, VERDICTS[name].split(), strict=True) if v != "-"}
    assert {trace: v for trace, (v, _) in found.items()} == expected, output
    for trace, (verdict, line) in found.items():
        if verdict == "PASS":
            continue
        assert "nothing within" not in line or name in ONLY, line  # a verdict on what the Agent did, not on time
        reasons = REASONS.get(name, {})
        reason = reasons.get(trace, reasons.get("*"))  # the trace's own, else the Agent's for every line
        assert reason is None or reason in line, line


def test_a_hook_offered_and_not_implemented_is_named_in_its_failure(runs):
    _, found = runs["offers every hook, implements none"]
    claimed = [*HOOKS.split(","), *LEARNED_BY_PROTOCOL.split(",")]
    lines = [line for verdict, line in found.values() if verdict == "FAIL"]
    named = {hook for hook in claimed if any(f"offers {hook}" in line or f"the {hook} hook" in line for line in lines)}
    # every hook, and the stored sessions the handshake claimed (replay is asked for, never taken on trust)
    assert named == set(HOOKS.split(",")) | {"storedSessions"}
