"""What a message that needs salvage costs to read (issue 35): linear in the message, and bounded by MAX_SALVAGES.

Each line is `MessageReader.read_line` of one `session/prompt` line, CPU time of this process, interleaved with its
reference, a fresh reader each call:

1. a 3 KB prompt whose text block has 1,000 bad `annotations.audience` items (the number 10, where roles are strings),
   more than `MAX_SALVAGES`, so refused with -32602, against a clean prompt of the same shape and size (1,000 good
   items). Goal: at most 10x. (Before, each bad item's reason searched every error: 14 s.)
2. the same with 10^5 bad items (300 KB), against the clean prompt of the same size. Goal: at most 10x (the
   issue's "under 1 s": the clean read is a few tens of milliseconds). Its absolute time is printed too.
3. Informational: `MAX_SALVAGES` bad items among good ones, salvaged (read, each skip recorded), against the clean
   prompt of the same size: what the most salvage a message may need costs.
"""

from __future__ import annotations

import json
import time

from bench.common import Ratio, interleaved

ROUNDS = 9


def _line(audience: list[object]) -> str:
    block = {"type": "text", "text": "Fix the failing test.", "annotations": {"audience": audience}}
    params = {"sessionId": "sess_1", "prompt": [block]}
    return json.dumps({"jsonrpc": "2.0", "id": 7, "method": "session/prompt", "params": params}, separators=(",", ":"))


def _reading(line: str, repeat: int):
    from acp_v2_schema.reader import MessageReader

    def go() -> None:
        for _ in range(repeat):
            MessageReader().read_line(line)

    return go


def run() -> list[Ratio]:
    from acp_v2_schema.models._salvage import MAX_SALVAGES
    from acp_v2_schema.reader import Invalid, MessageReader, Request

    out = []
    for count, repeat, label in ((1_000, 20, "1,000"), (100_000, 1, "10^5")):
        bad, clean = _line([10] * count), _line([""] * count)  # 3 bytes an item on both sides
        [refused] = MessageReader().read_line(bad)
        assert isinstance(refused, Invalid) and str(MAX_SALVAGES) in refused.problems[0], refused
        assert isinstance(MessageReader().read_line(clean)[0], Request)
        ours, reference = interleaved(
            _reading(bad, repeat), _reading(clean, repeat), rounds=ROUNDS, clock=time.process_time
        )
        out.append(
            Ratio(
                f"read_line of a {len(bad) // 1000} KB session/prompt with {label} bad audience items (refused: more "
                f"than MAX_SALVAGES={MAX_SALVAGES}) vs the clean prompt of the same shape and size ({len(clean)} B)",
                ours / repeat * 1000,
                reference / repeat * 1000,
                "ms/msg",
                10.0,
                higher_is_better=False,
            )
        )
    audience = [1 if i % 10 == 0 else "user" for i in range(10 * MAX_SALVAGES)]
    salvaged, clean = _line(audience), _line(["user"] * len(audience))
    [read] = MessageReader().read_line(salvaged)
    assert isinstance(read, Request) and len(read.params.model_salvaged) == MAX_SALVAGES
    ours, reference = interleaved(_reading(salvaged, 20), _reading(clean, 20), rounds=ROUNDS, clock=time.process_time)
    out.append(
        Ratio(
            f"read_line of a session/prompt with {MAX_SALVAGES} bad audience items among {len(audience)}, salvaged "
            "(each skip recorded) vs the clean prompt of the same size",
            ours / 20 * 1000,
            reference / 20 * 1000,
            "ms/msg",
            None,
            higher_is_better=False,
        )
    )
    return out
