"""generated/rust/retry_policy.rs: the retry table and the key validator for Rust SDKs (standard library only)."""

from __future__ import annotations

from ... import paths
from ...model import naming
from ...model.spec import Spec
from ..markers import NOTICE
from ..templates import render_output
from .vectors import MESSAGE_KINDS

RUST_PATH = paths.RUST
RUSTFMT_ARRAY_WIDTH = 60


def rust_string(value: str) -> str:
    """A Rust string literal: printable ASCII as is, everything else as a `\\u{...}` escape."""
    out = []
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif " " <= ch <= "~":
            out.append(ch)
        else:
            out.append(f"\\u{{{ord(ch):x}}}")
    return '"' + "".join(out) + '"'


def _fits_one_line(enum: str, members: list[str]) -> bool:
    """Whether rustfmt keeps the `ALL` array on one line (its default `array_width` is 60)."""
    return len("[" + ", ".join(f"{enum}::{naming.pascal_case(m)}" for m in members) + "]") <= RUSTFMT_ARRAY_WIDTH


def render(spec: Spec) -> dict[str, str]:
    names = [
        ("RetryClass", [c.name for c in spec.classes]),
        ("FailureKind", [f.name for f in spec.failure_kinds]),
        ("Decision", [d.name for d in spec.decisions]),
        ("MessageKind", list(MESSAGE_KINDS)),
    ]
    text = render_output(
        RUST_PATH,
        header=f"// {NOTICE}",
        spec=spec,
        names=names,
        rules=spec.key_rules,
        rs=rust_string,
        inline={enum: _fits_one_line(enum, members) for enum, members in names},
    )
    return {RUST_PATH: text}
