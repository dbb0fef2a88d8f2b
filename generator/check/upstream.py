"""The meaning check of spec/upstream-differences.yaml: the deliberate differences the audit accepts.

The meta-schema checks the shape; here each listed line must appear once, and the list reaches the model
(`Spec.upstream_differences`), where `python -m generator audit` reads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model.spec import UpstreamBehaviour, UpstreamDifference

if TYPE_CHECKING:
    from .context import CheckState


def check(checker: CheckState) -> None:
    """Report a difference (or a behaviour's subject) listed twice; hand both lists to the model."""
    found: list[UpstreamDifference] = []
    behaviours: list[UpstreamBehaviour] = []
    for doc in checker.docs.get("upstream-differences", []):
        first: dict[str, int] = {}
        for i, item in enumerate(doc.data["differences"]):
            line = item["difference"].strip()
            if line in first:
                checker.error(
                    doc,
                    ("differences", i, "difference"),
                    "duplicate-difference",
                    f"this difference is already listed at index {first[line]}",
                )
                continue
            first[line] = i
            found.append(UpstreamDifference(line, " ".join(item["reason"].split())))
        subjects: dict[str, int] = {}
        for i, item in enumerate(doc.data.get("behaviours") or ()):
            if item["subject"] in subjects:
                message = f"this subject is already listed at index {subjects[item['subject']]}"
                checker.error(doc, ("behaviours", i, "subject"), "duplicate-difference", message)
                continue
            subjects[item["subject"]] = i
            texts = (" ".join(item[field].split()) for field in ("acp", "sdk", "ours", "reason"))
            behaviours.append(UpstreamBehaviour(item["subject"], *texts))
    checker.differences = tuple(found)
    checker.behaviours = tuple(behaviours)
