"""The validator is linear and bounded (issue 35, item 3): a keyed stream costs per line what an unkeyed one does,
what it remembers is bounded by a window (what falls out is reported once), and key echoes are matched on the
values of the keys the Client sent, not on member names inside opaque values.

The time bound here is loose (a busy two-core machine); the figure is `make bench` (bench_validate).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from acp_v2_schema import protocol as M
from acp_v2_schema.reader import KEY_PARAMS

from acp_v2_runtime.validate import validate_lines

KEY = KEY_PARAMS[M.SESSION_PROMPT]
PROMPT = [{"type": "text", "text": "hello"}]


def msg(**members: object) -> str:
    return json.dumps({"jsonrpc": "2.0", **members})


def prompt(request_id: int, key: str | None = None) -> str:
    params: dict[str, object] = {"sessionId": "s", "prompt": PROMPT}
    if key is not None:
        params[KEY] = key
    return msg(id=request_id, method=M.SESSION_PROMPT, params=params)


def tool_call(raw_input: object) -> str:
    update = {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Call an API", "rawInput": raw_input}
    return msg(method=M.SESSION_UPDATE, params={"sessionId": "s", "update": update})


def answer(request_id: int) -> str:
    return msg(id=request_id, result={"messageId": f"m{request_id}"})


def found(lines: list[str], **options: int) -> list[tuple[int, bool, str]]:
    return [(p.line, p.warning, p.message) for p in validate_lines(lines, **options)]


def test_a_raw_input_with_its_own_key_member_is_no_echo():
    assert found([prompt(1, "k-1"), answer(1), tool_call({KEY: "the tool's own key"})]) == []


def test_a_key_the_client_sent_is_an_echo_wherever_it_stands():
    [(line, warning, text)] = found([prompt(1, "k-1"), answer(1), tool_call({"note": "k-1"})])
    assert (line, warning) == (3, False) and "rawInput.note" in text and "line 1" in text


def test_unanswered_requests_past_the_window_are_reported_once_and_their_answers_are_warnings():
    lines = [prompt(n) for n in range(1, 6)] + [answer(1), answer(5)]
    out = found(lines, window=3)
    notes = [(line, warning) for line, warning, text in out if "unanswered requests" in text]
    assert notes == [(4, True)], out
    late = [(line, warning) for line, warning, text in out if line == 6]
    assert late == [(6, True)], out  # the answer to a forgotten request
    assert all(warning for _, warning, _ in out), out


def test_keys_past_the_window_are_forgotten_and_reported_once():
    lines = [prompt(n, f"k-{n}") for n in range(1, 5)] + [answer(n) for n in range(1, 5)]
    lines += [tool_call({"a": "k-1"}), tool_call({"a": "k-4"})]
    out = found(lines, window=2)
    assert [(line, warning) for line, warning, text in out if "keys sent" in text] == [(3, True)], out
    echoes = [line for line, warning, _ in out if not warning]
    assert echoes == [len(lines)], out  # k-1 is forgotten; k-4 is still known


def test_the_window_option_is_checked():
    done = subprocess.run(
        [sys.executable, "-m", "acp_v2_runtime.validate", "--window", "0", "-"],
        input=b"",
        capture_output=True,
        check=False,
    )
    assert done.returncode == 2 and b"Traceback" not in done.stderr and b"--window" in done.stderr


def _stream(pairs: int, keyed: bool) -> list[str]:
    lines = []
    for n in range(1, pairs + 1):
        lines.append(prompt(n, f"key-{n:08d}" if keyed else None))
        lines.append(answer(n))
        lines.append(tool_call({"path": f"/work/file-{n}.py"}))
    return lines


def test_a_keyed_stream_costs_per_line_what_an_unkeyed_one_does():
    """55,000 keyed lines took 101 s where 100,000 unkeyed ones took 5 s: each update searched every key."""
    pairs = 8_000
    spent = {}
    for keyed in (False, True, False, True):
        lines = _stream(pairs, keyed)
        started = time.process_time()
        assert found(lines) == []
        spent.setdefault(keyed, []).append(time.process_time() - started)
    ratio = min(spent[True]) / min(spent[False])
    assert ratio < 3, f"keyed {min(spent[True]):.2f} s, unkeyed {min(spent[False]):.2f} s"
