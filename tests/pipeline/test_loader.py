"""Positions come from the YAML nodes: 1-based lines and columns for values and keys."""

from __future__ import annotations

from pathlib import Path

from generator.loader import Document, parse_document


def test_positions_of_values_and_keys(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("method: a\nretry:\n  class: safe\nlist:\n  - x\n  - y: 1\n")
    diagnostics: list = []
    doc = _load(path, diagnostics)
    assert doc is not None and diagnostics == []
    assert str(doc.locate(("retry", "class"))) == "m.yaml:3:10"
    assert str(doc.locate(("retry", "class"), key=True)) == "m.yaml:3:3"
    assert str(doc.locate(("list", 1, "y"))) == "m.yaml:6:8"
    # a path that does not exist falls back to its nearest ancestor
    assert str(doc.locate(("retry", "missing"))) == "m.yaml:3:3"
    assert doc.locate(("list", 1, "y")).path == "list[1].y"


def test_scalars_keep_their_yaml_types(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("a: -32602\nb: true\nc: null\nd: '7'\n")
    doc = _load(path, [])
    assert doc is not None
    assert doc.data == {"a": -32602, "b": True, "c": None, "d": "7"}


def _load(path: Path, diagnostics: list) -> Document | None:
    return parse_document(path, path.name, path.read_bytes(), diagnostics)
