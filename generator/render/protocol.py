"""`acp_v2_schema/protocol.py`: the names the spec gives, as code: every method name and the error codes ACP defines.

The runtime package and SDKs import these instead of writing `"session/prompt"` or `-32602` by hand, so a rename in
the spec reaches them through `make generate`.
"""

from __future__ import annotations

from typing import NamedTuple

from .. import naming
from ..model import Spec
from .templates import render as render_template

ERROR_CODE_TYPE = "ErrorCode"


class NamedCode(NamedTuple):
    """An error code the spec names (a titled `const` branch of `ErrorCode`)."""

    name: str
    code: int
    title: str


def error_codes(spec: Spec) -> list[NamedCode]:
    """The titled branches of the `ErrorCode` type, in spec order; empty when the spec has no such type."""
    if ERROR_CODE_TYPE not in {t.name for t in spec.types}:
        return []
    branches = spec.type_def(ERROR_CODE_TYPE).schema.get("anyOf", [])
    return [
        NamedCode(naming.title_constant(b["title"]), b["const"], b["title"])
        for b in branches
        if isinstance(b, dict) and "const" in b and "title" in b
    ]


def method_names(spec: Spec) -> list[tuple[str, str]]:
    """(constant, method name) for every distinct method name, sorted by name."""
    return [(naming.method_constant(name), name) for name in sorted({m.name for m in spec.methods})]


def render(spec: Spec, header: str) -> str:
    """The module text (formatted later with the rest of the package)."""
    return render_template("protocol.py.j2", header=header, methods=method_names(spec), error_codes=error_codes(spec))
