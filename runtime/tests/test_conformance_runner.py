"""The conformance runner against Agents that misbehave (issue 11): each malformed answer is a FAIL of the trace
that saw it, with the reason, never a traceback that ends the run; a command that cannot start and an unknown
trace id are one-line usage errors with exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from agent_client import ROOT, environment
from generator import paths
from misbehaving_agent import MODES

AGENT = Path(__file__).with_name("misbehaving_agent.py")
TRACE = "retry-same-connection"  # its third step sends a session/prompt


def conformance(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acp_v2_runtime.conformance", *args],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=timeout,
        check=False,
    )


REASONS = {
    "error-string": "error",
    "error-array": "error",
    "error-without-code": "code",
    "result-and-error": "either result or error, not both",  # the generated reader's words
    "result-array": "result",
    "update-array-params": "session/update",
    "update-string-params": "params",
    "update-without-update": "session/update",
    "unhashable-id": "id",
    "wrong-version": "jsonrpc",
    "non-json": "not JSON",
    "answer-twice": "twice",
    "answer-unknown-id": "no request",
    "result-null-id": "a response to id null",
    "huge-line": "longer than the limit",
}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_malformed_agent_output_fails_the_trace_with_the_reason(mode):
    done = conformance("--timeout", "20", "--only", TRACE, "--", sys.executable, str(AGENT), mode)
    assert done.returncode == 1, done
    assert "Traceback" not in done.stdout + done.stderr and done.stderr == ""
    (verdict,) = [line for line in done.stdout.splitlines() if line.startswith(("PASS", "FAIL", "SKIP"))]
    assert verdict.startswith(f"FAIL {TRACE}") and REASONS[mode] in verdict, verdict
    assert "nothing within" not in verdict  # found at once, not after the timeout
    assert done.stdout.splitlines()[-1] == "0 passed, 1 failed, 0 skipped, of 1 traces"


def test_every_misbehaviour_has_an_expected_reason():
    assert set(REASONS) == set(MODES)


def test_malformed_answers_fail_each_trace_and_the_run_goes_on():
    done = conformance("--timeout", "20", "--", sys.executable, str(AGENT), "error-string", timeout=240)
    verdicts = [line for line in done.stdout.splitlines() if line.startswith(("PASS", "FAIL", "SKIP"))]
    assert done.returncode == 1 and "Traceback" not in done.stderr
    count = len(json.loads((ROOT / paths.TRACES).read_text(encoding="utf-8"))["traces"])
    assert len(verdicts) == count and all(v.startswith("FAIL") for v in verdicts), done.stdout


@pytest.mark.parametrize("command", ["acp-no-such-agent-command", "./not-here/agent"])
def test_agent_command_that_does_not_exist_is_a_one_line_error(command):
    done = conformance("--", command, "--db", "{tmp}/agent.db")
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert "cannot start" in done.stderr and command in done.stderr


def test_agent_command_that_is_not_executable_is_a_one_line_error(tmp_path):
    script = tmp_path / "agent"
    script.write_text("#!/bin/sh\n", encoding="utf-8")  # no execute permission
    done = conformance("--", str(script))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1


def test_unknown_trace_id_is_a_usage_error_listing_the_known_ones():
    done = conformance("--only", "nope", "--", sys.executable, str(AGENT), "non-json")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "'nope'" in done.stderr and TRACE in done.stderr and "keys-stay-private" in done.stderr


@pytest.mark.parametrize("args", [["--timeout", "0"], ["--timeout", "-1"], ["--timeout", "nan"], []])
def test_bad_timeout_or_missing_command_is_a_usage_error(args):
    done = conformance(*args)
    assert done.returncode == 2 and "Traceback" not in done.stderr and "usage:" in done.stderr


def test_help_describes_the_command_fully():
    done = conformance("--help")
    assert done.returncode == 0
    for words in ("--timeout", "--only", "--list", "--permission", "{tmp}", "exit status", "FAIL", "-- python -m"):
        assert words in done.stdout, words


def test_agent_that_refuses_its_database_fails_each_trace_with_its_message(tmp_path):
    (tmp_path / "agent.db").write_bytes(b"")  # an empty file: the reference Agent refuses it
    agent = [sys.executable, "-m", "acp_v2_runtime.reference_agent", "--db", str(tmp_path / "agent.db")]
    done = conformance("--only", TRACE, "--", *agent)
    assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr
    assert "exited (status 2)" in done.stdout and "the file is empty" in done.stdout, done.stdout


def test_the_key_check_reads_every_member_name_and_string_at_any_depth():
    from acp_v2_runtime.conformance.connection import _strings

    key = "k-secret"
    nested: object = {"deep": [{"x": f"prefix {key} suffix"}]}
    for _ in range(2000):  # deeper than Python would recurse
        nested = [nested]
    value = {"update": {"content": [nested], "_meta": {key: 1}}, "n": 1, "ok": [True, None, 2.5]}
    found = [path for path, text in _strings(value, "params") if key in text]
    assert len(found) == 2, found
    assert any(path.endswith("._meta.k-secret (the member name)") for path in found), found
    assert any(path.endswith(".deep[0].x") for path in found), found


# An Agent that asks the Client three things at once and writes each answer it gets on stderr.
ASKER = """
import json, sys
def send(message):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\\n")
    sys.stdout.flush()
options = [
    {"optionId": "no", "name": "No", "kind": "reject_once"},
    {"optionId": "yes", "name": "Yes", "kind": "allow_once"},
]
params = {"sessionId": "s", "title": "t", "options": options}
send({"id": "p", "method": "session/request_permission", "params": params})
send({"id": "f", "method": "fs/read_text_file", "params": {"sessionId": "s", "path": "/etc/hostname"}})
send({"id": "t", "method": "terminal/create", "params": {"sessionId": "s", "command": "ls"}})
for line in sys.stdin:
    print(line.strip(), file=sys.stderr, flush=True)
"""


@pytest.mark.parametrize(
    ("policy", "outcome"),
    [
        ("allow", {"outcome": "selected", "optionId": "yes"}),
        ("reject", {"outcome": "selected", "optionId": "no"}),
        ("cancelled", {"outcome": "cancelled"}),
    ],
)
def test_the_runner_answers_the_agents_requests_as_a_client(policy, outcome):
    import asyncio
    import json

    from acp_v2_runtime.conformance import PERMISSION_POLICIES, Connection

    assert policy in PERMISSION_POLICIES

    async def ask() -> dict[str, dict]:
        conn = await Connection.start("A", [sys.executable, "-c", ASKER], permission=policy)
        answers: dict[str, dict] = {}

        def three() -> bool | None:
            for line in conn.stderr_tail.decode().splitlines():
                message = json.loads(line)
                answers[message["id"]] = message
            return True if len(answers) == 3 else None

        await conn.wait(three, "the three answers", 120)
        await conn.close()
        await conn.close()  # twice, on an exited process: closing never raises
        return answers

    answers = asyncio.run(ask())
    assert answers["p"]["result"] == {"outcome": outcome}
    # the runner's initialize offers no file system and no terminal: those are methods it does not have
    assert answers["f"]["error"]["code"] == answers["t"]["error"]["code"] == -32601


def test_the_permission_outcome_falls_back_to_cancelled_when_no_option_fits():
    from acp_v2_runtime.conformance.connection import permission_outcome

    only_allow = {"options": [{"optionId": "a", "name": "A", "kind": "allow_always"}]}
    assert permission_outcome("reject", only_allow) == {"outcome": "cancelled"}
    assert permission_outcome("allow", only_allow) == {"outcome": "selected", "optionId": "a"}
    assert permission_outcome("allow", {"options": "nonsense"}) == {"outcome": "cancelled"}
