"""`elicitation/create` params dispatched on their `mode` tag (issue 35): what the union costs over its branch.

For each mode (the spec example's form, and a URL elicitation), `TypeAdapter(CreateElicitationRequest)` against
`TypeAdapter` of the branch the message lands in, `validate_json` of the same text, CPU time, interleaved. Goal: at
most 1.5x. (Before, the union tried its branches in turn, the open one last.)
"""

from __future__ import annotations

import json
import time
from typing import Any

import yaml

from bench.common import ROOT, Ratio, interleaved

CALLS = 2000
ROUNDS = 15
URL = {"sessionId": "sess_7d2c19", "mode": "url", "message": "Sign in", "elicitationId": "e1", "url": "https://a.b/c"}


def run() -> list[Ratio]:
    from acp_v2_schema import models
    from pydantic import TypeAdapter

    example = yaml.safe_load((ROOT / "spec" / "examples" / "elicitation-create.yaml").read_text(encoding="utf-8"))
    form = next(s["message"]["params"] for s in example["steps"] if s["message"].get("method") == "elicitation/create")
    union: TypeAdapter[Any] = TypeAdapter(models.CreateElicitationRequest)
    out = []
    for mode, payload, branch in (
        ("form", form, models.CreateElicitationRequestForm),
        ("url", URL, models.CreateElicitationRequestUrl),
    ):
        text = json.dumps(payload)
        alone: TypeAdapter[Any] = TypeAdapter(branch)
        assert type(union.validate_json(text)) is type(alone.validate_json(text))

        def calls(adapter: TypeAdapter[Any] = union, text: str = text) -> None:
            for _ in range(CALLS):
                adapter.validate_json(text)

        def branch_calls(adapter: TypeAdapter[Any] = alone, text: str = text) -> None:
            for _ in range(CALLS):
                adapter.validate_json(text)

        ours, reference = interleaved(calls, branch_calls, rounds=ROUNDS, clock=time.process_time)
        out.append(
            Ratio(
                f"validate_json of elicitation/create params, mode {mode}: CreateElicitationRequest (dispatched on "
                f"mode) vs its {mode} branch alone",
                ours / CALLS * 1e6,
                reference / CALLS * 1e6,
                "µs/msg",
                1.5,
                higher_is_better=False,
            )
        )
    return out
