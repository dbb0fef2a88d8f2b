"""MkDocs hooks for the docs site (named under `hooks:` in mkdocs.yml).

- Edit links: none until `extra.edit_base` is set (ACP_DOCS_EDIT_BASE), since a link to an address nobody set up
  leads nowhere. Once it is, a generated page links to the one spec file it comes from (its `edit_source` front
  matter), not to Markdown that `make generate` would overwrite; a hand-written page links to its own file under
  site/. A generated page made from many files, or from none, gets no link: an edit link opens a file, not a folder.
- Navigation: the generated method pages are listed under Reference without anyone keeping a list by hand.
- Changes: the "Changes" page is written here, at build time, from the git history (`v*` release tags and the work
  tree) by generator/diff/changelog.py. It is not a `make generate` output, so that `make check` stays a function of
  spec/ alone, whatever tags a clone has.
- Search: diagram sources (mermaid blocks), and the code listings of pages that ask for it, are kept out of the
  search index, so a result's preview shows prose, not `flowchart TD` and arrows, and a search for an error code
  finds the pages that explain it before the tables that list it.
- Spec facts: a hand-written page states a bound of the spec's schema as `{{ spec.Type.keyword }}` (for example
  the key's `maxLength`), filled in here from the generated schema, so that a changed bound changes the prose too.
- Mermaid: the theme would load mermaid from a CDN in the reader's browser. We ship a pinned copy with the site
  instead (taken once with `npm pack` through generator/read/fetch.py and checked against its published sha512), so
  diagrams render offline and no page asks a third party for code.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.structure.nav import Navigation, Section
from mkdocs.structure.pages import Page

from generator import paths
from generator.read.fetch import FetchError, NpmPackage, fetch_members

# The `integrity` is the one the npm registry publishes for this release.
MERMAID = NpmPackage(
    "mermaid",
    "11.17.2",
    "sha512-V6K3C8EBdEsPFZXSKMJe6ppQOENxuHARr9GvHX4hh47lAbhMRD9qf4oEK7LoaRQxULMa80/qt5gHO73aCleBBg==",
)
MERMAID_MEMBER = "package/dist/mermaid.min.js"
MERMAID_URI = "javascripts/mermaid.min.js"
METHODS_DIR = paths.docs_relative(paths.METHODS_DIR) + "/"
METHODS_TITLE = "Methods"
TYPES_DIR = paths.docs_relative(paths.TYPES_DIR) + "/"
TYPES_TITLE = "Types"
RETRY_TABLE = paths.docs_relative(paths.RETRY_TABLE_PAGE)
# The element pymdownx.superfences writes for a mermaid fence (the `class: mermaid` of mkdocs.yml).
MERMAID_BLOCK = re.compile(r'<pre class="mermaid"(?=[\s>])')
# A fact of the generated schema in a hand-written page: `{{ spec.IdempotencyKey.maxLength }}`.
SPEC_FACT = re.compile(r"\{\{\s*spec\.(\w+)\.(\w+)\s*\}\}")
# The element pymdownx.highlight writes around a code block.
CODE_BLOCK = re.compile(r'<div class="highlight"(?=[\s>])')


def _root(config: MkDocsConfig) -> Path:
    return Path(config.config_file_path).resolve().parent


# -- banner -----------------------------------------------------------------------------------------------
def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Fill the banner's version and pinned-schema link from the generator, where each is written once."""
    from generator.read.published import UPSTREAM_PACKAGE, UPSTREAM_VERSION
    from generator.render.python.package import PACKAGE_VERSION

    config.extra["spec_version"] = PACKAGE_VERSION
    config.extra["pinned_schema_name"] = f"{UPSTREAM_PACKAGE} {UPSTREAM_VERSION}"
    config.extra["pinned_schema"] = f"https://www.npmjs.com/package/{UPSTREAM_PACKAGE}/v/{UPSTREAM_VERSION}"
    return config


# -- mermaid ----------------------------------------------------------------------------------------------
def mermaid_script(root: Path) -> Path:
    """The pinned mermaid bundle, fetched into .cache/docs/ on first use (checked against its integrity)."""
    target = root / ".cache" / "docs" / f"mermaid-{MERMAID.version}.min.js"
    if target.is_file():
        return target
    try:
        data = fetch_members(MERMAID, (MERMAID_MEMBER,))[MERMAID_MEMBER]
    except FetchError as exc:
        raise PluginError(
            f"mermaid {MERMAID.version} is needed for the diagrams and could not be fetched: {exc}"
        ) from None
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    partial.write_bytes(data)
    partial.replace(target)
    return target


def on_files(files: Files, config: MkDocsConfig) -> Files:
    from generator.diff.changelog import PAGE_URI, changes_page

    root = _root(config)
    files.append(File.generated(config, MERMAID_URI, abs_src_path=str(mermaid_script(root))))
    files.append(File.generated(config, PAGE_URI, content=changes_page(root)))
    return files


# -- navigation -------------------------------------------------------------------------------------------
def on_nav(nav: Navigation, config: MkDocsConfig, files: Files) -> Navigation:
    """Add Methods and Types sections, holding every generated method and type page, after the retry table."""
    table = next((p for p in nav.pages if p.file.src_uri == RETRY_TABLE), None)
    for title, prefix in ((METHODS_TITLE, METHODS_DIR), (TYPES_TITLE, TYPES_DIR)):
        pages = [f.page for f in files.documentation_pages() if f.src_uri.startswith(prefix) and f.page]
        if not pages:
            continue
        # the section's index page (if any) first, then the rest by the title a reader sees
        section = Section(title, sorted(pages, key=_nav_order))
        for page in section.children:
            page.parent = section
        # Beside the retry table when it sits in a section (Reference), else at the end of the top level.
        if table is not None and table.parent is not None:
            section.parent = table.parent
            table.parent.children.append(section)
        else:
            nav.items.append(section)
    nav.pages = list(_pages_in(nav.items))
    for before, after in zip(nav.pages, nav.pages[1:], strict=False):
        before.next_page, after.previous_page = after, before
    return nav


def _nav_order(page: Page) -> tuple[bool, str, str]:
    """Index first, then by shown title (front matter `title:`, as the page renders it), case-insensitively."""
    from mkdocs.utils.meta import get_data

    _, meta = get_data(page.file.content_string)
    shown = str(meta.get("title") or page.file.src_uri)
    return (not page.file.src_uri.endswith("index.md"), shown.casefold(), page.file.src_uri)


def _pages_in(items: list) -> list[Page]:
    out: list[Page] = []
    for item in items:
        if isinstance(item, Page):
            out.append(item)
        elif isinstance(item, Section):
            out.extend(_pages_in(item.children))
    return out


# -- search -----------------------------------------------------------------------------------------------
def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Mark diagram sources so the search plugin skips them (it honours `data-search-exclude`), and the code
    listings of pages whose front matter sets `search_skip_code` (quoted source files, whose every line names an
    error code or a method and would outrank the prose that explains them)."""
    html = MERMAID_BLOCK.sub('<pre class="mermaid" data-search-exclude', html)
    if page.meta.get("search_skip_code"):
        html = CODE_BLOCK.sub('<div class="highlight" data-search-exclude', html)
    return html


# -- edit links -------------------------------------------------------------------------------------------
def edit_source(page: Page, config: MkDocsConfig) -> str | None:
    """The repository file a page's edit link opens, or None when the page has no single file to edit."""
    root = _root(config)
    source = page.meta.get("edit_source")
    if source is None:
        if page.file.src_uri.startswith(paths.docs_relative(paths.REFERENCE) + "/"):
            return None  # generated (or written at build time) without a spec file of its own
        source = f"{Path(config.docs_dir).resolve().relative_to(root).as_posix()}/{page.file.src_uri}"
    return source if (root / source).is_file() else None


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    base = config.extra.get("edit_base")
    source = edit_source(page, config) if base else None
    page.edit_url = base.rstrip("/") + "/" + source if source else None
    return fill_spec_facts(markdown, _root(config), page.file.src_uri)


# -- spec facts ----------------------------------------------------------------------------------------------
def fill_spec_facts(markdown: str, root: Path, where: str) -> str:
    """Replace each `{{ spec.Type.keyword }}` with that keyword's value in the generated unstable schema.

    A name the schema lacks fails the build, naming the page and every unknown fact at once."""
    if not SPEC_FACT.search(markdown):
        return markdown
    defs = json.loads((root / paths.SCHEMA_UNSTABLE).read_text(encoding="utf-8"))["$defs"]
    unknown = sorted({m.group(0) for m in SPEC_FACT.finditer(markdown) if m.group(2) not in defs.get(m.group(1), {})})
    if unknown:
        raise PluginError(f"{where}: not in {paths.SCHEMA_UNSTABLE}: {', '.join(unknown)}")
    return SPEC_FACT.sub(lambda m: str(defs[m.group(1)][m.group(2)]), markdown)
