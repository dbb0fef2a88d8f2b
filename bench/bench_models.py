"""The generated models against the official `acp.schema` (agent-client-protocol, ACP v1, a similar size).

1. Import time: `import acp_v2_schema.models` against `import acp.schema`, each in a fresh interpreter, rounds
   interleaved; once with pydantic's machinery loaded first (the cost of the models themselves) and once from
   nothing (what a user waits for). Goal: ours <= 0.25 of theirs. Our models load per family on first access, so
   this is the price of the import alone.
2. Import and build every validator: `import acp_v2_schema.models`, then every model class of its `__all__`
   (which loads every family module) gets its validator built (ours build on first use, `defer_build`), against
   `import acp.schema`, which builds every one of its models at import; each child then checks that every model
   class it offers has a built validator. Judged with pydantic's machinery loaded before the clock in both
   children, which leaves the cost of the models themselves (goal: ours <= 0.4 of theirs); beside it,
   informational, the same from nothing (the import of pydantic, about 80 ms on each side, is shared work that no
   model of ours can shorten, and no precomputed core schema is shipped to skip it).
3. The first validated message, what a user feels: import the package, then `model_validate_json` of one
   `initialize` request's params, one `session/new`, one keyed `session/prompt` and one `session/update`
   (`agent_message_chunk`), each in its protocol's shape, against the same with `acp.schema` (whose import builds
   everything). Judged like line 2, with pydantic imported before the clock in both children (goal: ours <= 0.25);
   the same from nothing is printed beside it. Counted with pydantic's import, the line could not reach 0.25: that
   import alone is nearly a quarter of the reference's whole time (about 95 of 420 ms here), which would leave our
   models a few milliseconds to define some 190 classes and build four validators (about 70 ms).
4. `model_validate_json` on the same message in both protocols' shapes (the nearest `acp.schema` model for each
   of our types), as throughput. Goal: ours >= 1.0 of theirs, for each message. `session/prompt` params are in
   bench_prompt, with both of its payloads.

The import figures are CPU time spent in each child from just before its import to the end (interpreter start-up
left out on both sides), every module loaded from bytecode on both sides (written to a temporary cache by an untimed
first run of each); the throughput figures are CPU time of this process, rounds interleaved.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import Ratio, interleaved

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIR = ROOT / "generated" / "python"
IMPORT_ROUNDS = 3  # the import-alone lines, far from their goal
BUILD_ROUNDS = 9  # the two build-every-validator lines, the close ones (each child takes a fraction of a second)
VALIDATE_ROUNDS = 15
CALLS_PER_ROUND = 300

# The child times one import in a fresh interpreter. With `preload`, it first imports the pydantic machinery that
# both modules use (pydantic loads its parts lazily, so `import pydantic` alone is not enough): what is left is the
# cost of the models themselves, the part that is ours to make fast.
_CHILD = """
import time
if {preload}:
    import typing_extensions
    from pydantic import BaseModel, ConfigDict, Field, RootModel, TypeAdapter
    import pydantic.fields, pydantic.main
start = time.process_time()
import {module}
{use}
print(time.process_time() - start)
"""

# What the child does after the import to have every validator built: every model class each module offers gets its
# validator (ours on demand; theirs has them from the import), and must then have a real one, not pydantic's
# placeholder for a deferred build. A function, because `model_rebuild` reads its caller's frame.
_BUILD_ALL = """
def build_all(module, names):
    from pydantic import BaseModel
    from pydantic_core import SchemaValidator
    built = 0
    for name in names:
        value = getattr(module, name)
        mine = isinstance(value, type) and value.__module__.startswith(module.__name__)
        if mine and issubclass(value, BaseModel):
            if not value.__pydantic_complete__:
                value.model_rebuild()
            assert isinstance(value.__pydantic_validator__, SchemaValidator), name
            built += 1
    assert built > 100, built
"""
_USE_ALL = {
    "acp_v2_schema.models": _BUILD_ALL + "build_all(acp_v2_schema.models, acp_v2_schema.models.__all__)",
    "acp.schema": _BUILD_ALL + "build_all(acp.schema, dir(acp.schema))",
}

# The first messages of a session, for the first-message line: (our model, payload, their model, payload).
FIRST_MESSAGES = (
    (
        "InitializeRequest",
        {"protocolVersion": 2, "info": {"name": "example-editor", "version": "4.2.0"}, "capabilities": {}},
        "InitializeRequest",
        {"protocolVersion": 1, "clientInfo": {"name": "example-editor", "version": "4.2.0"}, "clientCapabilities": {}},
    ),
    ("NewSessionRequest", {"cwd": "/home/dev/project", "mcpServers": []}, "NewSessionRequest", None),
    (
        "PromptRequest",
        {
            "sessionId": "sess-7",
            "prompt": [{"type": "text", "text": "Fix the failing test in parser.py and explain the cause."}],
            "idempotencyKey": "0b4f9c58-7a1e-4d3b-9f62-2c8e51d7a0c4",
        },
        "PromptRequest",
        None,
    ),
    (
        "UpdateSessionNotification",
        {
            "sessionId": "sess-7",
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "messageId": "m-3",
                "content": {"type": "text", "text": "Reading parser.py first."},
            },
        },
        "SessionNotification",
        None,  # None: the same payload as ours
    ),
)


def _first_messages(module: str) -> str:
    """The child's code after the import, for the first-message line: validate each first message of `module`."""
    side = 0 if module == "acp_v2_schema.models" else 1
    calls = [
        f"{module}.{pair[2 * side]}.model_validate_json({json.dumps(pair[2 * side + 1] or pair[1])!r})"
        for pair in FIRST_MESSAGES
    ]
    return "\n".join(calls)


_TEXT = {"type": "text", "text": "Fix the failing test in parser.py and explain the cause."}

# (label, our type, our payload, their type, their payload): the same message, each in its protocol's shape.
PAIRS: list[tuple[str, str, dict[str, Any], str, dict[str, Any]]] = [
    (
        "session/update agent_message_chunk",
        "UpdateSessionNotification",
        {
            "sessionId": "sess-7",
            "update": {"sessionUpdate": "agent_message_chunk", "messageId": "m-3", "content": _TEXT},
        },
        "SessionNotification",
        {
            "sessionId": "sess-7",
            "update": {"sessionUpdate": "agent_message_chunk", "messageId": "m-3", "content": _TEXT},
        },
    ),
    (
        "session/update tool_call_update",
        "UpdateSessionNotification",
        {
            "sessionId": "sess-7",
            "update": {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "call-1",
                "title": "Edit parser.py",
                "kind": "edit",
                "status": "completed",
                "locations": [{"path": "/home/dev/project/parser.py", "line": 42}],
            },
        },
        "SessionNotification",
        {
            "sessionId": "sess-7",
            "update": {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "call-1",
                "title": "Edit parser.py",
                "kind": "edit",
                "status": "completed",
                "locations": [{"path": "/home/dev/project/parser.py", "line": 42}],
            },
        },
    ),
    (
        "session/new params",
        "NewSessionRequest",
        {
            "cwd": "/home/dev/project",
            "mcpServers": [
                {"type": "stdio", "name": "files", "command": "/usr/local/bin/mcp-files", "args": ["--root", "/"]}
            ],
        },
        "NewSessionRequest",
        {
            "cwd": "/home/dev/project",
            "mcpServers": [
                {"name": "files", "command": "/usr/local/bin/mcp-files", "args": ["--root", "/"], "env": []}
            ],
        },
    ),
]


def _import_seconds(module: str, *, preload: bool, pycache: str, use_all: bool = False, use: str = "") -> float:
    # Every child reads compiled bytecode from `pycache`, written by a first untimed run of each side: otherwise our
    # package (installed editable, never compiled) would be compiled from source in every child while theirs loads
    # the bytecode pip wrote at install, and that difference is not the models' cost.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(PACKAGE_DIR), PYTHONPYCACHEPREFIX=pycache)
    use = _USE_ALL[module] if use_all else use
    done = subprocess.run(
        [sys.executable, "-c", _CHILD.format(module=module, preload=preload, use=use)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=ROOT,
    )
    return float(done.stdout.strip().splitlines()[-1])


def import_ratios() -> list[Ratio]:
    with tempfile.TemporaryDirectory(prefix="acp-bench-pycache-") as pycache:
        for module in ("acp_v2_schema.models", "acp.schema"):  # untimed: writes each side's bytecode
            _import_seconds(module, preload=False, pycache=pycache, use_all=True)
        return _import_ratios(pycache)


def _import_ratios(pycache: str) -> list[Ratio]:
    out = []
    for preload, label in ((True, "models only, pydantic preloaded"), (False, "everything, pydantic included")):
        ours, theirs = [], []
        for _ in range(IMPORT_ROUNDS):
            ours.append(_import_seconds("acp_v2_schema.models", preload=preload, pycache=pycache))
            theirs.append(_import_seconds("acp.schema", preload=preload, pycache=pycache))
        out.append(
            Ratio(
                f"import alone, acp_v2_schema.models (lazy: no family loaded, no validator built) vs acp.schema "
                f"(builds every model) (fresh interpreter, {label}, CPU time)",
                statistics.median(ours) * 1000,
                statistics.median(theirs) * 1000,
                "ms",
                0.25,
                higher_is_better=False,
            )
        )
    for preload, label, goal in (
        (True, "pydantic imported before the clock: the models' own cost", 0.4),
        (False, "pydantic's import included", None),
    ):
        ours, theirs = [], []
        for _ in range(BUILD_ROUNDS):
            ours.append(_import_seconds("acp_v2_schema.models", preload=preload, pycache=pycache, use_all=True))
            theirs.append(_import_seconds("acp.schema", preload=preload, pycache=pycache, use_all=True))
        out.append(
            Ratio(
                "import and build every model's validator, acp_v2_schema.models (built on demand, each checked) vs "
                f"acp.schema (built at import, each checked) (fresh interpreter, {label}, CPU time)",
                statistics.median(ours) * 1000,
                statistics.median(theirs) * 1000,
                "ms",
                goal,
                higher_is_better=False,
            )
        )
    what = ", ".join(pair[0] for pair in FIRST_MESSAGES)
    for preload, label, goal in (
        (True, "pydantic imported before the clock", 0.25),
        (False, "pydantic's import included", None),
    ):
        ours, theirs = [], []
        for _ in range(BUILD_ROUNDS):
            for module, sink in (("acp_v2_schema.models", ours), ("acp.schema", theirs)):
                sink.append(_import_seconds(module, preload=preload, pycache=pycache, use=_first_messages(module)))
        out.append(
            Ratio(
                f"first validated messages: import, then model_validate_json of one each of {what} (their "
                f"nearest models, v1 shapes), acp_v2_schema.models vs acp.schema (fresh interpreter, {label}, CPU "
                "time)",
                statistics.median(ours) * 1000,
                statistics.median(theirs) * 1000,
                "ms",
                goal,
                higher_is_better=False,
            )
        )
    return out


def validate_ratios() -> list[Ratio]:
    import acp.schema as theirs_models  # type: ignore[import-not-found]
    from acp_v2_schema import models as our_models

    out = []
    for label, ours_name, ours_payload, theirs_name, theirs_payload in PAIRS:
        ours_model = getattr(our_models, ours_name)
        theirs_model = getattr(theirs_models, theirs_name)
        ours_json, theirs_json = json.dumps(ours_payload), json.dumps(theirs_payload)
        ours_model.model_validate_json(ours_json)  # both must accept their payload, and build their validators now
        theirs_model.model_validate_json(theirs_json)

        def ours_calls(model: Any = ours_model, text: str = ours_json) -> None:
            for _ in range(CALLS_PER_ROUND):
                model.model_validate_json(text)

        def theirs_calls(model: Any = theirs_model, text: str = theirs_json) -> None:
            for _ in range(CALLS_PER_ROUND):
                model.model_validate_json(text)

        t_ours, t_theirs = interleaved(ours_calls, theirs_calls, rounds=VALIDATE_ROUNDS, clock=time.process_time)
        out.append(
            Ratio(
                f"model_validate_json {label} ({ours_name} vs acp.schema.{theirs_name})",
                CALLS_PER_ROUND / t_ours,
                CALLS_PER_ROUND / t_theirs,
                "calls/s",
                1.0,
                higher_is_better=True,
            )
        )
    return out


def run() -> list[Ratio]:
    return [*import_ratios(), *validate_ratios()]
