"""What open unions cost: unknown against known variants, and the open models against the closed form they replaced.

Both figures validate the params of one `session/update` notification from JSON (`model_validate_json` on
`UpdateSessionNotification`), in this process, interleaved, timed in CPU time:

1. an update of an unknown kind (`_acme_widget`, fields of the same size as the known one's) against a known
   `agent_message_chunk` on the open models (goal: at most 1.2x);
2. the known update on the open models against the same update on the closed models, as datamodel-code-generator
   writes them before the open-union pass, built from the same spec in a temporary directory (goal: at most 1.05x).
"""

from __future__ import annotations

import importlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench.common import Ratio, interleaved

ROOT = Path(__file__).resolve().parent.parent
KNOWN = (
    b'{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk","messageId":"msg_1",'
    b'"content":{"type":"text","text":"Reading the parser module to find where tokens are split."}}}'
)
UNKNOWN = (
    b'{"sessionId":"sess_1","update":{"sessionUpdate":"_acme_widget","messageId":"msg_1",'
    b'"content":{"type":"text","text":"Reading the parser module to find where tokens are split."}}}'
)
BATCH = 2000
ROUNDS = 31


def _closed_package(dest: Path) -> str:
    """The generated package with closed unions, importable as `acp_v2_schema_closed` from `dest`."""
    from generator.pipeline import load_spec
    from generator.render.python_pkg import MODELS, PACKAGE, models_files

    package = dest / "acp_v2_schema_closed"
    shutil.copytree(ROOT / PACKAGE, package)
    for rel, text in models_files(load_spec(ROOT / "spec", ROOT), open_unions_pass=False).items():
        (package / "models" / Path(rel).relative_to(MODELS)).write_text(text, encoding="utf-8")
    return package.name


def run() -> list[Ratio]:
    from acp_v2_schema.models import UpdateSessionNotification as Open

    with tempfile.TemporaryDirectory() as tmp:
        sys.path.insert(0, tmp)
        try:
            closed = importlib.import_module(f"{_closed_package(Path(tmp))}.models").UpdateSessionNotification
        finally:
            sys.path.remove(tmp)
        for model, payload in ((Open, KNOWN), (Open, UNKNOWN), (closed, KNOWN)):
            model.model_validate_json(payload)  # every payload is accepted, and each validator is built now

        def batch(model: type, payload: bytes):
            def go() -> None:
                for _ in range(BATCH):
                    model.model_validate_json(payload)

            return go

        unknown, known = interleaved(batch(Open, UNKNOWN), batch(Open, KNOWN), rounds=ROUNDS, clock=time.process_time)
        open_known, closed_known = interleaved(
            batch(Open, KNOWN), batch(closed, KNOWN), rounds=ROUNDS, clock=time.process_time
        )
    per = 1e6 / BATCH
    return [
        Ratio(
            "session/update params, unknown variant (_acme_widget) vs known (agent_message_chunk), open models",
            unknown * per,
            known * per,
            "µs/msg",
            1.2,
            higher_is_better=False,
        ),
        Ratio(
            "session/update params, known variant: open models vs the closed form they replaced",
            open_known * per,
            closed_known * per,
            "µs/msg",
            1.05,
            higher_is_better=False,
        ),
    ]
