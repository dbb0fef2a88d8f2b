"""generated/typescript/retry-policy.ts: the retry table and the key validator for TypeScript SDKs."""

from __future__ import annotations

import json
from itertools import groupby

from ... import paths
from ...model.spec import Method, Spec
from ..markers import NOTICE
from ..templates import render_output

TS_PATH = paths.TYPESCRIPT


def ts_string(value: str) -> str:
    """A TypeScript string literal (JSON's escapes are valid JavaScript, and ASCII keeps it readable anywhere)."""
    return json.dumps(value, ensure_ascii=True)


def method_groups(spec: Spec) -> list[tuple[str, list[Method]]]:
    """Entries grouped by method name (the model sorts them by name, then kind)."""
    return [(name, list(forms)) for name, forms in groupby(spec.methods, key=lambda m: m.name)]


def render(spec: Spec) -> dict[str, str]:
    text = render_output(
        TS_PATH,
        header=f"// {NOTICE}",
        spec=spec,
        table=method_groups(spec),
        rules=spec.key_rules,
        ts=ts_string,
    )
    return {TS_PATH: text}
