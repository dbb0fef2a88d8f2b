"""retry-policy.json: the language-neutral retry table that SDKs read."""

from __future__ import annotations

from typing import Any

from ..model import Method, Spec
from .markers import json_text

POLICY_PATH = "generated/retry-policy.json"


def policy(spec: Spec) -> dict[str, Any]:
    """The retry table as plain data: vocabularies first, then one row per (method, kind)."""
    return {
        "failureKinds": [{"name": f.name, "title": f.title, "description": f.description} for f in spec.failure_kinds],
        "decisions": [{"name": d.name, "description": d.description} for d in spec.decisions],
        "classes": [
            {
                "name": c.name,
                "title": c.title,
                "summary": c.summary,
                "meaning": c.meaning,
                "decisions": dict(c.decisions),
            }
            for c in spec.classes
        ],
        "methods": [_row(m) for m in spec.methods],
    }


def _row(method: Method) -> dict[str, Any]:
    row: dict[str, Any] = {
        "method": method.name,
        "kind": method.kind,
        "direction": method.direction,
        "side": method.side,
        "stability": method.stability,
        "class": method.retry_class,
        "keyParam": method.key_param,
        "successEquivalentErrors": [{"code": e.code, "meaning": e.meaning} for e in method.success_errors],
        "params": method.params,
        "result": method.result,
        "repeat": method.repeat,
        "page": f"reference/methods/{method.slug}/",
    }
    if method.variants:
        row["variantField"] = method.variant_field
        row["variants"] = [
            {"name": v.name, "stability": v.stability, "class": v.retry_class, "repeat": v.repeat}
            for v in method.variants
        ]
    return row


def render(spec: Spec) -> dict[str, str]:
    return {POLICY_PATH: json_text(policy(spec))}
