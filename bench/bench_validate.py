"""The message validator against pydantic's own floor, on the same 100,000 messages.

The corpus is built here from the spec's worked examples (`spec/examples/*.yaml`, every message of every step) and
the recorded session (`tests/upstream/session.ndjson`), less extension messages (nothing validates them),
repeated with fresh request ids so that each response still answers the request just before it; 100,000 lines.

1. In process (goal: ours >= 0.6 of the floor, as messages per second). Ours: `MessageReader.read_line` on each
   line: parse, route by method or by the request answered, validate params/result/error with the generated
   models. The floor: the same lines with their types already known ("pre-routed" outside the timing): one
   `TypeAdapter.validate_json` of each message's params/result/error text, nothing else.
2. The command, start-up included (goal: ours >= 0.5): `python -m acp_v2_runtime.validate FILE` against a fresh
   interpreter that imports the models, reads the pre-routed file and calls `validate_json` on each payload.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from bench.common import Ratio, interleaved

ROOT = Path(__file__).resolve().parent.parent
LINES = 100_000
ROUNDS = 5

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


def corpus() -> tuple[list[str], list[tuple[str, str]]]:
    """(lines, pre-routed (type name, payload text) pairs) for LINES messages with fresh ids."""
    from acp_v2_schema.reader import ROUTES

    base = _messages()
    lines: list[str] = []
    routed: list[tuple[str, str]] = []
    renumber: dict[Any, int] = {}
    pending: dict[int, str] = {}
    serial = 0
    while len(lines) < LINES:
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
            if name is not None:
                routed.append((name, json.dumps(payload)))
            if len(lines) == LINES:
                break
    return lines, routed


def run() -> list[Ratio]:
    from acp_v2_schema import models
    from acp_v2_schema.reader import Invalid, MessageReader
    from pydantic import TypeAdapter

    lines, routed = corpus()
    adapters = {name: TypeAdapter(getattr(models, name)) for name, _ in routed}
    reader_check = MessageReader()
    bad = [m for line in lines for m in reader_check.read_line(line) if isinstance(m, Invalid)]
    assert not bad, bad[:3]  # the corpus is valid: both sides do the same, complete work

    def ours() -> None:
        reader = MessageReader()
        for line in lines:
            reader.read_line(line)

    def floor() -> None:
        for name, payload in routed:
            adapters[name].validate_json(payload, strict=True)

    ours_s, floor_s = interleaved(ours, floor, rounds=ROUNDS)
    out = [
        Ratio(
            f"validate {LINES} messages in process: MessageReader (parse, route, validate) vs pre-routed "
            "TypeAdapter.validate_json of each payload",
            LINES / ours_s,
            LINES / floor_s,
            "msg/s",
            0.6,
            higher_is_better=True,
        )
    ]
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "session.ndjson"
        log.write_text("\n".join(lines) + "\n", encoding="utf-8")
        pre = Path(tmp) / "routed.tsv"
        pre.write_text("".join(f"{n}\t{p}\n" for n, p in routed), encoding="utf-8")
        command = [sys.executable, "-m", "acp_v2_runtime.validate", str(log)]
        reference = [sys.executable, "-c", _FLOOR_CHILD, str(pre)]

        def timed(argv: list[str]):
            def go() -> None:
                subprocess.run(argv, check=True, capture_output=True)

            return go

        cmd_s, ref_s = interleaved(timed(command), timed(reference), rounds=3)
    out.append(
        Ratio(
            f"validate command on a {LINES}-line file, start-up included, vs a fresh interpreter running the "
            "pre-routed validate_json loop",
            LINES / cmd_s,
            LINES / ref_s,
            "msg/s",
            0.5,
            higher_is_better=True,
        )
    )
    return out
