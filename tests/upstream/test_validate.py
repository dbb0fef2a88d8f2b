"""`python -m acp_v2_schema.validate` on a recorded session: clean as recorded, precise when a line is broken."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from generator import paths
from tests.support import ROOT

SESSION = Path(__file__).with_name("session.ndjson")
PACKAGE_DIR = ROOT / paths.PYTHON_DIST


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acp_v2_schema.validate", *args],
        cwd=PACKAGE_DIR,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONDONTWRITEBYTECODE": "1", "PATH": ""},
    )


def test_the_recorded_session_is_valid() -> None:
    done = _run(str(SESSION))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_stdin_is_the_default() -> None:
    done = _run(stdin=SESSION.read_text(encoding="utf-8"))
    assert (done.returncode, done.stdout) == (0, "")


def _broken() -> str:
    lines = SESSION.read_text(encoding="utf-8").splitlines()
    edits = {
        1: (
            '"protocolVersion":2',
            '"protocolVersion":"2"',
        ),  # a string where JSON has a number (strict, as on the wire)
        5: ('"name":"parser.py",', ""),  # a resource link without its name
        6: ('"messageId":"msg-1"', '"messageId":null'),  # a prompt answer without a messageId
        12: ('"optionId":"yes"}', '"optionId":7}'),  # a permission answer with a number for an option id
        17: ('"state":"idle"', '"state":"asleep"'),  # a state_update with an unknown state
    }
    for number, (old, new) in edits.items():
        assert old in lines[number - 1], number
        lines[number - 1] = lines[number - 1].replace(old, new)
    lines.insert(20, '{"jsonrpc":"2.0","method":"session/teleport","params":{}}')  # becomes line 21
    lines.append('{"jsonrpc":"2.0","id":99,"result":{}}')
    lines.append("{not json")
    return "\n".join(lines) + "\n"


def test_each_problem_is_reported_on_its_line() -> None:
    done = _run(stdin=_broken())
    assert done.returncode == 1
    out = done.stdout.splitlines()
    total = len(_broken().splitlines())
    expected_prefixes = [
        "line 1: initialize: params.protocolVersion:",
        "line 5: session/prompt: params.prompt.1.resource_link.name:",
        "line 6: session/prompt: result.messageId:",
        "line 12: session/request_permission: result.outcome.selected.optionId:",
        "line 17: session/update: params.update.state_update.",
        "line 21: session/teleport: ACP v2 has no notification of this name",
        f"line {total - 1}: -: a response to id 99, but no unanswered request with that id came before",
        f"line {total}: -: not valid JSON",
    ]
    for prefix in expected_prefixes:
        assert any(line.startswith(prefix) for line in out), (prefix, out)
    assert all(line.startswith("line ") for line in out)


def test_a_missing_file_is_a_usage_error() -> None:
    done = _run(str(SESSION.with_name("missing.ndjson")))
    assert done.returncode == 2
    assert "cannot read" in done.stderr
