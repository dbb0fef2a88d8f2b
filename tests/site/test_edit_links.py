"""Edit links: none until a maintainer says where the repository lives, and then only to files."""

from __future__ import annotations

import importlib
from pathlib import Path
from types import SimpleNamespace

import pytest
from mkdocs.config import load_config

from generator import paths

ROOT = Path(__file__).resolve().parents[2]
BASE = "https://code.example/acp-v2/edit/main/"


@pytest.fixture
def hooks():
    return importlib.import_module("docs_hooks")


def _config(monkeypatch: pytest.MonkeyPatch, base: str | None):
    if base is None:
        monkeypatch.delenv("ACP_DOCS_EDIT_BASE", raising=False)
    else:
        monkeypatch.setenv("ACP_DOCS_EDIT_BASE", base)
    return load_config(str(ROOT / "mkdocs.yml"))


def _page(src_uri: str, meta: dict[str, str] | None = None):
    return SimpleNamespace(meta=meta or {}, file=SimpleNamespace(src_uri=src_uri), edit_url="unset")


def _generated_pages() -> list[tuple[str, dict[str, str]]]:
    """Every generated page with its front matter (what docs_hooks reads)."""
    pages = []
    for path in sorted((ROOT / paths.REFERENCE).rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        meta = {}
        if text.startswith("---\n"):
            for line in text.split("---\n", 2)[1].splitlines():
                name, _, value = line.partition(":")
                meta[name.strip()] = value.strip()
        pages.append((path.relative_to(ROOT / paths.SITE).as_posix(), meta))
    return pages


def test_no_edit_links_until_a_base_is_configured(monkeypatch, hooks) -> None:
    config = _config(monkeypatch, None)
    assert not config.extra["edit_base"]
    for src_uri in ("index.md", "keyed-prompts.md", "reference/methods/session-prompt.md"):
        page = _page(src_uri, {"edit_source": "spec/methods/session-prompt.yaml"})
        hooks.on_page_markdown("", page, config, None)
        assert page.edit_url is None, src_uri


def test_configured_links_open_files_never_folders(monkeypatch, hooks) -> None:
    config = _config(monkeypatch, BASE)
    linked = 0
    for src_uri, meta in [*_generated_pages(), ("index.md", {}), ("reference/changes.md", {})]:
        page = _page(src_uri, meta)
        hooks.on_page_markdown("", page, config, None)
        if page.edit_url is None:
            continue
        linked += 1
        assert page.edit_url.startswith(BASE)
        target = ROOT / page.edit_url.removeprefix(BASE)
        assert target.is_file(), f"{src_uri}: edit link opens {target.relative_to(ROOT)}, not a file"
        assert not target.is_relative_to(ROOT / paths.REFERENCE), f"{src_uri}: links to generated Markdown"
    assert linked > 1
    types_index = _page("reference/types/index.md", dict(_generated_pages())["reference/types/index.md"])
    hooks.on_page_markdown("", types_index, config, None)
    assert types_index.edit_url is None  # made from every file under spec/types/: no one file to open
    own = _page("keyed-prompts.md")
    hooks.on_page_markdown("", own, config, None)
    assert own.edit_url == BASE + "site/keyed-prompts.md"
