"""PromptRequest.model_validate_json throughput against the official `acp.schema.PromptRequest` (goal: >= 1).

Both parse the same JSON payload (a text block and an embedded resource); the official v1 model ignores the
`idempotencyKey` field, which it does not know. Runs are interleaved so that machine noise hits both alike.
"""

from __future__ import annotations

import json
from pathlib import Path

from bench.common import Ratio, interleaved

ROOT = Path(__file__).resolve().parent.parent
PAYLOAD = json.dumps(
    {
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
        "idempotencyKey": "0b4f9c58-7a1e-4d3b-9f62-2c8e51d7a0c4",
    }
)
BATCH = 2000


def run() -> list[Ratio]:
    from acp.schema import PromptRequest as Official
    from acp_v2_schema.models import PromptRequest as Ours

    Ours.model_validate_json(PAYLOAD), Official.model_validate_json(PAYLOAD)  # warm up both

    def ours() -> None:
        for _ in range(BATCH):
            Ours.model_validate_json(PAYLOAD)

    def official() -> None:
        for _ in range(BATCH):
            Official.model_validate_json(PAYLOAD)

    t_ours, t_official = interleaved(ours, official, rounds=15)
    return [
        Ratio(
            "PromptRequest.model_validate_json: ours vs acp.schema (validations per second)",
            BATCH / t_ours,
            BATCH / t_official,
            "/s",
            goal=1.0,
            higher_is_better=True,
        )
    ]
