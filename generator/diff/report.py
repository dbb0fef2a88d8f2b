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


def identity(finding: Finding) -> tuple[str, str, str, str]:
    """What makes two findings of two comparisons the same change, wherever its line moved."""
    return (finding.rule, finding.severity, finding.subject, finding.message)


def split_known(findings: list[Finding], known: set[tuple[str, str, str, str]] | None) -> tuple[list, list]:
    """(shown, hidden): breaks and accepted breaks are always shown, and so is every finding not in `known` (the
    differences the last commit already had); with no `known` at all, only the breaks are shown."""
    shown, hidden = [], []
    for f in findings:
        lead = f.severity in (BREAKING, ACCEPTED) or (known is not None and identity(f) not in known)
        (shown if lead else hidden).append(f)
    return shown, hidden


def hidden_line(hidden: list[Finding], against_head: bool) -> str:
    """The one line that stands for the findings not shown."""
    counts = Counter(f.severity for f in hidden)
    parts = ", ".join(f"{counts[s]} {s}" for s in (COMPATIBLE, UNSTABLE) if counts[s])
    why = "the last commit had them already" if against_head else "no last commit whose spec could be read"
    return f"not shown: {len(hidden)} known differences from the published schema ({parts}; {why}); --full lists them"


def summary(findings: list[Finding], old: str, new: str) -> str:
    """One line: how many changes of each severity, between which versions."""
    counts = Counter(f.severity for f in findings)
    parts = [f"{counts[s]} {s}" for s in (BREAKING, ACCEPTED, COMPATIBLE, UNSTABLE) if counts[s]]
    return f"diff {old} -> {new}: " + (", ".join(parts) if parts else "no changes")
