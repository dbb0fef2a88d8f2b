"""`PromptRequest.model_validate_json` throughput against the official `acp.schema.PromptRequest`.

Each payload is validated by both models from the same JSON text, rounds interleaved, CPU time of this process:

1. the small keyed prompt, the common case (a text block, a resource link and an `idempotencyKey`), against the
   official models made to keep unknown fields as ours do (every `acp.schema` model switched to `extra="allow"`
   and rebuilt): both sides lossless, the same work but for our check of the key, which the official model keeps
   unchecked as an extra field. Goal: >= 1.0.
2. beside it, informational: the same payload against the official models as they ship, which skip the key and
   every other field they do not know (a proxy built on them loses those fields): less work than ours.
3. a text block and an embedded resource (with its text) plus the key, against the shipped official models, with
   the goal >= 1.0: here our models are faster even against the lossy reference.

The official v1 model does not know `idempotencyKey`; ours checks it as the key it is and, like every one of our
models, keeps any field it does not know. The shipped lines are measured first: making the official models
lossless rebuilds them in place.
"""

from __future__ import annotations

import json
import time
from typing import Any

from bench.common import Ratio, interleaved

KEY = "0b4f9c58-7a1e-4d3b-9f62-2c8e51d7a0c4"
TEXT = {"type": "text", "text": "Fix the failing test in parser.py and explain the cause."}
PAYLOADS = {
    "small keyed prompt (text + resource link + key)": {
        "sessionId": "sess-7",
        "prompt": [TEXT, {"type": "resource_link", "uri": "file:///home/dev/project/parser.py", "name": "parser.py"}],
        "idempotencyKey": KEY,
    },
    "embedded-resource prompt (text + embedded resource + key)": {
        "sessionId": "sess_abc123def456",
        "prompt": [
            {"type": "text", "text": "Can you check this function for problems?"},
            {
                "type": "resource",
                "resource": {
                    "uri": "file:///home/user/project/main.py",
                    "mimeType": "text/x-python",
                    "text": "def process(items):\n    for item in items:\n        print(item)\n",
                },
            },
        ],
        "idempotencyKey": KEY,
    },
}
BATCH = 2000
ROUNDS = 31


def _throughput(ours_model: Any, official_model: Any, text: str) -> tuple[float, float]:
    """Validations per second of each model on the same JSON text, rounds interleaved, CPU time."""

    def ours() -> None:
        for _ in range(BATCH):
            ours_model.model_validate_json(text)

    def official() -> None:
        for _ in range(BATCH):
            official_model.model_validate_json(text)

    t_ours, t_official = interleaved(ours, official, rounds=ROUNDS, clock=time.process_time)
    return BATCH / t_ours, BATCH / t_official


def _keep_unknown_fields(module: Any) -> None:
    """Switch every pydantic model of `module` to keep the fields it does not know, and rebuild each validator."""
    from pydantic import BaseModel

    found = [
        value
        for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, BaseModel) and value.__module__ == module.__name__
    ]
    for model in found:
        model.model_config["extra"] = "allow"
    for model in found:
        model.model_rebuild(force=True)


def _line(label: str, reference: str, ours: float, official: float, goal: float | None) -> Ratio:
    return Ratio(
        f"PromptRequest.model_validate_json, {label}: ours vs {reference} (validations per second, CPU time)",
        ours,
        official,
        "/s",
        goal=goal,
        higher_is_better=True,
    )


def run() -> list[Ratio]:
    import acp.schema
    from acp.schema import PromptRequest as Official
    from acp_v2_schema.models import PromptRequest as Ours

    texts = {label: json.dumps(payload) for label, payload in PAYLOADS.items()}
    for text in texts.values():
        assert Ours.model_validate_json(text).idempotency_key == KEY  # both accept it, and build their validators
        Official.model_validate_json(text)
    small, embedded = texts
    shipped = "acp.schema.PromptRequest as shipped (drops unknown fields, the key among them)"
    out = [
        _line(small, shipped, *_throughput(Ours, Official, texts[small]), goal=None),
        _line(embedded, shipped, *_throughput(Ours, Official, texts[embedded]), goal=1.0),
    ]
    _keep_unknown_fields(acp.schema)  # last: the lines above measure the official models as they ship
    assert Official.model_validate_json(texts[small]).model_extra == {"idempotencyKey": KEY}
    lossless = (
        "acp.schema.PromptRequest made to keep unknown fields as ours do (every acp.schema model extra='allow'; "
        "the same work but our key check)"
    )
    out.insert(0, _line(small, lossless, *_throughput(Ours, Official, texts[small]), goal=1.0))
    return out
