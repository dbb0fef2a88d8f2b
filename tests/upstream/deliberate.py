"""What the spec adds to the published ACP schema on purpose, read from spec/upstream-differences.yaml.

Tests that compare our outputs with upstream's leave these out: a maintainer's own method, its types and a property
we add are listed there (the audit insists), so the comparison with upstream need not know them by name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.support import ROOT

# The audit's lines (generator/audit/schema_compare.py, surface_compare.py), with or without the file suffix.
_METHOD = re.compile(r"method (\S+) \((request|notification)\): here, but not in the published schema\b")
_TYPE = re.compile(r"type (\w+): defined here only\b")
_THEIRS = re.compile(r"type (\w+): defined there only\b")
_PROPERTY = re.compile(r"type (\w+): property (\S+) only here\b")
_LEFT_OUT = re.compile(r"method (\S+) \((request|notification)\): published there, but has no retry class here\b")


@dataclass(frozen=True)
class Deliberate:
    """The methods, types and properties that exist here only, and the types and methods upstream has that we do
    not (a type we renamed, a method left out), as the listing names them."""

    methods: frozenset[tuple[str, str]]
    types: frozenset[str]
    properties: frozenset[tuple[str, str]]
    theirs_only: frozenset[str] = frozenset()
    left_out: frozenset[tuple[str, str]] = frozenset()

    @property
    def method_names(self) -> frozenset[str]:
        return frozenset(name for name, _ in self.methods)

    @property
    def left_out_names(self) -> frozenset[str]:
        """The published methods this spec leaves out on purpose (listed as having no retry class here)."""
        return frozenset(name for name, _ in self.left_out)


def deliberate(root: Path = ROOT) -> Deliberate:
    """The deliberate additions listed in ROOT/spec/upstream-differences.yaml (none when there is no such file)."""
    path = root / "spec" / "upstream-differences.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else None
    lines = [item["difference"] for item in (data or {}).get("differences") or []]
    methods, types, properties, theirs, left_out = set(), set(), set(), set(), set()
    for line in lines:
        if found := _METHOD.match(line):
            methods.add((found.group(1), found.group(2)))
        elif found := _TYPE.match(line):
            types.add(found.group(1))
        elif found := _PROPERTY.match(line):
            properties.add((found.group(1), found.group(2)))
        elif found := _THEIRS.match(line):
            theirs.add(found.group(1))
        elif found := _LEFT_OUT.match(line):
            left_out.add((found.group(1), found.group(2)))
    return Deliberate(*map(frozenset, (methods, types, properties, theirs, left_out)))
