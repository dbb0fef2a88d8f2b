"""What lenient reading (issue 25) costs: the models with their second, lenient read against the same models without.

Every figure is `model_validate_json` throughput, in fresh processes, interleaved, in CPU time; each side's median
across the processes is reported (one process can tilt a line by a few percent, as bench_unions explains):

1. messages that need no salvage (a small keyed prompt, a `tool_call_update` notification with content and
   `_meta`), on the package's models against the same pipeline's models with the lenient read left out
   (`models_files(lenient=False)`: strict validation alone, as before issue 25). Goal: at most 1.1x, for each.
   The strict read is the same validator on both sides, so this is the price of the fallback's `try` alone.
2. Informational, no goal: a prompt whose `_meta` is `5`, salvaged (the bad `_meta` dropped and recorded),
   against the clean prompt on the same models: what a salvage costs when one is needed (the strict refusal, the
   JSON parsed again, the lenient read, the record), its lenient validator built beforehand.
"""

from __future__ import annotations

import importlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import Ratio, interleaved

ROOT = Path(__file__).resolve().parent.parent
PROMPT = (
    b'{"sessionId":"sess_1","prompt":[{"type":"text","text":"Fix the failing test in the parser module."},'
    b'{"type":"resource_link","uri":"file:///work/parser.py","name":"parser.py"}],'
    b'"idempotencyKey":"0b4f9c58-7a1e-4d3b-9f62-2c8e51d7a0c4"}'
)
SALVAGED = PROMPT[:-1] + b',"_meta":5}'
UPDATE = (
    b'{"sessionId":"sess_1","update":{"sessionUpdate":"tool_call_update","toolCallId":"call_1","status":"completed",'
    b'"content":[{"type":"content","content":{"type":"text","text":"3 tests passed"}}],"_meta":{"trace":"t1"}}}'
)
BATCH = 2000
ROUNDS = 31
CHILDREN = 5
_STRICT = "acp_v2_schema_strict"
_CHILD = "import json, sys; from bench.bench_lenient import measure; print(json.dumps(measure(sys.argv[1])))"


def _strict_package(dest: Path) -> None:
    """The generated package without the lenient read, importable as `_STRICT` from `dest`."""
    from generator.pipeline import load_spec
    from generator.render.python.package import MODELS, PACKAGE, models_files

    package = dest / _STRICT
    shutil.copytree(ROOT / PACKAGE, package)
    spec = load_spec(ROOT / "spec", ROOT)
    for rel, text in models_files(spec, lenient=False).items():
        (package / "models" / Path(rel).relative_to(MODELS)).write_text(text, encoding="utf-8")


def measure(packages: str) -> dict[str, float]:
    """Seconds per batch of each side of each line, in this process; the strict package is found in `packages`."""
    from acp_v2_schema import models

    sys.path.insert(0, packages)
    try:
        strict = importlib.import_module(f"{_STRICT}.models")
    finally:
        sys.path.remove(packages)
    sides = {
        "prompt": (models.PromptRequest, strict.PromptRequest, PROMPT),
        "update": (models.UpdateSessionNotification, strict.UpdateSessionNotification, UPDATE),
    }
    for ours, theirs, payload in sides.values():
        assert ours.model_validate_json(payload).model_salvaged == ()
        theirs.model_validate_json(payload)  # each validator is built now
    assert [s.path for s in models.PromptRequest.model_validate_json(SALVAGED).model_salvaged] == [("_meta",)]
    try:
        strict.PromptRequest.model_validate_json(SALVAGED)
    except ValueError:
        pass
    else:
        raise AssertionError("the strict package salvaged a message")

    def batch(model: type, payload: bytes):
        def go() -> None:
            for _ in range(BATCH):
                model.model_validate_json(payload)

        return go

    out: dict[str, float] = {}
    for name, (ours, theirs, payload) in sides.items():
        out[f"{name}_lenient"], out[f"{name}_strict"] = interleaved(
            batch(ours, payload), batch(theirs, payload), rounds=ROUNDS, clock=time.process_time
        )
    salvaged, clean = batch(models.PromptRequest, SALVAGED), batch(models.PromptRequest, PROMPT)
    out["salvaged"], out["clean"] = interleaved(salvaged, clean, rounds=ROUNDS, clock=time.process_time)
    return out


def run() -> list[Ratio]:
    with tempfile.TemporaryDirectory() as tmp:
        _strict_package(Path(tmp))
        runs = [
            json.loads(
                subprocess.run(
                    [sys.executable, "-c", _CHILD, tmp], capture_output=True, text=True, check=True, cwd=ROOT
                ).stdout
            )
            for _ in range(CHILDREN)
        ]
    median = {key: statistics.median(found[key] for found in runs) for key in runs[0]}
    per = 1e6 / BATCH
    lines = [
        Ratio(
            f"model_validate_json, {what} that needs no salvage: the models with the lenient read vs without"
            " (strict alone)",
            median[f"{name}_lenient"] * per,
            median[f"{name}_strict"] * per,
            "µs/msg",
            1.1,
            higher_is_better=False,
        )
        for name, what in (("prompt", "a small keyed prompt"), ("update", "a tool_call_update notification"))
    ]
    lines.append(
        Ratio(
            "model_validate_json, a prompt whose _meta is 5, salvaged (dropped and recorded) vs the clean prompt",
            median["salvaged"] * per,
            median["clean"] * per,
            "µs/msg",
            None,
            higher_is_better=False,
        )
    )
    return lines
