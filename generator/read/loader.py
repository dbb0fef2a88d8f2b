"""Reading: turn the bytes of one spec file into plain JSON-like data, remembering where every key and value came from.

We build the data ourselves from PyYAML's event stream rather than from its composed node tree, with an explicit
stack instead of recursion. That gives each JSON-style path (a tuple of keys and indexes) a line and column, and it
lets us refuse, each with a diagnostic of its own and without a traceback:

- duplicate keys (PyYAML silently keeps the last), merge keys, tags and complex keys;
- nesting deeper than `MAX_DEPTH` (deep recursion later would crash the checks and the renderers);
- aliases that refer to the collection they sit in, or that expand to more than `MAX_ALIAS_VALUES` values;
- values JSON cannot hold: dates and times, binary, NaN and infinities, integers beyond 64 bits, lone surrogates;
- invisible characters written literally anywhere in the file (bidirectional overrides and isolates, zero-width
  and other format characters, control characters): they would reach docstrings and schemas unseen, and make text
  read differently from what it is ("Trojan Source"). Escapes such as `"\u202e"` stay allowed: they are visible.
"""

from __future__ import annotations

import copy
import datetime
import math
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..diagnostics import Diagnostic, Location, display_path

try:  # the C parser is several times faster and gives the same marks
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

DataPath = tuple[str | int, ...]

# Limits. The real spec nests about 15 levels and uses a few small anchors; these leave ample room.
MAX_DEPTH = 64
MAX_ALIAS_VALUES = 100_000
MAX_INTEGER = 2**63  # JSON parsers commonly hold integers in 64 bits (or fewer); beyond that values change
_MAP_TAGS = (None, "!", "tag:yaml.org,2002:map")
_SEQ_TAGS = (None, "!", "tag:yaml.org,2002:seq")
_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"


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


class _Abort(Exception):
    """Stops building a document after a problem that leaves nothing sensible to check (a limit, a cycle)."""


@dataclass
class _Frame:
    """An open mapping or sequence while its events arrive."""

    value: dict[str, Any] | list[Any]
    path: DataPath
    anchor: str | None
    size: int = 1
    height: int = 1
    key: str | None = None  # a mapping's key whose value is awaited
    key_mark: Any = None
    discard_next: bool = False  # the awaited value belongs to a rejected key
    awaiting_key: bool = True
    discard: bool = False  # built only to be thrown away (the value of a rejected key)


class _Builder:
    """Builds data from parser events, recording marks, with the limits above."""

    def __init__(self, doc: Document, diagnostics: list[Diagnostic]) -> None:
        self.doc = doc
        self.diagnostics = diagnostics
        self.resolver = yaml.resolver.Resolver()
        self.constructor = yaml.constructor.SafeConstructor()
        self.stack: list[_Frame] = []
        # anchor -> (value, size, height); None while its collection is still open
        self.anchors: dict[str, tuple[Any, int, int] | None] = {}
        self.expanded = 0
        self.root: Any = None
        self.documents = 0

    def error(self, mark: Any, code: str, message: str) -> None:
        line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
        self.diagnostics.append(Diagnostic(Location(self.doc.display, line, col), code, message))

    def feed(self, event: yaml.Event) -> None:
        kind = type(event)
        if kind is yaml.ScalarEvent:
            if not self._is_key(event):
                self._place(self._scalar(event), event, size=1, height=0)
        elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
            frame = self.stack.pop()
            if frame.anchor is not None:
                self.anchors[frame.anchor] = (frame.value, frame.size, frame.height)
            self._attach(frame.value, frame.size, frame.height)
        elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
            self._open(event)
        elif kind is yaml.AliasEvent:
            self._alias(event)
        elif kind is yaml.DocumentStartEvent:
            self.documents += 1
            if self.documents > 1:
                self.error(event.start_mark, "unsupported-yaml", "a spec file holds one YAML document, not several")
                raise _Abort

    # -- where a value goes ----------------------------------------------------------------------------------
    def _is_key(self, event: yaml.ScalarEvent) -> bool:
        """Handle `event` as a mapping key when one is awaited; returns whether it was one."""
        top = self.stack[-1] if self.stack else None
        if top is None or not isinstance(top.value, dict) or not top.awaiting_key:
            return False
        top.awaiting_key = False
        key = event.value  # keys are the text as written: JSON keys are strings
        path = (*top.path, key)
        tag = event.tag
        if tag is None and key == "<<" and event.implicit[0]:  # only a plain << can resolve to a merge
            tag = self.resolver.resolve(yaml.ScalarNode, key, event.implicit)
        if tag == _MERGE_TAG:
            self.error(event.start_mark, "unsupported-yaml", "merge keys (<<) are not allowed in spec files")
            top.discard_next = True
        elif key in top.value:
            first_line = self.doc.keys[path][0] + 1
            self.error(
                event.start_mark,
                "duplicate-key",
                f"key {key!r} appears twice in one mapping (first on line {first_line})",
            )
            top.discard_next = True
        else:
            top.key = key
            self.doc.keys[path] = (event.start_mark.line, event.start_mark.column)
        return True

    def _child_path(self) -> DataPath | None:
        """The path of the next value, or None when it is to be thrown away."""
        if not self.stack:
            return ()
        top = self.stack[-1]
        if top.discard:
            return None
        if isinstance(top.value, list):
            return (*top.path, len(top.value))
        if top.awaiting_key:
            return None  # a collection or alias as a key: reported by the caller
        if top.discard_next:
            return None
        return (*top.path, top.key)  # type: ignore[arg-type]

    def _place(self, value: Any, event: yaml.NodeEvent, *, size: int, height: int) -> None:
        path = self._child_path()
        if path is not None:
            self.doc.values[path] = (event.start_mark.line, event.start_mark.column)
        anchor = getattr(event, "anchor", None)
        if anchor is not None and not isinstance(event, yaml.AliasEvent):
            self.anchors[anchor] = (value, size, height)
        self._attach(value, size, height)

    def _attach(self, value: Any, size: int, height: int) -> None:
        if not self.stack:
            self.root = value
            return
        top = self.stack[-1]
        top.size += size
        top.height = max(top.height, height + 1)
        if isinstance(top.value, list):
            top.value.append(value)
            return
        if not top.discard_next:
            top.value[top.key] = value  # type: ignore[index]
        top.discard_next = False
        top.key = None
        top.awaiting_key = True

    def _complex_key(self, event: yaml.NodeEvent) -> bool:
        top = self.stack[-1] if self.stack else None
        if top is not None and isinstance(top.value, dict) and top.awaiting_key:
            self.error(event.start_mark, "unsupported-yaml", "a mapping key must be a plain string")
            raise _Abort
        return False

    # -- collections and aliases -----------------------------------------------------------------------------
    def _open(self, event: yaml.CollectionStartEvent) -> None:
        self._complex_key(event)
        is_map = isinstance(event, yaml.MappingStartEvent)
        if event.tag not in (_MAP_TAGS if is_map else _SEQ_TAGS):
            self.error(event.start_mark, "unsupported-yaml", f"the tag {event.tag} is not allowed in spec files")
            raise _Abort
        if len(self.stack) >= MAX_DEPTH:
            self.error(event.start_mark, "too-deep", f"values are nested more than {MAX_DEPTH} levels deep")
            raise _Abort
        path = self._child_path()
        discard = path is None
        if path is not None:
            self.doc.values[path] = (event.start_mark.line, event.start_mark.column)
        if event.anchor is not None:
            self.anchors[event.anchor] = None  # open: an alias to it now would be a cycle
        self.stack.append(_Frame({} if is_map else [], path or (), event.anchor, discard=discard))

    def _alias(self, event: yaml.AliasEvent) -> None:
        self._complex_key(event)
        if event.anchor not in self.anchors:
            self.error(event.start_mark, "yaml-syntax", f"the alias *{event.anchor} has no anchor before it")
            raise _Abort
        found = self.anchors[event.anchor]
        if found is None:
            self.error(event.start_mark, "alias-cycle", f"the alias *{event.anchor} refers to a value that contains it")
            raise _Abort
        value, size, height = found
        self.expanded += size
        if self.expanded > MAX_ALIAS_VALUES:
            self.error(
                event.start_mark,
                "alias-expansion",
                f"aliases expand to more than {MAX_ALIAS_VALUES} values (an alias bomb?)",
            )
            raise _Abort
        if len(self.stack) + height > MAX_DEPTH:
            self.error(event.start_mark, "too-deep", f"values are nested more than {MAX_DEPTH} levels deep")
            raise _Abort
        self._place(copy.deepcopy(value), event, size=size, height=height)

    # -- scalars ---------------------------------------------------------------------------------------------
    def _scalar(self, event: yaml.ScalarEvent) -> Any:
        tag = event.tag
        if tag is None and not event.implicit[0]:
            return event.value  # quoted or block text without a tag is a string, whatever it looks like
        if tag in (None, "!"):
            tag = self.resolver.resolve(yaml.ScalarNode, event.value, event.implicit)
        if tag == _STR_TAG:  # most plain scalars: the text is the value, no constructor needed
            problem = _not_json(event.value)
            if problem:
                self.error(event.start_mark, "invalid-value", f"{event.value[:40]!r} {problem}")
                return None
            return event.value
        node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
        try:
            value = self.constructor.construct_object(node, deep=True)
        except (yaml.constructor.ConstructorError, ValueError, OverflowError) as exc:
            if tag == "tag:yaml.org,2002:int":  # Python refuses to read integers of thousands of digits
                reason = _not_json(MAX_INTEGER)
            else:
                reason = "cannot be read: " + (getattr(exc, "problem", None) or str(exc).splitlines()[0])
            self.error(event.start_mark, "invalid-value", f"{event.value[:40]!r} {reason}")
            return None
        finally:
            self.constructor.constructed_objects.clear()
        problem = _not_json(value)
        if problem:
            self.error(event.start_mark, "invalid-value", f"{event.value[:40]!r} {problem}")
            return None
        return value


def _not_json(value: Any) -> str | None:
    """Why a constructed scalar cannot be a JSON value, or None when it can."""
    if isinstance(value, datetime.date | datetime.datetime):
        return "is a date or time, which JSON cannot hold; quote it to make it a string"
    if isinstance(value, bytes):
        return "is binary data, which JSON cannot hold"
    if isinstance(value, float) and not math.isfinite(value):
        return "is not a finite number, which JSON cannot hold"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= MAX_INTEGER:
        return f"is an integer too large for JSON readers (beyond ±2^{MAX_INTEGER.bit_length() - 1})"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "holds a lone surrogate, which is not valid Unicode"
    return None


# Tab, line feed and carriage return are the only control characters YAML text needs.
_ALLOWED_CONTROLS = frozenset("\t\n\r")


def _invisible(char: str) -> bool:
    """Whether `char` is invisible or reorders text: a control (Cc), format (Cf) or line/paragraph separator."""
    if char in _ALLOWED_CONTROLS:
        return False
    return unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp")


# Every character that might be invisible: the controls YAML text does not need, and anything past ASCII. A file
# without one (most are plain ASCII) is passed over at the speed of one regex search.
_SUSPECT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\U0010ffff]")


def invisible_characters(text: str, display: str) -> list[Diagnostic]:
    """One diagnostic for each invisible character written literally in `text` (a leading BOM is allowed)."""
    found = []
    for match in _SUSPECT.finditer(text):
        offset, char = match.start(), match.group()
        if _invisible(char) and not (offset == 0 and char == "\ufeff"):
            line = text.count("\n", 0, offset) + 1
            column = offset - (text.rfind("\n", 0, offset) + 1) + 1
            name = unicodedata.name(char, "a control character")
            message = f"invisible character U+{ord(char):04X} ({name}); write it as an escape if it is meant"
            found.append(Diagnostic(Location(display, line, column), "invisible-character", message))
    return found


def _syntax_location(exc: yaml.MarkedYAMLError, text: str) -> tuple[int, int]:
    """Where a syntax error is: the construct's start when the file ends inside it (an unclosed quote)."""
    mark = exc.problem_mark or exc.context_mark
    if exc.context_mark is not None and (mark is None or mark.index >= len(text.rstrip())):
        mark = exc.context_mark
    return (mark.line + 1, mark.column + 1) if mark else (1, 1)


def _syntax_problem(exc: yaml.MarkedYAMLError, text: str) -> tuple[int, int, str]:
    """(line, column, message) of a YAML syntax error, at the line a person would fix and in our words for the
    common mistakes (a tab, a key without its colon, a colon inside a plain value, a block indented out of line);
    PyYAML's own words otherwise."""
    problem, context = exc.problem or "", exc.context or ""
    at, start = exc.problem_mark, exc.context_mark
    if at is not None:
        line_start = text.rfind("\n", 0, at.index) + 1
        line_end = text.find("\n", at.index)
        line = text[line_start : line_end if line_end >= 0 else len(text)]
        indent = line[: len(line) - len(line.lstrip(" \t"))]
        if "\t" in indent or (at.index < len(text) and text[at.index] == "\t"):
            column = indent.index("\t") + 1 if "\t" in indent else at.column + 1
            return at.line + 1, column, "a tab: YAML indents with spaces only; replace the tab with spaces"
        if problem.startswith("mapping values are not allowed"):
            keyless = _keyless_line_above(text, at.line, indent)
            if keyless is not None:  # `key value` then `key: value`: the two read as one value, the colon is missed
                shown = text.splitlines()[keyless].strip()
                message = f"no ':' after the key of this line ({shown!r}); an entry is written `key: value`"
                return keyless + 1, len(indent) + 1, message
            if _under_a_value(text, at.line, indent):
                message = "this line is indented under an entry that already has its value; indent it as that entry"
                return at.line + 1, 1, message
            return at.line + 1, at.column + 1, "': ' inside a value that is not quoted; quote the value ('a: b')"
    if start is not None and "simple key" in context and "expected ':'" in problem:
        shown = text.splitlines()[start.line].strip() if start.line < len(text.splitlines()) else ""
        message = f"no ':' after the key of this line ({shown!r}); an entry is written `key: value`"
        return start.line + 1, start.column + 1, message
    if at is not None and problem.startswith("expected <block end>"):
        return at.line + 1, at.column + 1, "this line is indented out of line with the block it belongs to"
    if start is not None and "quoted scalar" in context and "end of stream" in problem:
        return start.line + 1, start.column + 1, "a quoted value starts here and is never closed"
    line, column = _syntax_location(exc, text)
    return line, column, " ".join(p for p in (context, problem) if p) or "invalid YAML"


def _nonblank_above(rows: list[str], line: int) -> int:
    """The index of the nearest line above `line` (0-based) that is not blank, or -1 when there is none."""
    above = line - 1
    while above >= 0 and not rows[above].strip():
        above -= 1
    return above


def _keyless_line_above(text: str, line: int, indent: str) -> int | None:
    """The line above `line` (0-based) when it starts at the same indentation and has no `:` at all: an entry whose
    colon is missing, which YAML reads as the start of a value that the next line's `key:` then breaks."""
    rows = text.splitlines()
    above = _nonblank_above(rows, line)
    if above < 0:
        return None
    row = rows[above]
    same = row[: len(row) - len(row.lstrip(" "))] == indent and not row.lstrip().startswith(("-", "#"))
    return above if same and ":" not in row else None


def _under_a_value(text: str, line: int, indent: str) -> bool:
    """Whether the line above `line` (0-based) is indented less and is a `key: value` entry with its value written:
    then `line`, a `key: value` indented deeper, was meant as that entry's sibling."""
    rows = text.splitlines()
    above = _nonblank_above(rows, line)
    if above < 0:
        return False
    row = rows[above]
    key, colon, value = row.strip().partition(": ")
    shallower = len(row) - len(row.lstrip(" ")) < len(indent)
    return shallower and bool(colon) and bool(value.strip()) and not key.startswith(("-", "#"))


def parse_document(path: Path, display: str, data: bytes, diagnostics: list[Diagnostic]) -> Document | None:
    """Parse the bytes of one spec file. Problems go to `diagnostics`; returns None when nothing usable is left."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        diagnostics.append(Diagnostic(Location(display), "not-utf8", f"the file is not valid UTF-8 ({exc.reason})"))
        return None
    doc = Document(path=path, display=display, data=None)
    builder = _Builder(doc, diagnostics)
    before = len(diagnostics)
    hidden = invisible_characters(text, display)
    diagnostics.extend(hidden)
    try:
        for event in yaml.parse(text, Loader=_Loader):
            builder.feed(event)
    except _Abort:
        return None
    except yaml.MarkedYAMLError as exc:
        line, col, problem = _syntax_problem(exc, text)
        diagnostics.append(Diagnostic(Location(display, line, col), "yaml-syntax", problem))
        return None
    except yaml.YAMLError as exc:  # a reader error on a control character, already reported with its position
        if not hidden:
            diagnostics.append(Diagnostic(Location(display), "yaml-syntax", str(exc).splitlines()[0]))
        return None
    if hidden:  # the data parsed, but its text is not what it looks like: nothing of it goes further
        return None
    if builder.documents == 0:
        diagnostics.append(Diagnostic(Location(display), "empty-file", "the file is empty"))
        return None
    doc.data = builder.root
    # A file with a value JSON cannot hold is reported and not checked further (its data has holes).
    return doc if len(diagnostics) == before or _only_keys(diagnostics[before:]) else None


def load_document(path: Path, root: Path, diagnostics: list[Diagnostic]) -> Document | None:
    """Read and parse one file outside a spec run (for tools that look at a file load_spec already checked)."""
    display = display_path(path, root)
    try:
        data = path.read_bytes()
    except OSError as exc:
        diagnostics.append(Diagnostic(Location(display), "unreadable-file", f"cannot be read: {exc.strerror or exc}"))
        return None
    return parse_document(path, display, data, diagnostics)


def _only_keys(found: list[Diagnostic]) -> bool:
    """Duplicate and merge keys leave the rest of the data sound, so its checks still run."""
    return all(d.code in ("duplicate-key", "unsupported-yaml") for d in found)
