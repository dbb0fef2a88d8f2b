"""spec/accepted-breaks.yaml: breaking changes made on purpose, each with its rule, subject, version and reason.

The file is a spec file kind like the others (generator/check/kinds.py): the loader checks it against its
meta-schema and then its meaning (known rule ids that can break, no entry twice) in the one report; `diff` then
lets a listed break pass and fails on a listed one that no longer occurs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..compat_rules import BY_ID
from ..diagnostics import Diagnostic, Location
from ..read.loader import Document

if TYPE_CHECKING:
    from .context import CheckState

KIND = "accepted-breaks"  # its entry in generator/check/kinds.py
_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)$")

Version = tuple[int, int, int]


def parse_version(text: str) -> Version | None:
    """`1.2.3` or `v1.2.3` as a comparable tuple; None for anything else."""
    match = _VERSION.match(text.strip())
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


@dataclass(frozen=True)
class Acceptance:
    """One listed break: the release that ships it, and where the entry is written."""

    rule: str
    subject: str
    version: Version
    version_text: str
    reason: str
    location: Location

    def in_scope(self, old: Version | None, new: Version | None) -> bool:
        """Whether the break belongs between these two releases (an unknown version bounds nothing)."""
        return (old is None or self.version > old) and (new is None or self.version <= new)


def entries_of(docs: list[Document]) -> list[Acceptance]:
    """The entries of the files that the spec's load found sound."""
    return [entry for doc in docs for entry in _entries(doc)[0]]


def check(checker: CheckState) -> None:
    """The meaning check of the accepted-breaks kind (generator/check/kinds.py): every problem joins the one report."""
    for doc in checker.docs.get(KIND, []):
        checker.diagnostics.extend(_entries(doc)[1])


def _entries(doc: Document) -> tuple[list[Acceptance], list[Diagnostic]]:
    """The well-formed entries of one file and the meaning problems of all of them.

    It runs on files whose structure check failed as well (the kind says so), so that one run shows every problem.
    """
    diagnostics: list[Diagnostic] = []
    entries: list[Acceptance] = []
    seen: dict[tuple[str, str, str], int] = {}
    items = doc.data.get("accepted", []) if isinstance(doc.data, dict) else []
    for i, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in ("rule", "subject")):
            continue
        rule = BY_ID.get(item["rule"])
        if rule is None:
            diagnostics.append(
                Diagnostic(doc.locate(("accepted", i, "rule")), "unknown-rule", f"{item['rule']!r} is not a rule id")
            )
            continue
        if not rule.can_break:
            message = f"rule {rule.id!r} is never breaking, so there is nothing to accept"
            diagnostics.append(Diagnostic(doc.locate(("accepted", i, "rule")), "not-a-breaking-rule", message))
            continue
        key = (item["rule"], item["subject"], str(item.get("version")))
        if key in seen:
            message = f"this break is already accepted by entry {seen[key]}"
            diagnostics.append(Diagnostic(doc.locate(("accepted", i)), "duplicate-acceptance", message))
            continue
        seen[key] = i
        version = parse_version(str(item.get("version", "")))
        if version is None or not isinstance(item.get("reason"), str):
            continue  # reported by the meta-schema check
        entries.append(
            Acceptance(
                item["rule"],
                item["subject"],
                version,
                str(item["version"]),
                " ".join(item["reason"].split()),
                doc.locate(("accepted", i)),
            )
        )
    return entries, diagnostics
