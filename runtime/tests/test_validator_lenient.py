"""The validator reports what the lenient rules salvaged: a warning (exit status unchanged), an error with --strict.

The two messages of issue 25 that ACP's SDKs accept: a `session/prompt` whose `_meta` is `5` (dropped), and an
`available_commands_update` with one malformed command (skipped, the others kept).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from acp_v2_runtime.validate import validate_lines

PROMPT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "session/prompt",
    "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "hi"}], "_meta": 5},
}
COMMANDS = {
    "jsonrpc": "2.0",
    "method": "session/update",
    "params": {
        "sessionId": "s",
        "update": {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [
                {"type": "command", "name": "test", "description": "Run the tests"},
                {"type": "command", "name": 5, "description": "Broken"},
            ],
        },
    },
}
ANSWER = {"jsonrpc": "2.0", "id": 1, "result": {"messageId": "m", "_meta": []}}


def _file(tmp_path: Path, *messages: dict) -> Path:
    path = tmp_path / "session.ndjson"
    path.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
    return path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acp_v2_runtime.validate", *args], capture_output=True, text=True, check=False
    )


def test_salvages_are_warnings_and_leave_the_exit_status_alone(tmp_path):
    run = _run(str(_file(tmp_path, PROMPT, COMMANDS, ANSWER)))
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines == [
        "line 1: session/prompt: warning: params._meta: dropped a value that is not valid (default-on-error): "
        "Input should be a valid dictionary",
        "line 2: session/update: warning: params.update.availableCommands.1: skipped an item that is not valid "
        "(skip-invalid-items): command.name: Input should be a valid string",
        "line 3: session/prompt: warning: result._meta: dropped a value that is not valid (default-on-error): "
        "Input should be a valid dictionary",
    ]
    assert "0 problem(s), 3 warning(s)" in run.stderr


def test_strict_makes_each_salvage_an_error(tmp_path):
    run = _run("--strict", str(_file(tmp_path, PROMPT, COMMANDS)))
    assert run.returncode == 1
    assert [line.split(": ", 2)[:2] for line in run.stdout.splitlines()] == [
        ["line 1", "session/prompt"],
        ["line 2", "session/update"],
    ]
    assert "warning" not in run.stdout
    assert "2 problem(s)" in run.stderr


def test_a_real_error_beside_a_salvage_is_still_an_error():
    bad = {**PROMPT, "params": {**PROMPT["params"], "prompt": [{"type": "text", "text": 5}]}}
    problems = list(validate_lines([json.dumps(bad)]))
    assert [(p.warning, p.message) for p in problems] == [
        (False, "params.prompt.0.text.text: Input should be a valid string")
    ]


def test_a_message_that_needs_no_salvage_gives_nothing():
    clean = {**PROMPT, "params": {**PROMPT["params"], "_meta": {"k": 1}}}
    assert list(validate_lines([json.dumps(clean)])) == []
    assert list(validate_lines([json.dumps(clean)], strict=True)) == []
