"""`acp_v2_schema/protocol.py`: the names the spec gives, as code: every method name and the error codes ACP defines.

Error codes and their titles come from the error-code table (`errorCodes` in spec/retry-classes.yaml), which the
validator keeps equal to the `ErrorCode` type's codes.

The runtime package and SDKs import these instead of writing `"session/prompt"` or `-32602` by hand, so a rename in
the spec reaches them through `make generate`.
"""

from __future__ import annotations

from typing import NamedTuple

from ... import paths
from ...model import naming
from ...model.spec import Spec
from ..templates import render_output


class NamedCode(NamedTuple):
    """An error code the spec names (a row of the error-code table in spec/retry-classes.yaml)."""

    name: str
    code: int
    title: str


def error_codes(spec: Spec) -> list[NamedCode]:
    """The error codes of the spec's error-code table, in spec order; empty when the spec has none."""
    return [NamedCode(naming.title_constant(r.title), r.code, r.title) for r in spec.error_rules if r.code is not None]


def method_names(spec: Spec) -> list[tuple[str, str]]:
    """(constant, method name) for every distinct method name, sorted by name."""
    return [(naming.method_constant(name), name) for name in sorted({m.name for m in spec.methods})]


def render(spec: Spec, header: str) -> str:
    """The module text (formatted later with the rest of the package)."""
    return render_output(
        paths.PYTHON_PROTOCOL,
        header=header,
        methods=method_names(spec),
        error_codes=error_codes(spec),
        kinds=sorted({m.kind for m in spec.methods}),
    )
