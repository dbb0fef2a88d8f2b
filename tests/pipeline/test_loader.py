"""Positions come from the YAML nodes: 1-based lines and columns for values and keys."""

from __future__ import annotations

from pathlib import Path

from generator.read.loader import Document, parse_document


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


def _diagnostics(tmp_path: Path, text: str) -> list[str]:
    found: list = []
    parse_document(tmp_path / "m.yaml", "m.yaml", text.encode("utf-8"), found)
    return [d.format() for d in sorted(found)]


def test_invisible_characters_are_refused_where_they_are_written(tmp_path: Path) -> None:
    # A right-to-left override and an isolate make the summary read differently from what it is (Trojan Source).
    text = "method: a/b\nsummary: Safe \u202eto resend\u2066 always\n# a zero\u200bwidth space in a comment\n"
    assert _diagnostics(tmp_path, text) == [
        "m.yaml:2:15: error[invisible-character]: invisible character U+202E (RIGHT-TO-LEFT OVERRIDE); "
        "write it as an escape if it is meant",
        "m.yaml:2:25: error[invisible-character]: invisible character U+2066 (LEFT-TO-RIGHT ISOLATE); "
        "write it as an escape if it is meant",
        "m.yaml:3:9: error[invisible-character]: invisible character U+200B (ZERO WIDTH SPACE); "
        "write it as an escape if it is meant",
    ]


def test_control_characters_get_their_position_and_escapes_stay_allowed(tmp_path: Path) -> None:
    (bell,) = _diagnostics(tmp_path, "a: 1\nb: x\x07y\n")
    assert bell.startswith("m.yaml:2:5: error[invisible-character]: invisible character U+0007")
    assert _diagnostics(tmp_path, '\ufeffa: "\\u202e is visible as an escape"\n') == []


def test_an_unclosed_quote_is_reported_where_it_opens(tmp_path: Path) -> None:
    (found,) = _diagnostics(tmp_path, 'a: 1\nb: "never closed\nc: 2\nd: 3\n')
    assert found.startswith("m.yaml:2:4: error[yaml-syntax]: a quoted value starts here and is never closed"), found
