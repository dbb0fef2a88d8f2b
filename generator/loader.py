"""Stage 1: read spec YAML into plain data, remembering where every key and value came from.

PyYAML's composer gives nodes with marks; we build the data ourselves from those nodes so that each
JSON-style path (a tuple of keys and indexes) maps to a line and column, and so that duplicate keys, which
PyYAML silently accepts, become diagnostics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .diagnostics import Diagnostic, Location, display_path

try:  # the C loader is several times faster and gives the same marks
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

DataPath = tuple[str | int, ...]


@dataclass
class Document:
    """One loaded spec file: its data, and the position of every value and mapping key in it."""

    path: Path
    display: str
    data: Any
    values: dict[DataPath, tuple[int, int]] = field(default_factory=dict)
    keys: dict[DataPath, tuple[int, int]] = field(default_factory=dict)

    def locate(self, path: DataPath, *, key: bool = False) -> Location:
        """The location of `path`, or of its nearest ancestor that has one (1-based line and column)."""
        table = self.keys if key else self.values
        probe = tuple(path)
        while probe not in table and probe:
            if probe in self.values:
                table = self.values
                break
            probe = probe[:-1]
        line, col = table.get(probe, self.values.get((), (0, 0)))
        return Location(self.display, line + 1, col + 1, format_path(path))


def format_path(path: DataPath) -> str:
    """A data path as `retry.class` or `variants[3].class`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


class _Builder:
    """Turns a composed node tree into Python data, recording marks and duplicate keys."""

    def __init__(self, doc: Document, diagnostics: list[Diagnostic]) -> None:
        self.doc = doc
        self.diagnostics = diagnostics
        self.constructor = yaml.constructor.SafeConstructor()

    def build(self, node: yaml.Node, path: DataPath) -> Any:
        self.doc.values[path] = (node.start_mark.line, node.start_mark.column)
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        return self.constructor.construct_object(node, deep=True)

    def _mapping(self, node: yaml.MappingNode, path: DataPath) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                self._error(key_node, "unsupported-yaml", "merge keys (<<) are not allowed in spec files")
                continue
            key = self.constructor.construct_object(key_node, deep=True)
            if not isinstance(key, str):
                key = str(key)
            if key in result:
                first_line = self.doc.keys[(*path, key)][0] + 1
                self._error(
                    key_node, "duplicate-key", f"key {key!r} appears twice in one mapping (first on line {first_line})"
                )
                continue
            self.doc.keys[(*path, key)] = (key_node.start_mark.line, key_node.start_mark.column)
            result[key] = self.build(value_node, (*path, key))
        return result

    def _error(self, node: yaml.Node, code: str, message: str) -> None:
        mark = node.start_mark
        self.diagnostics.append(Diagnostic(Location(self.doc.display, mark.line + 1, mark.column + 1), code, message))


def load_document(path: Path, root: Path, diagnostics: list[Diagnostic]) -> Document | None:
    """Load one YAML file. Problems go to `diagnostics`; returns None when the file cannot be parsed at all."""
    display = display_path(path, root)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        diagnostics.append(Diagnostic(Location(display), "not-utf8", f"the file is not valid UTF-8 ({exc.reason})"))
        return None
    doc = Document(path=path, display=display, data=None)
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        diagnostics.append(Diagnostic(Location(display, line, col), "yaml-syntax", problem or "invalid YAML"))
        return None
    except yaml.YAMLError as exc:  # e.g. a reader error on a control character
        diagnostics.append(Diagnostic(Location(display), "yaml-syntax", str(exc).splitlines()[0]))
        return None
    if node is None:
        diagnostics.append(Diagnostic(Location(display), "empty-file", "the file is empty"))
        return None
    try:
        doc.data = _Builder(doc, diagnostics).build(node, ())
    except yaml.constructor.ConstructorError as exc:
        mark = exc.problem_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        diagnostics.append(Diagnostic(Location(display, line, col), "yaml-syntax", exc.problem or "invalid value"))
        return None
    return doc
