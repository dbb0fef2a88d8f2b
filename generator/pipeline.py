"""Load, validate and model a spec directory: the front half of the pipeline, with all errors collected."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from .conformance import load_traces
from .diagnostics import Diagnostic, Location, SpecError, display_path
from .diff.accepted import check_accepted
from .loader import Document, load_document
from .model import Spec, UpstreamDifference
from .semantics import check_and_build
from .structure import check_structure

CLASSES_FILE = "retry-classes.yaml"
DIFFERENCES_FILE = "upstream-differences.yaml"
META_DIR = "meta"


def spec_files(spec_dir: Path) -> list[Path]:
    """Every file under the spec directory, in a fixed order (the inputs of a generation)."""
    return sorted(p for p in spec_dir.rglob("*") if p.is_file())


def load_spec(spec_dir: Path, root: Path) -> Spec:
    """Read and check the spec under `spec_dir`. Raises SpecError with every diagnostic when it is not valid."""
    diagnostics: list[Diagnostic] = []
    meta = spec_dir / META_DIR

    def load_all(paths: list[Path], meta_name: str) -> list[Document]:
        docs = []
        for path in paths:
            doc = load_document(path, root, diagnostics)
            if doc is None:
                continue
            problems = check_structure(doc, meta / meta_name)
            diagnostics.extend(problems)
            if not problems:
                docs.append(doc)
        return docs

    for name in ("method.schema.json", "retry-classes.schema.json", "types.schema.json"):
        if not (meta / name).is_file():
            diagnostics.append(
                Diagnostic(Location(display_path(meta / name, root)), "missing-file", "the meta-schema is missing")
            )
    classes_path = spec_dir / CLASSES_FILE
    if not classes_path.is_file():
        diagnostics.append(
            Diagnostic(
                Location(display_path(classes_path, root)), "missing-file", "the retry-class vocabulary is missing"
            )
        )
    if diagnostics:
        raise SpecError(diagnostics)

    classes = load_all([classes_path], "retry-classes.schema.json")
    methods = load_all(sorted((spec_dir / "methods").glob("*.yaml")), "method.schema.json")
    types = load_all(sorted((spec_dir / "types").glob("*.yaml")), "types.schema.json")
    # Worked examples are optional: a spec without spec/examples/ simply has pages without one.
    examples = load_all(sorted((spec_dir / "examples").glob("*.yaml")), "example.schema.json")
    if not methods and not diagnostics:
        diagnostics.append(
            Diagnostic(Location(display_path(spec_dir / "methods", root)), "no-methods", "the spec defines no methods")
        )
    # Optional: breaking changes made on purpose, read by `python -m generator diff` (generator/diff/accepted.py).
    diagnostics.extend(check_accepted(spec_dir, root))
    if not classes:
        raise SpecError(diagnostics)
    # Meaning checks run even when some files failed their structure check, so that one run shows
    # everything; the model is only built from a spec with no diagnostics at all.
    found, spec = check_and_build(classes[0], methods, types, examples)
    diagnostics.extend(found)
    if diagnostics or spec is None:
        raise SpecError(diagnostics)
    # Traces are checked against the finished model (every method they send must exist).
    spec = dataclasses.replace(spec, traces_json=load_traces(spec_dir, root, spec))
    return dataclasses.replace(spec, upstream_differences=_upstream_differences(spec_dir / DIFFERENCES_FILE, root))


def _upstream_differences(path: Path, root: Path) -> tuple[UpstreamDifference, ...]:
    """The listed differences from the published ACP schema, for the docs page (the audit checks the list)."""
    if not path.is_file():
        return ()
    diagnostics: list[Diagnostic] = []
    doc = load_document(path, root, diagnostics)
    items = doc.data.get("differences") if doc is not None and isinstance(doc.data, dict) else None
    ok = isinstance(items, list) and all(
        isinstance(i, dict) and isinstance(i.get("difference"), str) and isinstance(i.get("reason"), str) for i in items
    )
    if diagnostics or not ok:
        where = Location(display_path(path, root))
        message = "must hold `differences`: a list of {difference, reason} strings"
        raise SpecError([*diagnostics, Diagnostic(where, "bad-upstream-differences", message)])
    return tuple(UpstreamDifference(i["difference"], " ".join(i["reason"].split())) for i in items)
