"""`python -m acp_v2_runtime.validate` on a recorded session: clean as recorded, precise when a line is broken."""

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
        [sys.executable, "-m", "acp_v2_runtime.validate", *args],
        cwd=PACKAGE_DIR,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONDONTWRITEBYTECODE": "1", "PATH": ""},
    )


def test_the_recorded_session_is_valid() -> None:
    done = _run(str(SESSION))
    lines = len(SESSION.read_text(encoding="utf-8").splitlines())
    assert (done.returncode, done.stdout, done.stderr) == (0, "", f"{lines} line(s), 0 problem(s)\n")


def test_stdin_is_the_default() -> None:
    done = _run(stdin=SESSION.read_text(encoding="utf-8"))
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr.endswith(" line(s), 0 problem(s)\n")


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
        # a known state_update variant with a malformed stop reason, which ACP lets a receiver drop (a warning)
        17: ('"stopReason":"end_turn"', '"stopReason":5'),
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
        "line 17: session/update: warning: params.update.stopReason: dropped a value that is not valid",
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


def test_bad_bytes_nesting_and_non_finite_numbers_are_reported_never_a_traceback() -> None:
    lines = [
        b"[]",  # an empty batch
        b'{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"}}',
        b'{"jsonrpc":"2.0","id":5,"error":{"code":1,"message":"x"}}',  # an error answering nothing
        b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":NaN}}',
        b"\xff\xfe not utf-8",
        b"[" * 1000 + b"]" * 1000,
        b'{"jsonrpc":"2.0","method":"\\udc80x"}',  # a lone surrogate in the method name, printed escaped
        b'{"jsonrpc":"2.0",\r"id":9,"method":"_x/y","params":{}}',  # CR is JSON whitespace, not a line break
        b'{"jsonrpc":"2.0","id":9,"result":{"free":"form"}}',  # answers the extension request of line 8
    ]
    done = subprocess.run(
        [sys.executable, "-m", "acp_v2_runtime.validate"],
        input=b"\n".join(lines) + b"\n",
        capture_output=True,
        check=False,
    )
    out = done.stdout.decode("utf-8").splitlines()
    assert done.returncode == 1
    assert "Traceback" not in done.stderr.decode("utf-8", "replace")
    assert [line.split(":", 1)[0] for line in out] == [f"line {n}" for n in range(1, 8)]
    assert "NaN is not a JSON number" in out[3]
    assert "\\udc80x" in out[6]
