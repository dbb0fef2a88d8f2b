"""spec/retry-class-baseline.yaml: the retry classes as the idempotency-keys proposal states them, with sources.

`python -m generator diff` compares the spec's classes with this record whenever the other side has none: before the
first `v*` release tag `make compat` compares with ACP's published schema, which knows no retry classes, and without
this record a class change would pass every gate. The file is a spec file kind (generator/check/kinds.py): its shape
is checked against its meta-schema, and here its meaning (known classes and sources, no entry twice).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..read.loader import Document

if TYPE_CHECKING:
    from .context import CheckState

KIND = "class-baseline"  # its entry in generator/check/kinds.py


@dataclass(frozen=True)
class BaselineEntry:
    """The class one (method, kind) entry had when the proposal stated it, and its variants' classes."""

    method: str
    kind: str
    retry_class: str
    key_param: str | None
    variants: tuple[tuple[str, str], ...]  # (variant name, class), in file order
    index: int  # position under `methods`, for locating the entry


def entries_of(doc: Document) -> list[BaselineEntry]:
    """The entries of a baseline file that the spec's load found sound."""
    out = []
    for i, item in enumerate(doc.data.get("methods") or []):
        variants = tuple((v["name"], v["class"]) for v in item.get("variants") or ())
        out.append(BaselineEntry(item["method"], item["kind"], item["class"], item.get("keyParam"), variants, i))
    return out


def check(checker: CheckState) -> None:
    """Every class is one of the vocabulary's, every source is defined, and no entry or variant is listed twice."""
    classes = [c.get("name") for c in checker.classes_doc.data.get("classes", []) if isinstance(c, dict)]
    for doc in checker.docs.get(KIND, []):
        sources = set(doc.data["sources"])
        seen: dict[tuple[str, str], int] = {}
        for i, item in enumerate(doc.data["methods"]):
            key = (item["method"], item["kind"])
            if key in seen:
                message = f"{item['method']} ({item['kind']}) is already listed at index {seen[key]}"
                checker.error(doc, ("methods", i), "duplicate-baseline-entry", message)
                continue
            seen[key] = i
            _known(checker, doc, ("methods", i, "class"), item["class"], classes)
            if item["source"] not in sources:
                message = f"{item['source']!r} is not a source of this file; defined: {', '.join(sorted(sources))}"
                checker.error(doc, ("methods", i, "source"), "unknown-baseline-source", message)
            names: set[str] = set()
            for j, variant in enumerate(item.get("variants") or ()):
                if variant["name"] in names:
                    message = f"variant {variant['name']!r} is already listed for {item['method']}"
                    checker.error(doc, ("methods", i, "variants", j, "name"), "duplicate-baseline-entry", message)
                names.add(variant["name"])
                _known(checker, doc, ("methods", i, "variants", j, "class"), variant["class"], classes)


def _known(checker: CheckState, doc: Document, path: tuple[Any, ...], name: str, classes: list[str]) -> None:
    if name not in classes:
        checker.error(doc, path, "unknown-class", f"{name!r} is not a retry class; known: {', '.join(classes)}")
