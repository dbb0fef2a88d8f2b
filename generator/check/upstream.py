"""The meaning check of spec/upstream-differences.yaml: the deliberate differences the audit accepts.

The meta-schema checks the shape; here each listed line must appear once, and the list reaches the model
(`Spec.upstream_differences`), where `python -m generator audit` reads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model.spec import UpstreamDifference

if TYPE_CHECKING:
    from .context import CheckState


def check(checker: CheckState) -> None:
    """Report a difference listed twice; hand the list to the model."""
    found: list[UpstreamDifference] = []
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
    checker.differences = tuple(found)
