"""Print findings: one line each (`path:line:col: severity[rule]: message`) or a JSON array; and a summary."""

from __future__ import annotations

import json
from collections import Counter

from ..compat_rules import ACCEPTED, BREAKING, COMPATIBLE, UNSTABLE
from .compare import Finding

JSON_KEYS = ("rule", "severity", "path", "line", "column", "message", "subject")


def text(findings: list[Finding]) -> str:
    """One line per finding, in the given (sorted) order."""
    return "".join(f"{f.path}:{f.line}:{f.column}: {f.severity}[{f.rule}]: {f.message}\n" for f in findings)


def as_json(findings: list[Finding]) -> str:
    """A JSON array of objects with exactly the keys of JSON_KEYS."""
    rows = [{key: getattr(f, key) for key in JSON_KEYS} for f in findings]
    return json.dumps(rows, indent=2, ensure_ascii=False) + "\n"


def failing(findings: list[Finding]) -> bool:
    """Whether a breaking change is neither accepted nor unstable."""
    return any(f.severity == BREAKING for f in findings)


def accept_hint(findings: list[Finding], accepted_file: str) -> str:
    """What to do about the unaccepted breaks: undo them, or list each one, with a reason, in `accepted_file`."""
    breaks = sorted((f.rule, f.subject) for f in findings if f.severity == BREAKING)
    first_rule, first_subject = breaks[0]
    return (
        f"{len(breaks)} breaking change(s) not accepted. Undo them, or, if a break is meant, list it in "
        f"{accepted_file} under `accepted:` with its rule, subject, the release that ships it and a reason, e.g. "
        f"- {{rule: {first_rule}, subject: {json.dumps(first_subject)}, version: X.Y.Z, reason: ...}}"
    )


def summary(findings: list[Finding], old: str, new: str) -> str:
    """One line: how many changes of each severity, between which versions."""
    counts = Counter(f.severity for f in findings)
    parts = [f"{counts[s]} {s}" for s in (BREAKING, ACCEPTED, COMPATIBLE, UNSTABLE) if counts[s]]
    return f"diff {old} -> {new}: " + (", ".join(parts) if parts else "no changes")
