"""The Jinja bytecode cache: keyed on what shapes compiled templates, and never a change of output."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.render import templates


def _folder(monkeypatch: pytest.MonkeyPatch, home: Path) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    cache = templates._bytecode_cache()
    assert cache is not None
    return Path(cache.directory)  # type: ignore[attr-defined]


def test_the_folder_follows_the_options(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    first = _folder(monkeypatch, tmp_path)
    monkeypatch.setitem(templates._OPTIONS, "trim_blocks", False)
    assert _folder(monkeypatch, tmp_path) != first
    assert first.parent == tmp_path / "acp-v2-toolchain"


def test_cached_templates_render_the_same(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    page = "generated/python/pyproject.toml.j2"
    context = {"header": "# h\n", "version": "1", "authors": "a", "classifiers": ["c"], "urls": [("u", "v")]}
    templates.environment.cache_clear()
    try:
        cold = templates.render(page, **context)  # compiles and stores
        assert any((tmp_path / "acp-v2-toolchain").rglob("*.cache"))
        templates.environment.cache_clear()
        assert templates.render(page, **context) == cold  # loads the stored bytecode
    finally:
        templates.environment.cache_clear()


def test_no_cache_folder_means_no_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file where the folder would go
    assert templates._bytecode_cache() is None
