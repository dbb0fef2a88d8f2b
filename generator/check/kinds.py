"""The spec file kinds: one table entry each, read by one loader (generator/pipeline.py).

Every kind names where its files are (a glob under spec/), the meta-schema in spec/meta/ that checks each file's
structure, whether the spec needs at least one, and the check of what the files mean. Meaning checks run in table
order (later kinds may rely on what earlier ones learned: examples read the types, traces read the methods) and
only see files whose structure is sound. To add a kind, add its meta-schema and one entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import accepted, class_baseline, conformance, semantics, upstream

MeaningCheck = Callable[[semantics.Checker], None]


@dataclass(frozen=True)
class SpecKind:
    """One kind of spec file."""

    name: str
    pattern: str  # glob relative to spec/; only `*` in the last part
    meta: str  # file name in spec/meta/
    check: MeaningCheck
    missing: tuple[str, str] | None = None  # (code, message) when no file matches; None when the kind is optional
    # Whether the meaning check sees only files that passed the structure check. A check written to cope with
    # any shape may see every parsed file, so that one run reports meaning problems beside structure problems.
    sound_only: bool = True

    @property
    def folder(self) -> str:
        """Where the files of this kind live, relative to spec/ (the file itself for a single-file kind)."""
        return self.pattern.rsplit("/", 1)[0] if "*" in self.pattern else self.pattern


KINDS: tuple[SpecKind, ...] = (
    SpecKind(
        "classes",
        "retry-classes.yaml",
        "retry-classes.schema.json",
        semantics.Checker.check_classes,
        missing=("missing-file", "the retry-class vocabulary is missing"),
    ),
    SpecKind("types", "types/*.yaml", "types.schema.json", semantics.Checker.check_types),
    SpecKind(
        "methods",
        "methods/*.yaml",
        "method.schema.json",
        semantics.Checker.check_methods,
        missing=("no-methods", "the spec defines no methods"),
    ),
    # Worked examples are optional: a spec without spec/examples/ simply has pages without one.
    SpecKind("examples", "examples/*.yaml", "example.schema.json", semantics.Checker.check_examples),
    SpecKind("conformance", "conformance/*.yaml", "conformance.schema.json", conformance.check),
    SpecKind("upstream-differences", "upstream-differences.yaml", "upstream-differences.schema.json", upstream.check),
    # Read by `python -m generator diff` (generator/check/accepted.py); checked whenever the spec is.
    SpecKind(accepted.KIND, "accepted-breaks.yaml", "accepted-breaks.schema.json", accepted.check, sound_only=False),
    # Read by `diff` when the other side has no retry classes (generator/check/class_baseline.py).
    SpecKind(class_baseline.KIND, "retry-class-baseline.yaml", "class-baseline.schema.json", class_baseline.check),
)
META_DIR = "meta"


def by_name(name: str) -> SpecKind:
    """The kind called `name`."""
    return next(kind for kind in KINDS if kind.name == name)
