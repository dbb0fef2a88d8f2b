"""Diagnostic codes are a registry: every code the front end uses is registered, every registered one is used,
and the maintainers' page lists them all."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from generator import codes
from generator.diagnostics import Diagnostic, Location
from generator.render.docs import codes_page
from tests.support import ROOT

# Every module of the generator package (the front end, the diff, the renderers) but the registry itself.
FRONT_END = sorted(p for p in (ROOT / "generator").rglob("*.py") if p.name != "codes.py")
# Functions that take a diagnostic code among their arguments, in the modules above.
SINKS = frozenset({"Diagnostic", "error", "_error", "problem", "report"})


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def codes_used(source: str) -> set[str]:
    """Code-shaped string literals passed to a diagnostic sink, used as a table value, or named as missing."""
    found: set[str] = set()

    def code_like(node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if text and " " not in text and "-" in text and text == text.lower():
                return text
        return None

    for node in ast.walk(ast.parse(source)):
        candidates: list[ast.AST] = []
        if isinstance(node, ast.Call) and _name(node.func) in SINKS:
            candidates += node.args
        if isinstance(node, ast.Call):  # SpecKind(..., missing=("code", "message"))
            candidates += [elt for kw in node.keywords if kw.arg == "missing" for elt in getattr(kw.value, "elts", [])]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _name(node.func.value) == "_CODES":
            candidates += node.args  # _CODES.get(keyword, "default-code")
        if isinstance(node, ast.Assign) and any(_name(t) == "_CODES" for t in node.targets):
            candidates += getattr(node.value, "values", [])
        found.update(c for c in map(code_like, candidates) if c)
    return found


def test_every_code_the_front_end_uses_is_registered() -> None:
    used = set().union(*(codes_used(p.read_text(encoding="utf-8")) for p in FRONT_END))
    assert len(used) > 50
    assert sorted(used - set(codes.CODES)) == []


def test_every_registered_code_is_used() -> None:
    used = set().union(*(codes_used(p.read_text(encoding="utf-8")) for p in FRONT_END))
    assert sorted(set(codes.CODES) - used) == []


def test_the_scan_finds_an_unregistered_code() -> None:
    source = 'def f(loc):\n    return Diagnostic(loc, "no-such-code", "a message with spaces")\n'
    assert codes_used(source) == {"no-such-code"}
    assert "no-such-code" not in codes.CODES


def test_an_unregistered_code_cannot_become_a_diagnostic() -> None:
    with pytest.raises(ValueError, match="not registered"):
        Diagnostic(Location("spec/x.yaml"), "no-such-code", "message")


def test_every_code_has_one_definition_and_a_one_line_description() -> None:
    names = [c.name for c in codes._TABLE]
    assert len(names) == len(set(names))
    for code in codes.CODES.values():
        assert code.stage in codes.STAGES
        assert code.description and "\n" not in code.description


def test_the_maintainers_page_lists_every_code() -> None:
    (page,) = codes_page.render(None).values()  # type: ignore[arg-type]
    for code in codes.CODES.values():
        assert f"| `{code.name}` | {code.description} |" in page
    assert Path(codes_page.PAGE).parts[:2] == ("site", "reference")
