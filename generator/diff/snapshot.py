"""One side of a comparison: the methods, types and retry vocabulary of a spec or of a published schema.

A Snapshot is neutral about where it came from (a spec directory, a git revision, a published JSON Schema), and
it can say where each thing is written (file, line, column) without keeping every file parsed: documents are
loaded the first time a position in them is asked for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..check.accepted import Acceptance, Version
from ..check.class_baseline import BaselineEntry
from ..compat_rules import READ, WRITTEN
from ..diagnostics import Location
from ..model.spec import SIDE_OF_DIRECTION
from ..model.upstream_form import published
from ..read.loader import DataPath, Document, load_document
from ..render.schema.bundles import _refs as refs_of  # one reading of $refs, shared with the schema renderer

SPEC, SCHEMA = "spec", "schema"  # the two kinds of snapshot: a full spec, or only what a JSON Schema holds


@dataclass(frozen=True)
class Variant:
    """A variant of a method with its own retry class (the `sessionUpdate` values of session/update)."""

    name: str
    retry_class: str
    stability: str
    index: int


@dataclass(frozen=True)
class MethodView:
    """A (method, kind) entry, with what a published schema lacks left as None or empty."""

    name: str
    kind: str
    direction: str
    stability: str
    params: str | None
    result: str | None
    file: str
    retry_class: str | None = None
    key_param: str | None = None
    success_errors: tuple[int, ...] = ()
    variants: tuple[Variant, ...] = ()
    # (label, text, data path) of the prose: summary, description, repeat texts; for description changes
    texts: tuple[tuple[str, str, DataPath], ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return (self.name, self.kind)


@dataclass(frozen=True)
class Leaf:
    """A value of the retry-class file (a decision, or a text) and where it is written."""

    value: str
    file: str
    path: DataPath


@dataclass
class Snapshot:
    """Everything `diff` compares about one version."""

    label: str
    kind: str
    methods: dict[tuple[str, str], MethodView]
    types: dict[str, dict[str, Any]]
    origins: dict[str, tuple[str, DataPath]]  # type name -> (file, data path of its schema)
    files: dict[str, Path]  # display path -> real path, for positions
    prefix: str = ""  # put before every displayed path, e.g. "v1.2.0:" for a git revision
    classes: tuple[str, ...] = ()  # retry classes, from the most to the least forgiving (the spec's order)
    class_paths: dict[str, tuple[str, DataPath]] = field(default_factory=dict)
    decisions: tuple[str, ...] = ()  # decision names, from the most to the least forgiving
    decision_table: dict[str, Leaf] = field(default_factory=dict)
    prose: dict[str, Leaf] = field(default_factory=dict)  # titles, summaries, meanings, descriptions
    accepted: list[Acceptance] = field(default_factory=list)
    version: Version | None = None
    # The classes as the proposal states them (spec/retry-class-baseline.yaml, as displayed, and its entries): what a
    # comparison with a side that has no retry classes (a published schema) compares this spec's classes with.
    class_baseline: tuple[str, dict[tuple[str, str], BaselineEntry]] = ("", {})
    # The types and properties (`Type.prop`) that are unstable: x-stability in a spec, or absent from the stable
    # sibling of a published schema. A change inside one of them cannot break a stable reader.
    unstable: frozenset[str] = frozenset()
    _docs: dict[str, Document | None] = field(default_factory=dict)
    _reach: dict[str, set[tuple[str, bool]]] | None = None

    # -- positions ------------------------------------------------------------------------------------------
    def locate(self, file: str, path: DataPath, *, key: bool = False) -> Location:
        """Where `path` is written in `file` (its nearest written ancestor), with this side's prefix."""
        if file not in self._docs:
            real = self.files.get(file)
            self._docs[file] = load_document(real, Path("/"), []) if real is not None else None
        doc = self._docs[file]
        if doc is None:
            return Location(self.prefix + file)
        found = doc.locate(path, key=key)
        return Location(self.prefix + file, found.line, found.column)

    # -- who reads each type --------------------------------------------------------------------------------
    def reach(self) -> dict[str, set[tuple[str, bool]]]:
        """For each type: the (role, stable) pairs of the methods that reach it through $refs."""
        if self._reach is None:
            found: dict[str, set[tuple[str, bool]]] = {}
            refs: dict[str, list[str]] = {}  # each type's $refs, read once for every method that reaches it
            for method in self.methods.values():
                stable = method.stability == "stable"
                for role, root in ((READ, method.params), (WRITTEN, method.result)):
                    for name in reachable(self.types, root, refs):
                        found.setdefault(name, set()).add((role, stable))
            self._reach = found
        return self._reach

    def as_schema(self) -> Snapshot:
        """This snapshot reduced to what a published schema can also say (for a spec-against-schema diff), its
        types in the shape the published schemas give them (generator/model/upstream_form.py)."""
        methods = {
            key: MethodView(
                m.name, m.kind, SIDE_OF_DIRECTION.get(m.direction, m.direction), m.stability, m.params, m.result, m.file
            )
            for key, m in self.methods.items()
        }
        types = published({"$defs": self.types})["$defs"]
        # The accepted breaks and the release go along: before the first release the baseline is a published
        # schema, and a break the spec accepts must pass that gate too.
        return Snapshot(
            self.label,
            SCHEMA,
            methods,
            types,
            self.origins,
            self.files,
            self.prefix,
            accepted=self.accepted,
            version=self.version,
            unstable=self.unstable,
        )


def reachable(types: dict[str, Any], root: str | None, refs: dict[str, list[str]]) -> set[str]:
    """The types reachable from `root` through $refs (itself included when it is a type); `refs` memoizes."""
    seen: set[str] = set()
    todo = [root] if root else []
    while todo:
        name = todo.pop()
        if name in seen or name not in types:
            continue
        seen.add(name)
        if name not in refs:
            refs[name] = refs_of(types[name])
        todo.extend(refs[name])
    return seen
