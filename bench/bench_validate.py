"""The message validator against pydantic's own floor, on the same 100,000 messages.

The corpus is built here from the spec's worked examples (`spec/examples/*.yaml`, every message of every step) and
the recorded session (`tests/upstream/session.ndjson`), less extension messages (nothing validates them),
repeated with fresh request ids so that each response still answers the request just before it; 100,000 lines.

1. In process (goal: ours >= 0.6 of the floor, as messages per second). Ours: `MessageReader.read_line` on each
   line: parse, route by method or by the request answered, validate params/result/error with the generated
   models. The floor: the same lines with their types already known ("pre-routed" outside the timing): one
   `TypeAdapter.validate_json` of each message's params/result/error text, nothing else. Both are timed as CPU
   time of this process, in alternating slices of the corpus, so that other work on a shared machine hits both
   alike.
2. The command, start-up included (goal: ours >= 0.5): `python -m acp_v2_runtime.validate FILE` against a fresh
   interpreter that imports the models, reads the pre-routed file and calls `validate_json` on each payload;
   each child's CPU time (user + system), rounds interleaved.
3. In process, against a floor that does the same work (goal: ours >= 0.85): one pydantic model per (method, kind)
   for the whole JSON-RPC message, envelope and params (or result, or error), its members typed as the spec's
   envelopes type them (the id a `RequestId`, or in an error response a `RequestId` or null), built outside the
   timing, and its `validate_json` on the very line texts ours reads. Line 1's payload-only floor stays printed,
   without a goal.
4. Keyed against unkeyed streams (issue 35; goal: at most 1.5x per line): `validate_lines` over a stream of
   prompts, their answers and tool-call updates, every prompt with its own idempotency key, against the same
   stream without keys (300,000 lines each, more keys than the default window holds); CPU time, interleaved.
   (The key-echo check searched every key in every update: 55,000 keyed lines took 101 s.)
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.common import Ratio, interleaved

ROOT = Path(__file__).resolve().parent.parent
LINES = 100_000
ROUNDS = 9  # each round is a few seconds: a median of nine, as the shared machine slows whole stretches
SLICES = 20  # each round alternates ours and the floor over this many slices of the corpus
COMMAND_ROUNDS = 3

_FLOOR_CHILD = """
import json, sys, time
from pydantic import TypeAdapter
from acp_v2_schema import models
start = time.perf_counter()
adapters = {}
with open(sys.argv[1], encoding="utf-8") as stream:
    for line in stream:
        name, payload = line.split("\\t", 1)
        adapter = adapters.get(name)
        if adapter is None:
            adapter = adapters[name] = TypeAdapter(getattr(models, name))
        adapter.validate_json(payload, strict=True)
print(time.perf_counter() - start)
"""


def _messages() -> list[dict[str, Any]]:
    out = []
    for path in sorted((ROOT / "spec" / "examples").glob("*.yaml")):
        for step in yaml.safe_load(path.read_text(encoding="utf-8"))["steps"]:
            out.append(step["message"])
    session = (ROOT / "tests" / "upstream" / "session.ndjson").read_text(encoding="utf-8")
    out += [json.loads(line) for line in session.splitlines() if line.strip()]
    return [m for m in out if not str(m.get("method", "")).startswith("_")]  # extensions: nothing to validate


def corpus(count: int = LINES) -> tuple[list[str], list[tuple[str, str] | None]]:
    """`count` messages with fresh ids, and for each the pre-routed (type name, payload text), None when no type."""
    from acp_v2_schema.reader import ROUTES

    base = _messages()
    lines: list[str] = []
    routed: list[tuple[str, str] | None] = []
    renumber: dict[Any, int] = {}
    pending: dict[int, str] = {}
    serial = 0
    while len(lines) < count:
        for message in base:
            message = dict(message)
            if "id" in message and message["id"] is not None:
                if "method" in message:  # a request: a fresh id, remembered for its answer
                    serial += 1
                    renumber[message["id"]] = serial
                    message["id"] = serial
                    pending[serial] = message["method"]
                elif message["id"] in renumber:
                    message["id"] = renumber.pop(message["id"])
                else:
                    continue  # an answer to a request that is not in the corpus
            if "method" in message:
                name = ROUTES[(message["method"], "request" if "id" in message else "notification")].params
                payload = message.get("params", {})
            elif "error" in message:
                name, payload = "Error", message["error"]
                pending.pop(message["id"], None)
            else:
                name, payload = ROUTES[(pending.pop(message["id"]), "request")].result, message["result"]
            lines.append(json.dumps(message))
            routed.append(None if name is None else (name, json.dumps(payload)))
            if len(lines) == count:
                break
    return lines, routed


def _child_cpu(argv: list[str]) -> float:
    """The CPU time (user + system) of one run of `argv` as a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def in_process(lines: list[str], routed: list[tuple[str, str] | None]) -> tuple[float, float]:
    """Median CPU seconds of ours and the floor over the corpus, each round alternating slice by slice."""
    from acp_v2_schema import models
    from acp_v2_schema.reader import MessageReader
    from pydantic import TypeAdapter

    adapters = {item[0]: TypeAdapter(getattr(models, item[0])) for item in routed if item is not None}
    size = -(-len(lines) // SLICES)
    slices = [
        (lines[i : i + size], [(adapters[n], p) for n, p in filter(None, routed[i : i + size])])
        for i in range(0, len(lines), size)
    ]
    ours_rounds, floor_rounds = [], []
    for _ in range(ROUNDS):
        reader = MessageReader()
        ours_s = floor_s = 0.0
        for chunk, payloads in slices:
            start = time.process_time()
            for line in chunk:
                reader.read_line(line)
            middle = time.process_time()
            for adapter, payload in payloads:
                adapter.validate_json(payload, strict=True)
            floor_s += time.process_time() - middle
            ours_s += middle - start
        ours_rounds.append(ours_s)
        floor_rounds.append(floor_s)
    return statistics.median(ours_rounds), statistics.median(floor_rounds)


def _envelope_models(lines: list[str], routed: list[tuple[str, str] | None]) -> list[tuple[Any, str]]:
    """For each line, a validator of its whole message (envelope and payload, one pydantic model per form) and
    the line itself: the floor of line 3. A line whose payload has no type is validated with the payload as any
    JSON value."""
    from typing import Literal

    from acp_v2_schema import models
    from acp_v2_schema.reader import ID_TYPE
    from pydantic import TypeAdapter, create_model

    request_id = getattr(models, ID_TYPE)
    made: dict[tuple[str, ...], Any] = {}

    def model(form: tuple[str, ...]) -> Any:
        found = made.get(form)
        if found is None:
            kind, method, name = form
            payload = Any if name == "-" else getattr(models, name)
            fields: dict[str, Any] = {"jsonrpc": (Literal["2.0"], ...)}
            # the id as the spec's envelopes type it: a request id (an integer in the id type's range, or a
            # string), and in an error response a request id or null
            if kind in ("request", "response"):
                fields["id"] = (request_id, ...)
            elif kind == "error":
                fields["id"] = (request_id | None, ...)
            if kind in ("request", "notification"):
                fields["method"] = (Literal[method], ...)  # type: ignore[valid-type]
                fields["params"] = (payload, ...)
            else:
                fields["result" if kind == "response" else "error"] = (payload, ...)
            found = made[form] = TypeAdapter(create_model(f"Whole{len(made)}", **fields)).validator
        return found

    out = []
    for line, pre in zip(lines, routed, strict=True):
        message = json.loads(line)
        name = pre[0] if pre is not None else "-"
        if "method" in message:
            form = ("request" if "id" in message else "notification", message["method"], name)
        else:
            form = ("error" if "error" in message else "response", "", name)
        out.append((model(form), line))
    return out


def whole_message(lines: list[str], routed: list[tuple[str, str] | None]) -> tuple[float, float]:
    """Median CPU seconds of ours and of the whole-message floor (line 3), each round alternating slice by slice."""
    from acp_v2_schema.reader import MessageReader

    pairs = _envelope_models(lines, routed)
    for validator, line in pairs[:1000]:
        validator.validate_json(line, strict=True)  # every floor model accepts its lines
    size = -(-len(lines) // SLICES)
    slices = [(lines[i : i + size], pairs[i : i + size]) for i in range(0, len(lines), size)]
    ours_rounds, floor_rounds = [], []
    for _ in range(ROUNDS):
        reader = MessageReader()
        ours_s = floor_s = 0.0
        for chunk, floor in slices:
            start = time.process_time()
            for line in chunk:
                reader.read_line(line)
            middle = time.process_time()
            for validator, line in floor:
                validator.validate_json(line, strict=True)
            floor_s += time.process_time() - middle
            ours_s += middle - start
        ours_rounds.append(ours_s)
        floor_rounds.append(floor_s)
    return statistics.median(ours_rounds), statistics.median(floor_rounds)


KEYED_PAIRS = 100_000  # 300,000 lines a stream: past the default window of keys, as a long session is
KEYED_ROUNDS = 3


def _keyed_stream(keyed: bool) -> list[str]:
    """Prompts (each with its own key, or none), their answers and a tool-call update each."""
    lines = []
    for n in range(1, KEYED_PAIRS + 1):
        params: dict[str, Any] = {"sessionId": "s", "prompt": [{"type": "text", "text": "Fix the failing test."}]}
        if keyed:
            params["idempotencyKey"] = f"0b4f9c58-7a1e-4d3b-{n:012d}"
        lines.append(json.dumps({"jsonrpc": "2.0", "id": n, "method": "session/prompt", "params": params}))
        lines.append(json.dumps({"jsonrpc": "2.0", "id": n, "result": {"messageId": f"m{n}"}}))
        update = {"sessionUpdate": "tool_call", "toolCallId": f"c{n}", "title": "Edit", "rawInput": {"n": n}}
        lines.append(
            json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": update}})
        )
    return lines


def keyed_ratio() -> Ratio:
    from acp_v2_runtime.validate import validate_lines

    keyed, unkeyed = _keyed_stream(True), _keyed_stream(False)
    assert list(validate_lines(unkeyed)) == []
    # the keyed stream holds more keys than the window: the one warning that the oldest are forgotten
    assert [p.warning and "--window" in p.message for p in validate_lines(keyed)] == [True]
    ours, reference = interleaved(
        lambda: list(validate_lines(keyed)),
        lambda: list(validate_lines(unkeyed)),
        rounds=KEYED_ROUNDS,
        clock=time.process_time,
    )
    count = len(keyed)
    return Ratio(
        f"validate_lines of {count} lines (prompts, answers, tool-call updates), every prompt keyed vs none keyed "
        "(CPU time, per line)",
        ours / count * 1e6,
        reference / count * 1e6,
        "µs/line",
        1.5,
        higher_is_better=False,
    )


def run() -> list[Ratio]:
    from acp_v2_schema.reader import Invalid, MessageReader

    lines, routed = corpus()
    reader_check = MessageReader()
    bad = [m for line in lines for m in reader_check.read_line(line) if isinstance(m, Invalid)]
    assert not bad, bad[:3]  # the corpus is valid: both sides do the same, complete work

    ours_s, floor_s = in_process(lines, routed)
    out = [
        Ratio(
            f"validate {LINES} messages in process (CPU time): MessageReader.read_line of each line (parse, route, "
            "validate) vs TypeAdapter.validate_json of each pre-routed params/result/error text (payload only)",
            LINES / ours_s,
            LINES / floor_s,
            "msg/s",
            None,
            higher_is_better=True,
        )
    ]
    ours_s, floor_s = whole_message(lines, routed)
    out.append(
        Ratio(
            f"validate {LINES} messages in process (CPU time): MessageReader.read_line of each line vs one pydantic "
            "model per (method, kind) for the whole message, envelope and payload, validate_json on the same lines",
            LINES / ours_s,
            LINES / floor_s,
            "msg/s",
            0.85,
            higher_is_better=True,
        )
    )
    out.append(keyed_ratio())
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "session.ndjson"
        log.write_text("\n".join(lines) + "\n", encoding="utf-8")
        pre = Path(tmp) / "routed.tsv"
        pre.write_text("".join(f"{n}\t{p}\n" for n, p in filter(None, routed)), encoding="utf-8")
        command = [sys.executable, "-m", "acp_v2_runtime.validate", str(log)]
        reference = [sys.executable, "-c", _FLOOR_CHILD, str(pre)]
        cmd_runs, ref_runs = [], []
        for _ in range(COMMAND_ROUNDS):
            cmd_runs.append(_child_cpu(command))
            ref_runs.append(_child_cpu(reference))
    out.append(
        Ratio(
            f"validate command on a {LINES}-line file, start-up included (child CPU time): "
            "python -m acp_v2_runtime.validate FILE vs a fresh interpreter importing the models and running the "
            "pre-routed validate_json loop",
            LINES / statistics.median(cmd_runs),
            LINES / statistics.median(ref_runs),
            "msg/s",
            0.5,
            higher_is_better=True,
        )
    )
    return out
