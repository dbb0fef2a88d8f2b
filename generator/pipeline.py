"""Load, validate and model a spec directory: the front half of the pipeline, with all errors collected.

One loop serves every kind of spec file (generator/check/kinds.py): read the bytes once, parse them, check each file
against its kind's meta-schema, then run the kinds' meaning checks in order and the name check across them. Every
problem of every file joins one report; the model is built only from a spec with none.
"""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePath

from .check import identifiers, semantics
from .check.kinds import KINDS, META_DIR, SpecKind, by_name
from .check.structure import MetaSchema, check_structure, load_meta_schema
from .diagnostics import Diagnostic, Location, SpecError
from .model.spec import Spec
from .read.loader import Document, parse_document
from .read.parsecache import ParseCache
from .read.specfiles import Snapshot, take_snapshot


def spec_patterns() -> list[str]:
    """The globs of every file a generation reads: the meta-schemas and each kind's files."""
    return [f"{META_DIR}/{kind.meta}" for kind in KINDS] + [kind.pattern for kind in KINDS]


def read_spec(spec_dir: Path, root: Path) -> Snapshot:
    """Read every spec file once (see generator/read/specfiles.py)."""
    return take_snapshot(spec_dir, root, spec_patterns())


def load_spec(spec_dir: Path, root: Path, snapshot: Snapshot | None = None, parsed: ParseCache | None = None) -> Spec:
    """Check the spec under `spec_dir` (as read into `snapshot`). Raises SpecError with every diagnostic.

    With `parsed`, files whose bytes were parsed and structure-checked before are taken from that cache.
    """
    snapshot = snapshot or read_spec(spec_dir, root)
    diagnostics: list[Diagnostic] = list(snapshot.diagnostics)
    docs: dict[str, list[Document]] = {}
    unsound: dict[str, list[Document]] = {}
    for kind in KINDS:
        docs[kind.name] = _load_kind(kind, snapshot, diagnostics, parsed, unsound.setdefault(kind.name, []))
    if not docs["classes"]:
        raise SpecError(diagnostics)  # every meaning check reads the vocabulary
    # Meaning checks run even when some files failed their structure check, so that one run shows everything.
    checker = semantics.Checker(docs)
    checker.unsound = unsound
    checker.file_stems = {kind.name: {PurePath(rel).stem for rel in snapshot.matching(kind.pattern)} for kind in KINDS}
    checker.maybe_types = _names_in_broken_type_files(snapshot, docs["types"])
    checker.memo = parsed
    for kind in KINDS:
        kind.check(checker)
    identifiers.check(checker)
    diagnostics.extend(checker.diagnostics)
    if diagnostics:
        raise SpecError(diagnostics)
    return semantics.build(checker)


# A type's name in a types file: a key indented by two spaces (under `types:`), read from the text of a file that
# did not parse or failed its structure check.
_TYPE_KEY = re.compile(r"^  ([A-Za-z_][A-Za-z0-9_]*)\s*:", re.M)


def _names_in_broken_type_files(snapshot: Snapshot, sound: list[Document]) -> set[str]:
    """The type names that types files which are not sound may define: a name among them is not reported as
    unknown where it is used, since the broken file's own problem is the one to fix."""
    good = {doc.display for doc in sound}
    names: set[str] = set()
    for rel in snapshot.matching(by_name("types").pattern):
        if snapshot.display(rel) not in good:
            names.update(_TYPE_KEY.findall(snapshot.files[rel].decode("utf-8", "replace")))
    return names


def _load_kind(
    kind: SpecKind,
    snapshot: Snapshot,
    diagnostics: list[Diagnostic],
    parsed: ParseCache | None = None,
    unsound: list[Document] | None = None,
) -> list[Document]:
    """The structurally sound documents of one kind; every problem met goes to `diagnostics`.

    Documents that parsed but failed their structure check go to `unsound` (when given) for the partial meaning
    checks that cope with any shape."""
    rels = snapshot.matching(kind.pattern)
    if not rels:
        unread = any(d.location.file.startswith(snapshot.display(kind.folder)) for d in snapshot.diagnostics)
        if kind.missing and not unread:  # a file that could not be read is reported as such already
            code, message = kind.missing
            diagnostics.append(Diagnostic(Location(snapshot.display(kind.folder)), code, message))
        return []
    meta_bytes = snapshot.files.get(f"{META_DIR}/{kind.meta}", b"")
    loaded = False  # the meta-schema is loaded only for a file the cache does not hold
    meta: MetaSchema | None = None
    out = []
    for rel in rels:
        path, display, data = snapshot.spec_dir / rel, snapshot.display(rel), snapshot.files[rel]
        key = parsed.key(display, path, data, meta_bytes) if parsed else ""
        entry = parsed.get(key) if parsed else None
        if entry is None:
            if not loaded:
                meta, loaded = _meta(kind, snapshot, diagnostics), True
            found: list[Diagnostic] = []
            doc = parse_document(path, display, data, found)
            entry = (doc, found, check_structure(doc, meta) if doc is not None and meta is not None else [])
            if parsed and meta is not None:  # a result reached without the meta-schema is not the whole story
                parsed.put(key, entry)
            elif meta is None:
                diagnostics.extend(found)
                continue
        doc, found, problems = entry
        diagnostics.extend(found)
        diagnostics.extend(problems)
        if doc is not None and (not problems or not kind.sound_only):
            out.append(doc)
        elif doc is not None and unsound is not None:
            unsound.append(doc)
    return out


def load_documents(spec_dir: Path, root: Path, name: str) -> tuple[list[Document], list[Diagnostic]]:
    """The documents of one kind alone (read, parsed and structure-checked like the whole spec), and problems."""
    kind = by_name(name)
    snapshot = take_snapshot(spec_dir, root, [f"{META_DIR}/{kind.meta}", kind.pattern])
    diagnostics = list(snapshot.diagnostics)
    return _load_kind(kind, snapshot, diagnostics), diagnostics


def _meta(kind: SpecKind, snapshot: Snapshot, diagnostics: list[Diagnostic]) -> MetaSchema | None:
    rel = f"{META_DIR}/{kind.meta}"
    where = Location(snapshot.display(rel))
    if rel not in snapshot.files:
        if where.file not in {d.location.file for d in diagnostics}:
            message = f"the meta-schema of the {kind.name} files is missing"
            diagnostics.append(Diagnostic(where, "missing-file", message))
        return None
    try:
        return load_meta_schema(snapshot.files[rel])
    except (ValueError, json.JSONDecodeError) as exc:
        if where.file not in {d.location.file for d in diagnostics}:
            diagnostics.append(Diagnostic(where, "invalid-meta-schema", str(exc)))
        return None
