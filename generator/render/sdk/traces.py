"""generated/conformance/idempotency-traces.json: the keyed-prompt conformance traces, as steps; and their page.

The traces were loaded and checked with the rest of the spec (generator/check/conformance.py). The same document is
shipped inside the Python package, where `python -m acp_v2_runtime.conformance` reads it, and summed up on
site/reference/conformance-traces.md: the handshake, what each trace needs of an Agent, and what it checks.
"""

from __future__ import annotations

import json

from ... import paths
from ...model.spec import Spec
from ..markers import json_text, markdown_header
from ..templates import render_output

TRACES_PATH = paths.TRACES
PACKAGED_PATH = f"{paths.PYTHON_DATA}/idempotency-traces.json"
PAGE = paths.TRACES_PAGE
SOURCE = "spec/conformance/idempotency-traces.yaml"


def render(spec: Spec) -> dict[str, str]:
    if spec.traces_json is None:
        return {}
    document = json.loads(spec.traces_json)
    text = json_text(document)
    page = render_output(PAGE, header=markdown_header(SOURCE), source=SOURCE, doc=document)
    return {TRACES_PATH: text, PACKAGED_PATH: text, PAGE: page}
