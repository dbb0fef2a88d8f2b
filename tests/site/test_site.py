"""The docs site in a real browser: the retry table, the method pages, search, dark mode, diagrams, screenshots.

Each test fails on a console error or on any request that leaves the loopback host (see `browser_page`).
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from generator import paths

from .conftest import ROOT, SCREENSHOTS

pytestmark = pytest.mark.slow

POLICY = json.loads((ROOT / paths.POLICY).read_text(encoding="utf-8"))
ENTRIES = POLICY["methods"]


def _rows_of_table(page: object) -> list[tuple[str, str]]:
    """(method page path, class) for every row of the retry table that links to a method page."""
    return page.eval_on_selector_all(  # type: ignore[attr-defined]
        "article table tbody tr",
        """rows => rows
            .map(row => [row.querySelector('td:first-child a[href*="methods/"]'), row.querySelector('.retry-badge')])
            .filter(([link, badge]) => link && badge)
            .map(([link, badge]) => [new URL(link.href).pathname, badge.textContent.trim()])""",
    )


def test_retry_table_has_one_row_per_policy_entry(site_url, browser_page):
    page, _ = browser_page
    page.goto(f"{site_url}/reference/retry-classes/")
    rows = _rows_of_table(page)
    expected = sorted((f"/{e['page']}", e["class"]) for e in ENTRIES)
    # Two tables list every method: "May I resend this?" at the top and the grouped one at the end.
    assert sorted(tuple(r) for r in rows) == sorted(expected * 2)
    assert len(rows) == 2 * len(ENTRIES) == 66


def test_may_i_resend_table_answers_with_the_decision_for_a_lost_answer(site_url, browser_page):
    page, _ = browser_page
    page.goto(f"{site_url}/reference/retry-classes/#may-i-resend")
    rows = page.eval_on_selector(
        "#may-i-resend",
        """h => { let t = h.nextElementSibling; while (t && !t.querySelector('table')
                  && t.tagName !== 'TABLE') t = t.nextElementSibling;
                  const table = t.tagName === 'TABLE' ? t : t.querySelector('table');
                  return [...table.querySelectorAll('tbody tr')]
                      .map(r => [...r.cells].map(c => c.innerText.trim())) }""",
    )
    by_method = {}
    for method, klass, decision in rows:
        by_method.setdefault(method, []).append((klass, decision))
    assert len(rows) == len(ENTRIES)
    assert by_method["session/prompt"] == [("keyed", "resend only with the same key")]
    assert by_method["session/new"] == [("duplicating", "resend only if the caller opts in")]


def test_retry_table_is_grouped_by_direction(site_url, browser_page):
    page, _ = browser_page
    page.goto(f"{site_url}/reference/retry-classes/")
    headings = [h.strip().rstrip("¶").strip() for h in page.locator("article h3").all_inner_texts()]
    for group in ("Client → Agent requests", "Agent → Client requests", "Notifications"):
        assert group in headings


def test_each_method_page_shows_its_class(site_url, browser_page):
    page, _ = browser_page
    for entry in ENTRIES:
        page.goto(f"{site_url}/{entry['page']}")
        title = page.locator("article h1").inner_text()
        assert entry["method"] in title, entry
        # the first badge on the page is the one in the facts table
        facts = page.locator("article table").first
        assert facts.locator(".retry-badge").first.inner_text().strip() == entry["class"], entry["method"]
        assert page.locator("article h2", has_text="Worked example").count() == 1, entry["method"]


def test_session_prompt_example_retries_with_the_same_key(site_url, browser_page):
    page, _ = browser_page
    page.goto(f"{site_url}/reference/methods/session-prompt/")
    blocks = [json.loads(text) for text in page.locator("article .highlight code").all_text_contents()]
    requests = [b for b in blocks if b.get("method") == "session/prompt"]
    responses = [b for b in blocks if "result" in b]
    assert len(requests) == 2
    first, retry = requests
    assert first["params"]["idempotencyKey"] == retry["params"]["idempotencyKey"]
    assert first["id"] != retry["id"]
    answers = {r["id"]: r["result"]["messageId"] for r in responses}
    assert answers[retry["id"]] == answers[first["id"]]
    assert page.locator(".example-lost").count() == 1
    edit = page.locator('a[rel="edit"]').get_attribute("href")
    assert edit is not None and edit.endswith("/spec/methods/session-prompt.yaml")


def test_search_for_idempotency_key_finds_the_key_page(site_url, browser_page):
    page, _ = browser_page
    page.goto(f"{site_url}/")
    search = page.locator("input.md-search__input")
    search.click()
    search.press_sequentially("idempotencyKey")
    hit = page.locator(".md-search-result__list a[href*='/idempotency-key/']").first
    hit.wait_for(state="visible")
    assert "IdempotencyKey" in hit.inner_text()
    # the key page is the best match, so it comes first
    first = page.locator(".md-search-result__list a").first.get_attribute("href") or ""
    assert "/idempotency-key/" in first


def test_dark_mode_toggle(site_url, browser_page):
    page, _ = browser_page
    page.goto(f"{site_url}/")
    scheme = "document.body.getAttribute('data-md-color-scheme')"
    background = "getComputedStyle(document.body).backgroundColor"
    assert page.evaluate(scheme) == "default"
    light = page.evaluate(background)
    page.locator("form[data-md-component='palette'] label:not([hidden])").first.click()
    page.wait_for_function(f"{scheme} === 'slate'")
    assert page.evaluate(background) != light
    page.locator("form[data-md-component='palette'] label:not([hidden])").first.click()
    page.wait_for_function(f"{scheme} === 'default'")


@pytest.mark.parametrize(
    ("path", "diagrams"), [("keyed-prompts/", 2), ("keyed-prompts-helpers/", 2), ("reference/retry-classes/", 1)]
)
def test_mermaid_diagrams_render_offline(site_url, browser_page, path, diagrams):
    page, _ = browser_page
    page.goto(f"{site_url}/{path}")
    # The theme replaces each <pre class="mermaid"> source with a rendered <div class="mermaid">.
    page.wait_for_function(f"document.querySelectorAll('div.mermaid').length === {diagrams}")
    heights = page.eval_on_selector_all("div.mermaid", "els => els.map(e => e.getBoundingClientRect().height)")
    assert all(h > 100 for h in heights), heights


@pytest.mark.parametrize(
    ("name", "path", "scheme"),
    [
        ("home", "", "default"),
        ("retry-classes", "reference/retry-classes/", "default"),
        ("session-prompt", "reference/methods/session-prompt/", "default"),
        ("session-prompt-dark", "reference/methods/session-prompt/", "slate"),
        ("keyed-prompts", "keyed-prompts/", "default"),
    ],
)
def test_screenshots(site_url, browser_page, name, path, scheme):
    page, _ = browser_page
    page.goto(f"{site_url}/{path}")
    current = "document.body.getAttribute('data-md-color-scheme')"
    if page.evaluate(current) != scheme:
        page.locator("form[data-md-component='palette'] label:not([hidden])").first.click()
        page.wait_for_function(f"{current} === '{scheme}'")
    page.wait_for_load_state("networkidle")
    if path == "keyed-prompts/":
        page.wait_for_function("document.querySelectorAll('div.mermaid').length === 2")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    target = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(target), full_page=True)
    assert target.stat().st_size > 10_000


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if value and ((tag == "a" and key == "href") or (tag in ("script", "img") and key == "src")):
                self.links.append(value)
            if value and tag == "link" and key == "href":
                self.links.append(value)


def test_every_internal_link_resolves(built_site: Path):
    broken = []
    for html in sorted(built_site.rglob("*.html")):
        parser = _Links()
        parser.feed(html.read_text(encoding="utf-8"))
        base = "/" + html.relative_to(built_site).as_posix()
        for link in parser.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or not parts.path:
                continue
            target = urlsplit(urljoin(base, link)).path
            path = built_site / target.lstrip("/")
            if not (path.is_file() or (path / "index.html").is_file()):
                broken.append(f"{base}: {link}")
    assert broken == []


def test_generated_pages_carry_no_error_text(built_site: Path):
    pattern = re.compile(r"Traceback|Undefined|jinja2\.|error\[", re.IGNORECASE)
    for html in sorted((built_site / "reference").rglob("*.html")):
        text = re.sub(r"<[^>]+>", " ", html.read_text(encoding="utf-8"))
        assert not pattern.search(text), html
