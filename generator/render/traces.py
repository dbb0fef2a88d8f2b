"""generated/conformance/idempotency-traces.json: the keyed-prompt conformance traces, as steps.

The traces were loaded and checked with the rest of the spec (generator/conformance.py). The same document is
shipped inside the Python package, where `python -m acp_v2_runtime.conformance` reads it.
"""

from __future__ import annotations

import json

from .. import paths
from ..model import Spec
from .markers import json_text

TRACES_PATH = paths.TRACES
PACKAGED_PATH = f"{paths.PYTHON_DATA}/idempotency-traces.json"


def render(spec: Spec) -> dict[str, str]:
    if spec.traces_json is None:
        return {}
    text = json_text(json.loads(spec.traces_json))
    return {TRACES_PATH: text, PACKAGED_PATH: text}
