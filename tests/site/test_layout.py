"""Layout in a real browser, on a phone and on a desktop: tables readable at 390 px, identifiers whole at
1,400 px, diagram labels large enough to read. Screenshots of each view go to build/screenshots/.

Each test fails on a console error or on any request that leaves the loopback host (see `browser_page`).
"""

from __future__ import annotations

import pytest

from .conftest import SCREENSHOTS

pytestmark = pytest.mark.slow

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1400, "height": 900}
# The retry table, the page of the one keyed method, a type page with long type names, and the conformance pages.
PAGES = {
    "retry-classes": "reference/retry-classes/",
    "session-prompt": "reference/methods/session-prompt/",
    "types-content": "reference/types/content/",
    "conformance-traces": "reference/conformance-traces/",
    "testing-your-agent": "testing-your-agent/",
}
# Columns of free text: at 390 px each such cell keeps at least this width.
TEXT_COLUMNS = (
    "Description",
    "What a repeat does",
    "Why",
    "Rule",
    "Meaning",
    "What it means",
    "What the Client does",
    "What it checks",
    "What it is",
    "What your Agent does for it",
)
MIN_TEXT_WIDTH = 120
MIN_LABEL_PX = 12

# Page-level and per-table sideways overflow, in CSS pixels (0 when nothing scrolls sideways).
_OVERFLOW = """() => {
  const page = document.documentElement.scrollWidth - document.documentElement.clientWidth;
  const tables = [...document.querySelectorAll('article .md-typeset__scrollwrap, article table')]
    .map(el => el.scrollWidth - el.clientWidth);
  return Math.max(page, 0, ...tables);
}"""

# Widths of the cells in free-text columns; a cell names its column in data-label (set by table-labels.js).
_TEXT_CELLS = """(columns) => [...document.querySelectorAll('article table tbody td')]
  .filter(td => columns.includes(td.getAttribute('data-label') || ''))
  .filter(td => td.textContent.trim() !== '')
  .map(td => [td.getAttribute('data-label'), Math.round(td.getBoundingClientRect().width)])"""

# Every place where a `code` element in a table breaks its line between two letters or digits.
_BROKEN_WORDS = """() => {
  const found = [];
  for (const code of document.querySelectorAll('article table code')) {
    const node = code.firstChild;
    if (!node || node.nodeType !== Node.TEXT_NODE || code.getClientRects().length < 2) continue;
    const text = node.textContent;
    const range = document.createRange();
    let lastTop = null;
    for (let i = 0; i < text.length; i++) {
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      const rect = range.getBoundingClientRect();
      if (rect.width === 0) continue;
      const inWord = /[A-Za-z0-9]/.test(text[i - 1] || '') && /[A-Za-z0-9]/.test(text[i]);
      if (lastTop !== null && rect.top > lastTop + 2 && inWord) {
        found.push(text.slice(0, i) + '|' + text.slice(i));
      }
      lastTop = rect.top;
    }
  }
  return found;
}"""

# The theme draws each diagram in a closed shadow root; opening it (before any page script runs) lets the test
# measure what the reader sees. Nothing else about the page changes.
_OPEN_SHADOWS = """(() => {
  const attach = Element.prototype.attachShadow;
  Element.prototype.attachShadow = function (init) { return attach.call(this, { ...init, mode: 'open' }); };
})();"""

# The rendered size of every label of every diagram: its font size times the scale the SVG is drawn at.
_LABEL_SIZES = """() => [...document.querySelectorAll('div.mermaid')]
  .map(host => host.shadowRoot && host.shadowRoot.querySelector('svg')).filter(Boolean).flatMap(svg => {
  const box = svg.viewBox.baseVal;
  const scale = box && box.width ? svg.getBoundingClientRect().width / box.width : 1;
  return [...svg.querySelectorAll('.nodeLabel, .edgeLabel, text')]
    .filter(el => el.textContent.trim() !== '')
    .map(el => parseFloat(getComputedStyle(el).fontSize) * scale);
})"""


def _open(page, site_url: str, path: str, viewport: dict[str, int]) -> None:
    page.set_viewport_size(viewport)
    page.goto(f"{site_url}/{path}")
    page.wait_for_load_state("networkidle")


def _shoot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    target = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(target), full_page=True)
    assert target.stat().st_size > 10_000


@pytest.mark.parametrize("name", sorted(PAGES))
def test_phone_tables_do_not_scroll_sideways_and_keep_text_readable(site_url, browser_page, name):
    page, _ = browser_page
    _open(page, site_url, PAGES[name], PHONE)
    page.wait_for_function("document.querySelector('article table td[data-label]') !== null")
    assert page.evaluate(_OVERFLOW) <= 1
    cells = page.evaluate(_TEXT_CELLS, list(TEXT_COLUMNS))
    assert cells, "the page has no free-text column to measure"
    narrow = [(column, width) for column, width in cells if width < MIN_TEXT_WIDTH]
    assert narrow == []
    _shoot(page, f"phone-{name}")


@pytest.mark.parametrize("name", [*sorted(PAGES), "sdk-tables"])
def test_desktop_identifiers_in_tables_never_break_inside_a_word(site_url, browser_page, name):
    page, _ = browser_page
    _open(page, site_url, PAGES.get(name, f"reference/{name}/"), DESKTOP)
    assert page.locator("article table code").count() > 0
    assert page.evaluate(_BROKEN_WORDS) == []
    _shoot(page, f"desktop-{name}")


def test_flowchart_labels_are_at_least_12px(site_url, browser_page):
    page, _ = browser_page
    page.add_init_script(_OPEN_SHADOWS)
    _open(page, site_url, PAGES["retry-classes"], DESKTOP)
    page.wait_for_function(
        "[...document.querySelectorAll('div.mermaid')].some(d => d.shadowRoot && d.shadowRoot.querySelector('svg'))"
    )
    sizes = page.evaluate(_LABEL_SIZES)
    assert len(sizes) > 10
    assert min(sizes) >= MIN_LABEL_PX, sorted(sizes)[:5]
    # Drawn at full size, the chart still fits the page at desktop width: nothing is cut off or scrolled to.
    host, drawn = page.evaluate(
        "() => { const d = document.querySelector('div.mermaid');"
        " return [d.clientWidth, d.shadowRoot.querySelector('svg').getBoundingClientRect().width]; }"
    )
    assert drawn <= host
    box = page.locator("div.mermaid").first.bounding_box()
    assert box is not None
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    # A full-page capture clipped to the chart, so that the fixed header does not cover it.
    top = box["y"] + page.evaluate("window.scrollY")
    clip = {"x": box["x"], "y": top, "width": box["width"], "height": box["height"]}
    page.screenshot(path=str(SCREENSHOTS / "flowchart.png"), full_page=True, clip=clip)


# Every hand-written or generated page that draws a diagram.
DIAGRAM_PAGES = {
    "keyed-prompts": "keyed-prompts/",
    "keyed-prompts-helpers": "keyed-prompts-helpers/",
    "architecture": "architecture/",
    "retry-classes": PAGES["retry-classes"],
}


@pytest.mark.parametrize("name", sorted(DIAGRAM_PAGES))
def test_phone_diagrams_keep_readable_labels_and_scroll_on_their_own(site_url, browser_page, name):
    """At 390 px a diagram is drawn at its own size and scrolls sideways inside its box; the page does not."""
    page, _ = browser_page
    page.add_init_script(_OPEN_SHADOWS)
    _open(page, site_url, DIAGRAM_PAGES[name], PHONE)
    page.wait_for_function(
        "[...document.querySelectorAll('div.mermaid')].length > 0 && [...document.querySelectorAll('div.mermaid')]"
        ".every(d => d.shadowRoot && d.shadowRoot.querySelector('svg'))"
    )
    sizes = page.evaluate(_LABEL_SIZES)
    assert sizes, "no diagram labels drawn"
    assert min(sizes) >= MIN_LABEL_PX, sorted(sizes)[:5]
    assert page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0
    _shoot(page, f"phone-diagrams-{name}")


# The pages whose diagrams are drawn for the content column (the retry flowchart, whose page gives it the whole
# width, is checked above); at 1,280 px each must be shown whole, labels readable.
COLUMN_DIAGRAM_PAGES = {
    "keyed-prompts": "keyed-prompts/",
    "keyed-prompts-helpers": "keyed-prompts-helpers/",
    "architecture": "architecture/",
}
_DRAWN_AND_BOX = """() => [...document.querySelectorAll('div.mermaid')].map(host => {
  const svg = host.shadowRoot.querySelector('svg');
  return [svg.getBoundingClientRect().width, host.clientWidth];
})"""


@pytest.mark.parametrize("name", sorted(COLUMN_DIAGRAM_PAGES))
def test_desktop_diagrams_fit_the_column_with_readable_labels(site_url, browser_page, name):
    """At 1,280 px nothing of a diagram is cut off or hidden to the right (a sequence diagram's last participant
    included), no label is drawn under 12 px, and the key states' labels keep apart (a flowchart's layout)."""
    page, _ = browser_page
    page.add_init_script(_OPEN_SHADOWS)
    _open(page, site_url, COLUMN_DIAGRAM_PAGES[name], {"width": 1280, "height": 900})
    page.wait_for_function(
        "[...document.querySelectorAll('div.mermaid')].length > 0 && [...document.querySelectorAll('div.mermaid')]"
        ".every(d => d.shadowRoot && d.shadowRoot.querySelector('svg'))"
    )
    for drawn, box in page.evaluate(_DRAWN_AND_BOX):
        assert drawn <= box + 0.5, (drawn, box)
    sizes = page.evaluate(_LABEL_SIZES)
    assert min(sizes) >= MIN_LABEL_PX, sorted(sizes)[:5]
    _shoot(page, f"desktop-diagrams-{name}")


def test_the_retry_classes_page_links_every_section_on_desktop(site_url, browser_page):
    """The page gives its tables the whole width (no table of contents beside them), so its first lines link
    every section, where a desktop reader sees them."""
    page, _ = browser_page
    _open(page, site_url, PAGES["retry-classes"], {"width": 1280, "height": 900})
    sections = page.eval_on_selector_all("article h2[id]", "hs => hs.map(h => h.id)")
    # The theme makes every link absolute: a link to a section is one to this page with a fragment.
    links = page.eval_on_selector_all(
        "article p a[href*='#']",
        "as => as.filter(a => a.pathname === location.pathname)"
        ".map(a => [a.hash.slice(1), a.getBoundingClientRect().top])",
    )
    linked = {target for target, top in links if top < 900}  # on the first screen
    assert sections and set(sections) <= linked, set(sections) - linked
