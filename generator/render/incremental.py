"""Incremental rendering: re-render an artifact only when the spec data its renderer reads has changed.

Each renderer declares, in generator/render/__init__.py, the model fields it never reads. Its input key is a hash
of the model with those fields left out (its *projection*, as canonical JSON text), of the generator's environment
(sources, templates, library versions: see generator/write/cache.py) and, for a page renderer, of the phase-1 files it
quotes. The cache keeps, per renderer, the key of its last run and the hashes of the files it produced. A renderer
whose key matches, and whose files are all still on disk with exactly those bytes, is not run: its files are read
back.

The model is built from the bytes this run read (generator/read/specfiles.py), so a key never describes a file as it
was after rendering, and the outputs are checked byte for byte before they are reused: nothing stale is served.

A renderer that does run can still skip a costly step whose own input did not change: `memoized` keeps the last
result of such a step (the code generator's models for one shape of the schema) under a hash of everything the
step reads, in `.cache/memo/`, for the run that renders with a cache.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Any

Record = dict[str, Any]  # one renderer's entry in the cache: {"input": key, "outputs": {path: digest}}
MEMO_DIR = Path(".cache/memo")
_ACTIVE: ContextVar[RenderCache | None] = ContextVar("active_render_cache", default=None)


def canonical(value: Any, drop: frozenset[str]) -> str:
    """`value` (the model or a part of it) as JSON text, without the fields named in `drop` (`Class.field`).

    A model object becomes the object of its fields, in declaration order; everything else must be JSON data
    (tuples as arrays). ASCII escapes keep the text encodable whatever the strings hold; sorted keys are not
    needed (and not wanted: authored key order is part of the model).
    """
    kept: dict[type, tuple[str, ...]] = {}

    def fields(item: Any) -> dict[str, Any]:
        kind = type(item)
        if not dataclasses.is_dataclass(item) or isinstance(item, type):
            raise TypeError(f"the model holds a {kind.__name__}, which has no canonical projection")
        names = kept.get(kind)
        if names is None:
            names = kept[kind] = tuple(
                f.name for f in dataclasses.fields(item) if f"{kind.__name__}.{f.name}" not in drop
            )
        return {name: getattr(item, name) for name in names}

    return json.dumps(value, default=fields, ensure_ascii=True, separators=(",", ":"), check_circular=False)


def input_key(environment: str, name: str, text: str, quoted: Mapping[str, str] | None = None) -> str:
    """The hash of everything renderer `name` reads: the environment, its model text (`canonical`), the files it
    quotes."""
    h = hashlib.sha256()
    h.update(f"{environment}\0{name}\0".encode())
    h.update(text.encode("ascii"))
    for path, digest in sorted((quoted or {}).items()):
        h.update(f"\0{path}\0{digest}".encode())
    return h.hexdigest()


def digest(text: str) -> str:
    """The content hash of one output file (the same as the writer's and the no-op cache's)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class RenderCache:
    """The per-renderer records of the last run, consulted by `render_all`, and the records of this run."""

    def __init__(
        self, root: Path, environment: str, previous: Mapping[str, Record] | None = None, *, recall: bool = True
    ) -> None:
        self.root = root
        self.environment = environment
        self.previous = dict(previous or {})
        self.recall = recall  # False (generate --force): `memoized` steps compute afresh, and are remembered
        self.records: dict[str, Record] = {}
        self.reused: list[str] = []
        self.rendered: list[str] = []

    def reuse(self, name: str, key: str) -> dict[str, str] | None:
        """The files renderer `name` produced last time, when its key is `key` again and they are intact."""
        record = self.previous.get(name)
        if not record or record.get("input") != key:
            return None
        outputs = record.get("outputs")
        if not isinstance(outputs, dict):
            return None
        files = _read_back(self.root, outputs)
        if files is not None:
            self.records[name] = record
            self.reused.append(name)
        return files

    def remember(self, name: str, key: str, files: Mapping[str, str]) -> None:
        """Record what renderer `name` produced from input `key`."""
        self.records[name] = {"input": key, "outputs": {path: digest(text) for path, text in sorted(files.items())}}
        self.rendered.append(name)

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Let `memoized` steps of the renderers run in this block keep their results in this cache's project."""
        token = _ACTIVE.set(self)
        try:
            yield
        finally:
            _ACTIVE.reset(token)

    def digests(self, paths: Iterable[str]) -> dict[str, str]:
        """The hashes of files this run produced (from the records, so nothing is hashed twice)."""
        wanted = set(paths)
        return {
            path: value
            for record in self.records.values()
            for path, value in record["outputs"].items()
            if path in wanted
        }


def _read_back(root: Path, outputs: Mapping[str, str]) -> dict[str, str] | None:
    """The texts of `outputs` as they are on disk, or None when any is missing or differs from its hash."""
    files: dict[str, str] = {}
    for rel, expected in outputs.items():
        try:
            data = (root / rel).read_bytes()
        except OSError:
            return None
        if hashlib.sha256(data).hexdigest() != expected:
            return None
        files[rel] = data.decode("utf-8")
    return files


def memoized(name: str, key: str, compute: Callable[[], str]) -> str:
    """`compute()`, or its result from the last run when that run's step `name` had the same `key`.

    `key` must cover everything `compute` reads; the environment (library versions, generator sources) is added
    here. Only the latest result per name is kept, and it is checked against its hash before it is reused. Outside
    a run with a render cache (`check`, tests) this is `compute()`; `generate --force` computes and remembers.
    """
    return memoized_each(name, {"": key}, lambda wanted: {item: compute() for item in wanted})[""]


def remembered(name: str, key: str) -> bool:
    """Whether `memoized(name, key, ...)` would return a remembered result rather than compute one."""
    cache = _ACTIVE.get()
    if cache is None or not cache.recall:
        return False
    return _memo_key(cache.environment, name, "", key) in _saved_memo(memo_path(cache.root, name))


def memo_path(root: Path, name: str) -> Path:
    """The file that keeps the results of step `name` for the project at `root`."""
    return root / MEMO_DIR / f"{name}.json"


def memoized_each(
    name: str, inputs: Mapping[str, str], compute: Callable[[dict[str, str]], dict[str, str]]
) -> dict[str, str]:
    """`compute(inputs)` ({item: input text} to {item: result}), called only for the items whose result for the
    same input is not remembered from the last run of step `name` (as `memoized`, item by item)."""
    cache = _ACTIVE.get()
    if cache is None:
        return compute(dict(inputs))
    keys = {item: _memo_key(cache.environment, name, item, text) for item, text in inputs.items()}
    path = memo_path(cache.root, name)
    saved = _saved_memo(path) if cache.recall else {}
    results = {item: saved[key] for item, key in keys.items() if key in saved}
    missing = {item: text for item, text in inputs.items() if item not in results}
    if missing:
        results.update(compute(missing))
    entries = {key: results[item] for item, key in keys.items()}
    if entries != saved:
        _save_memo(path, entries)
    return {item: results[item] for item in inputs}


def _memo_key(environment: str, name: str, item: str, text: str) -> str:
    return hashlib.sha256(f"{environment}\0{name}\0{item}\0{text}".encode()).hexdigest()


def _saved_memo(path: Path) -> dict[str, str]:
    """The results a memo file holds by key, those whose hash still matches ({} for a missing or foreign file)."""
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        return {
            key: entry["value"]
            for key, entry in saved["entries"].items()
            if isinstance(entry["value"], str) and digest(entry["value"]) == entry["digest"]
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}  # nothing usable: compute it


def _save_memo(path: Path, entries: Mapping[str, str]) -> None:
    record = {"entries": {key: {"digest": digest(value), "value": value} for key, value in entries.items()}}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(record), encoding="utf-8")
        temporary.replace(path)
    except OSError:
        pass  # a memo that cannot be written only costs time next run
