"""Turn a command-line argument into a Snapshot: a spec directory, a git revision, or a published schema file.

A git revision's spec/ is read with `git archive` into a temporary directory; the work tree is never touched.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..check.accepted import KIND as ACCEPTED_KIND
from ..check.accepted import Version, entries_of, parse_version
from ..check.class_baseline import KIND as BASELINE_KIND
from ..check.class_baseline import BaselineEntry
from ..check.class_baseline import entries_of as baseline_entries
from ..check.kinds import by_name
from ..diagnostics import Diagnostic, Location, SpecError, display_path
from ..pipeline import load_spec, read_spec
from ..read.jsonfile import read_json
from ..read.loader import DataPath
from ..read.parsecache import SharedParses
from .snapshot import SCHEMA, SPEC, Leaf, MethodView, Snapshot, Variant

CLASSES_FILE = "retry-classes.yaml"
STABLE_SIBLING = "schema.json"  # beside a published schema.unstable.json: the stable entries
RELEASE_TAGS = "v*"


class SourceError(Exception):
    """An argument that names nothing `diff` can read (not a spec error: a usage error)."""


@dataclass(frozen=True)
class Source:
    """What an argument named, before loading."""

    kind: str  # "dir", "rev" or "json"
    label: str
    path: Path  # spec directory (dir), the repository root (rev) or the JSON file (json)
    rev: str | None = None


def resolve(arg: str, root: Path, spec_dir: Path) -> Source:
    """Decide what `arg` is: an existing directory or file wins over a git revision of the same name."""
    path = Path(arg)
    if path.is_dir():
        if not (path / CLASSES_FILE).exists() and (path / "spec").is_dir():
            path = path / "spec"  # a project root: its spec/
        return Source("dir", display_path(path, root), path)
    if path.is_file():
        return Source("json", display_path(path, root), path)
    if _git(root, "rev-parse", "--verify", "--quiet", f"{arg}^{{commit}}") is not None:
        return Source("rev", arg, root, rev=arg)
    raise SourceError(f"{arg!r} is not a spec directory, a schema file or a git revision of this repository")


def load(source: Source, root: Path, spec_dir: Path, scratch: Path, parses: SharedParses | None = None) -> Snapshot:
    """Load a source. Raises SpecError (with positions) when it is not a valid spec or schema.

    With `parses`, a spec file that an earlier load of the same run held byte for byte is not parsed again.
    """
    if source.kind == "json":
        return load_schema(source.path, root)
    if source.kind == "dir":
        return load_spec_dir(source.path, root, label=source.label, parses=parses)
    assert source.rev is not None
    tree = scratch / f"rev-{len(list(scratch.iterdir()))}"
    inner = _relative_spec_dir(spec_dir, root)
    _extract(root, source.rev, inner, tree)
    snapshot = load_spec_dir(tree / inner, tree, label=source.rev, prefix=f"{source.rev}:", parses=parses)
    snapshot.version = release_of(root, source.rev)
    return snapshot


# -- spec directories -------------------------------------------------------------------------------------------
def load_spec_dir(
    spec_dir: Path, root: Path, *, label: str, prefix: str = "", parses: SharedParses | None = None
) -> Snapshot:
    """A spec directory, validated by the usual loader (so a bad spec gets the usual diagnostics)."""
    read = read_spec(spec_dir, root)
    parses = parses if parses is not None else SharedParses()
    try:
        spec = load_spec(spec_dir, root, read, parses)
    except SpecError as exc:
        raise SpecError([_prefixed(d, prefix) for d in exc.diagnostics]) from None
    files = {}
    for p in spec_dir.rglob("*.yaml"):
        rel = p.relative_to(spec_dir).as_posix()
        files[read.display(rel) if rel in read.files else display_path(p, root)] = p
    methods = {}
    for m in spec.methods:
        methods[(m.name, m.kind)] = MethodView(
            name=m.name,
            kind=m.kind,
            direction=m.direction,
            stability=m.stability,
            params=m.params,
            result=m.result,
            file=m.source,
            retry_class=m.retry_class,
            key_param=m.key_param,
            success_errors=tuple(e.code for e in m.success_errors),
            variants=tuple(Variant(v.name, v.retry_class, v.stability, i) for i, v in enumerate(m.variants)),
            texts=(
                ("summary", m.summary, ("summary",)),
                ("description", m.description, ("description",)),
                ("retry.repeat", m.repeat, ("retry", "repeat")),
                *(
                    (f"variants[{v.name}].summary", v.summary, ("variants", i, "summary"))
                    for i, v in enumerate(m.variants)
                ),
                *(
                    (f"variants[{v.name}].repeat", v.repeat, ("variants", i, "repeat"))
                    for i, v in enumerate(m.variants)
                ),
            ),
        )
    types = {t.name: t.schema for t in spec.types}
    origins = {t.name: (t.source, ("types", t.name)) for t in spec.types}
    classes_file = read.display(CLASSES_FILE)
    classes_doc = parses.document(classes_file)  # load_spec parsed it: the spec would have no classes otherwise
    decision_names = tuple(d.name for d in spec.decisions)
    table = (
        {
            label: Leaf(value, classes_file, path)
            for label, value, path in decision_leaves(classes_doc.data, set(decision_names))
        }
        if classes_doc is not None
        else {}
    )
    # The accepted breaks as load_spec parsed them (and found sound, or it would have raised)
    accepted = entries_of(
        [
            doc
            for doc in (parses.document(read.display(rel)) for rel in read.matching(by_name(ACCEPTED_KIND).pattern))
            if doc is not None
        ]
    )
    return Snapshot(
        label=label,
        kind=SPEC,
        methods=methods,
        types=types,
        origins=origins,
        unstable=frozenset(
            {t.name for t in spec.types if t.stability == "unstable"}
            | {f"{t.name}.{p}" for t in spec.types for p in t.unstable_properties}
        ),
        files=files,
        prefix=prefix,
        classes=tuple(c.name for c in spec.classes),
        class_paths={c.name: (classes_file, ("classes", i, "name")) for i, c in enumerate(spec.classes)},
        decisions=decision_names,
        decision_table=table,
        prose={
            label: Leaf(text, classes_file, path)
            for label, text, path in prose_leaves(classes_doc.data if classes_doc else {})
        },
        accepted=[a for a in accepted],
        class_baseline=_class_baseline(read, parses),
    )


def _class_baseline(read, parses: SharedParses) -> tuple[str, dict[tuple[str, str], BaselineEntry]]:
    """The class baseline file (as displayed) and its entries by (method, kind); ("", {}) when the spec has none."""
    for rel in read.matching(by_name(BASELINE_KIND).pattern):
        shown = read.display(rel)
        doc = parses.document(shown)  # load_spec parsed it and found it sound, or it would have raised
        if doc is not None:
            return shown, {(e.method, e.kind): e for e in baseline_entries(doc)}
    return "", {}


def decision_leaves(
    data: Any, names: set[str], path: DataPath = (), label: tuple[str, ...] = ()
) -> list[tuple[str, str, DataPath]]:
    """Every value of the retry-class file that is a decision name, labelled by the names on its way.

    The walk does not know the file's layout: a list item is named by its `name` or `code` field and a mapping
    entry by its key (section names such as `classes` and `decisions` aside), so a table of decisions per error
    code compares like the table per failure kind: `keyed/no-response`, `-32603/safe`.
    The top-level `decisions` section (where decisions are defined, not used) is skipped.
    """
    out: list[tuple[str, str, DataPath]] = []
    if isinstance(data, dict):
        for key, value in data.items():
            if not path and key == "decisions":
                continue
            named = label if key in _SECTIONS or not path else (*label, str(key))
            out += decision_leaves(value, names, (*path, key), named)
    elif isinstance(data, list):
        for i, item in enumerate(data):
            ident = item.get("name", item.get("code", i)) if isinstance(item, dict) else i
            out += decision_leaves(item, names, (*path, i), (*label, str(ident)))
    elif isinstance(data, str) and data in names and path:
        out.append(("/".join(label) or "?", data, path))
    return out


_SECTIONS = frozenset({"classes", "decisions"})
_PROSE = frozenset({"title", "summary", "meaning", "description"})


def prose_leaves(data: Any, path: DataPath = (), label: tuple[str, ...] = ()) -> list[tuple[str, str, DataPath]]:
    """Every text of the retry-class file (titles, summaries, meanings, descriptions), labelled like decisions:
    `classes/keyed/meaning`, `failureKinds/no-response/description`."""
    out: list[tuple[str, str, DataPath]] = []
    if isinstance(data, dict):
        for key, value in data.items():
            if key in _PROSE and isinstance(value, str):
                out.append(("/".join((*label, key)), value, (*path, key)))
            else:
                out += prose_leaves(value, (*path, key), (*label, str(key)))
    elif isinstance(data, list):
        for i, item in enumerate(data):
            ident = item.get("name", item.get("code", i)) if isinstance(item, dict) else i
            out += prose_leaves(item, (*path, i), (*label, str(ident)))
    return out


# -- published schemas ----------------------------------------------------------------------------------------
def load_schema(path: Path, root: Path) -> Snapshot:
    """A published ACP JSON Schema: types from `$defs`, methods from their `x-method` and `x-side` marks."""
    display = display_path(path, root)
    data = _read_json(path, display)
    defs = data.get("$defs") if isinstance(data, dict) else None
    if not isinstance(defs, dict):
        raise SpecError([Diagnostic(Location(display), "not-a-schema", "the file has no $defs: not an ACP schema")])
    stable: set[tuple[str, str]] | None = None
    unstable: set[str] = set()
    sibling = path.parent / STABLE_SIBLING
    if sibling.is_file() and sibling.resolve() != path.resolve():
        stable_defs = _read_json(sibling, display_path(sibling, root)).get("$defs", {})
        stable = set(_entries(stable_defs))
        unstable = _unstable_items(defs, stable_defs)
    methods = {}
    for key, (params, result, side) in sorted(_entries(defs).items()):
        stability = "stable" if stable is None or key in stable else "unstable"
        methods[key] = MethodView(key[0], key[1], side, stability, params, result, display)
    origins = {name: (display, ("$defs", name)) for name in defs}
    return Snapshot(display, SCHEMA, methods, dict(defs), origins, {display: path}, unstable=frozenset(unstable))


def _unstable_items(every: dict[str, Any], stable: Any) -> set[str]:
    """The defs, and the properties (`Def.prop`) of stable defs, that a published stable file leaves out."""
    stable = stable if isinstance(stable, dict) else {}
    found = {name for name in every if name not in stable}
    for name, schema in every.items():
        kept = stable.get(name)
        props = schema.get("properties") if isinstance(schema, dict) else None
        if isinstance(kept, dict) and isinstance(props, dict):
            found |= {f"{name}.{p}" for p in props if p not in (kept.get("properties") or {})}
    return found


def _entries(defs: dict[str, Any]) -> dict[tuple[str, str], tuple[str | None, str | None, str]]:
    """(method, kind) -> (params type, result type, handling side) from a schema's `x-method` marks."""
    found: dict[tuple[str, str], dict[str, str]] = {}
    for name, schema in defs.items():
        method = schema.get("x-method") if isinstance(schema, dict) else None
        if not isinstance(method, str):
            continue
        kind = "notification" if name.endswith("Notification") else "request"
        role = "result" if name.endswith("Response") else "params"
        entry = found.setdefault((method, kind), {})
        entry[role] = name
        if role == "params" or "side" not in entry:
            side = str(schema.get("x-side", "either"))
            # The handler of a response is the side that answered, which is the side of the request.
            entry["side"] = "either" if side == "protocol" else side
    return {key: (e.get("params"), e.get("result"), e["side"]) for key, e in found.items()}


def _read_json(path: Path, display: str) -> Any:
    return read_json(path.read_bytes(), display)


# -- git ------------------------------------------------------------------------------------------------------
def _git(root: Path, *args: str) -> str | None:
    import subprocess  # here, not at the top: a diff of two directories never runs git

    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.decode("utf-8", "replace").strip() if done.returncode == 0 else None


def _relative_spec_dir(spec_dir: Path, root: Path) -> Path:
    try:
        return spec_dir.resolve().relative_to(root.resolve())
    except ValueError:
        raise SourceError(f"the spec directory {spec_dir} is not inside the repository {root}") from None


def _extract(root: Path, rev: str, inner: Path, dest: Path) -> None:
    """Write `rev`'s copy of the spec directory under `dest`, from git's object store."""
    import subprocess
    import tarfile

    try:
        done = subprocess.run(
            ["git", "-C", str(root), "archive", "--format=tar", rev, "--", inner.as_posix()],
            capture_output=True,
            check=False,
            timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SourceError(f"cannot read {inner}/ at {rev} with git: {exc}") from None
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise SourceError(f"{rev} has no {inner}/ ({detail[-1] if detail else 'git archive failed'})")
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
        archive.extractall(dest, filter="data")


def release_tags(root: Path, rev: str = "HEAD") -> list[tuple[Version, str]]:
    """The `v*` tags that are releases (vX.Y.Z) and part of `rev`'s history, oldest first."""
    listed = _git(root, "tag", "--list", RELEASE_TAGS, "--merged", rev)
    found = [(parse_version(tag), tag) for tag in (listed or "").split()]
    return sorted((v, tag) for v, tag in found if v is not None)


def release_of(root: Path, rev: str) -> Version | None:
    """The release a revision is, or the newest release in its history (None before the first)."""
    version = parse_version(rev)
    if version is not None:
        return version
    tags = release_tags(root, rev)
    return tags[-1][0] if tags else None


def _prefixed(diagnostic: Diagnostic, prefix: str) -> Diagnostic:
    if not prefix:
        return diagnostic
    loc = diagnostic.location
    return Diagnostic(Location(prefix + loc.file, loc.line, loc.column, loc.path), diagnostic.code, diagnostic.message)
