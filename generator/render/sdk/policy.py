"""retry-policy.json: the language-neutral retry table that SDKs read."""

from __future__ import annotations

from typing import Any

from ... import paths
from ...model.spec import ErrorRule, Method, Spec
from ..markers import json_text

POLICY_PATH = paths.POLICY


def policy(spec: Spec) -> dict[str, Any]:
    """The retry table as plain data: vocabularies first, then one row per (method, kind)."""
    return {
        "failureKinds": [
            {"name": f.name, "title": f.title, "byErrorCode": f.by_error_code, "description": f.description}
            for f in spec.failure_kinds
        ],
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
        **_error_codes(spec),
        "clientTimings": [
            {"name": t.name, "title": t.title, "seconds": t.seconds, "rule": t.rule} for t in spec.client_timings
        ],
        "methods": [_row(m) for m in spec.methods],
    }


def _error_codes(spec: Spec) -> dict[str, Any]:
    """The decision per error code and class, for the failure kinds decided by code (none: an empty dict)."""
    if spec.other_error is None:
        return {}

    def rule(r: ErrorRule) -> dict[str, Any]:
        head = {} if r.code is None else {"code": r.code}
        return {**head, "title": r.title, "resendHelps": r.resend_helps, "why": r.why, "decisions": dict(r.decisions)}

    return {"errorCodes": {"codes": [rule(r) for r in spec.error_rules], "otherCodes": rule(spec.other_error)}}


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
        "page": method.page,
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
