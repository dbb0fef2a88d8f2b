"""What open unions cost: unknown against known variants, and the open models against the closed form they replaced.

Every figure validates the params of one `session/update` notification from JSON (`model_validate_json` on
`UpdateSessionNotification`), in fresh processes, interleaved, timed in CPU time:

1. an update of an unknown kind (`_acme_widget`, fields of the same size as the known one's) against a known
   `agent_message_chunk` on the open models (goal: at most 1.2x);
2. the known update on the open models against the same update on closed models: the same pipeline with the
   open-union pass turned off, so unions are as datamodel-code-generator writes them and every other line of the
   package is the same, keeping unknown fields included (goal: at most 1.05x). This is the cost of the open unions
   alone, with both sides doing the same work;
3. beside it, with no goal, the known update on the open models against the form before both changes of issue 10:
   closed unions and models that drop the fields they do not know. That form does less work (it loses the unknown
   fields a proxy must forward), so the line shows what lossless round trips cost on top of the open unions.

The closed packages are built from the same spec in a temporary directory. Each line is measured in several fresh
processes and each side's median across them is reported: within one process, an A/A check (the installed package
against a copy of itself) came out anywhere from 1.00 to 1.03, a tilt that lasts the whole run (likely where each
package's validators lie in memory) and that one process cannot average away. Counted in instructions (callgrind,
fixed hash seeds), the open unions of line 2 cost 1% (22.9k against 22.6k per message).
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
CHILDREN = 5  # fresh processes, each measuring every line (see the module docstring)
_CLOSED = (("acp_v2_schema_closed", True), ("acp_v2_schema_closed_lossy", False))
_CHILD = "import json, sys; from bench.bench_unions import measure; print(json.dumps(measure(sys.argv[1])))"


def _closed_package(dest: Path, name: str, *, keep_unknown_fields: bool) -> str:
    """The generated package with closed unions, importable as `name` from `dest`."""
    from generator.pipeline import load_spec
    from generator.render.python.package import MODELS, PACKAGE, models_files

    package = dest / name
    shutil.copytree(ROOT / PACKAGE, package)
    spec = load_spec(ROOT / "spec", ROOT)
    for rel, text in models_files(spec, open_unions_pass=False, keep_unknown_fields=keep_unknown_fields).items():
        (package / "models" / Path(rel).relative_to(MODELS)).write_text(text, encoding="utf-8")
    return package.name


def measure(packages: str) -> dict[str, float]:
    """Seconds per batch of each side of each line, in this process; the closed packages are found in `packages`."""
    from acp_v2_schema.models import UpdateSessionNotification as Open

    sys.path.insert(0, packages)
    try:
        closed, lossy = (importlib.import_module(f"{name}.models").UpdateSessionNotification for name, _ in _CLOSED)
    finally:
        sys.path.remove(packages)
    for model, payload in ((Open, KNOWN), (Open, UNKNOWN), (closed, KNOWN), (lossy, KNOWN)):
        model.model_validate_json(payload)  # every payload is accepted, and each validator is built now
    assert "futureField" in closed.model_validate_json(KNOWN[:-1] + b',"futureField":1}').model_extra
    assert lossy.model_validate_json(KNOWN[:-1] + b',"futureField":1}').model_extra is None

    def batch(model: type, payload: bytes):
        def go() -> None:
            for _ in range(BATCH):
                model.model_validate_json(payload)

        return go

    out: dict[str, float] = {}
    for (a, b), (first, second) in (
        (("unknown", "known"), ((Open, UNKNOWN), (Open, KNOWN))),
        (("open_known", "closed_known"), ((Open, KNOWN), (closed, KNOWN))),
        (("open_again", "lossy_known"), ((Open, KNOWN), (lossy, KNOWN))),
    ):
        out[a], out[b] = interleaved(batch(*first), batch(*second), rounds=ROUNDS, clock=time.process_time)
    return out


def run() -> list[Ratio]:
    with tempfile.TemporaryDirectory() as tmp:
        for name, keep in _CLOSED:
            _closed_package(Path(tmp), name, keep_unknown_fields=keep)
        runs = [
            json.loads(
                subprocess.run(
                    [sys.executable, "-c", _CHILD, tmp], capture_output=True, text=True, check=True, cwd=ROOT
                ).stdout
            )
            for _ in range(CHILDREN)
        ]
    median = {key: statistics.median(found[key] for found in runs) for key in runs[0]}
    unknown, known = median["unknown"], median["known"]
    open_known, closed_known = median["open_known"], median["closed_known"]
    open_again, lossy_known = median["open_again"], median["lossy_known"]
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
            "session/update params, known variant: open unions vs closed unions (both keep unknown fields)",
            open_known * per,
            closed_known * per,
            "µs/msg",
            1.05,
            higher_is_better=False,
        ),
        Ratio(
            "session/update params, known variant: open, lossless models vs the closed models that dropped unknown "
            "fields (the form before issue 10, doing less work)",
            open_again * per,
            lossy_known * per,
            "µs/msg",
            None,
            higher_is_better=False,
        ),
    ]
