"""spec/accepted-breaks.yaml: breaking changes made on purpose, each with its rule, subject, version and reason.

The loader checks the file like every other spec file (meta-schema first, then meaning: known rule ids that can
break, no entry twice); `diff` then lets a listed break pass and fails on a listed one that no longer occurs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..diagnostics import Diagnostic, Location, display_path
from ..loader import load_document
from ..structure import check_structure
from .rules import BY_ID

ACCEPTED_FILE = "accepted-breaks.yaml"
META_FILE = "meta/accepted-breaks.schema.json"
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


def load_accepted(spec_dir: Path, root: Path) -> tuple[list[Acceptance], list[Diagnostic]]:
    """The entries of the file (none when it does not exist) and every problem found in it."""
    path = spec_dir / ACCEPTED_FILE
    if not path.is_file():
        return [], []
    diagnostics: list[Diagnostic] = []
    meta = spec_dir / META_FILE
    if not meta.is_file():
        where = Location(display_path(meta, root))
        return [], [Diagnostic(where, "missing-file", "the meta-schema of accepted-breaks.yaml is missing")]
    doc = load_document(path, root, diagnostics)
    if doc is None:
        return [], diagnostics
    problems = check_structure(doc, meta)
    diagnostics.extend(problems)
    entries: list[Acceptance] = []
    seen: dict[tuple[str, str, str], int] = {}
    items = doc.data.get("accepted", []) if isinstance(doc.data, dict) else []
    for i, item in enumerate(items if isinstance(items, list) else []):
        # meaning checks run on every well-formed entry, so that one run shows every problem
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
        key = (item["rule"], item["subject"], str(item["version"]))
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
    return (entries if not diagnostics else []), diagnostics


def check_accepted(spec_dir: Path, root: Path) -> list[Diagnostic]:
    """Every problem in spec/accepted-breaks.yaml (for the loader: the file is checked whenever the spec is)."""
    return load_accepted(spec_dir, root)[1]
