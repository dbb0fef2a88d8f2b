"""What a reader finds first: the resend answer on the home page's first screen, search previews without diagram
source, and the generated sections of the navigation in the order of their shown titles."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from .test_layout import PHONE, _open

pytestmark = pytest.mark.slow


def test_phone_home_first_screen_links_to_the_resend_table(site_url, browser_page):
    page, _ = browser_page
    _open(page, "" if site_url.endswith("/") else site_url, "", PHONE)
    link = page.locator("article a[href*='retry-classes/#may-i-resend']").first
    box = link.bounding_box()
    assert box is not None, "no link to the resend table on the home page"
    assert box["y"] + box["height"] <= PHONE["height"], f"the link is below the first screen: {box}"
    link.click()
    page.wait_for_load_state("networkidle")
    assert page.url.endswith("/reference/retry-classes/#may-i-resend")


def test_search_index_holds_no_diagram_source(built_site: Path):
    docs = json.loads((built_site / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]
    leaked = [d["location"] for d in docs if re.search(r"(--&gt;|-->|\bflowchart (TD|LR)\b)", d["text"])]
    assert leaked == []


class _NavLinks(HTMLParser):
    """(href, text) of every link of the primary navigation, in document order."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "a" and "md-nav__link" in (found.get("class") or "").split():
            self._href, self._text = found.get("href") or "", ""

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href is not None:
            self.links.append((self._href, " ".join(self._text.split())))
            self._href = None


@pytest.mark.parametrize("folder", ["methods", "types"])
def test_generated_sections_are_sorted_by_shown_title(built_site: Path, folder: str):
    nav = _NavLinks()
    nav.feed((built_site / "reference" / "retry-classes" / "index.html").read_text(encoding="utf-8"))
    seen: dict[str, str] = {}
    for href, text in nav.links:  # the primary navigation comes first; the table of contents repeats nothing here
        if f"/{folder}/" in href and not href.rstrip("/").endswith(f"/{folder}") and href not in seen:
            seen[href] = text
    titles = list(seen.values())
    assert len(titles) > 10, nav.links
    assert titles == sorted(titles, key=str.casefold)


# The pages that answer "may I send this again?": the retry table, and the keyed-prompt page for what the Agent's
# error answers mean. A reader's words for that question must find one of them first.
RETRY_DECISION_PAGES = ("/reference/retry-classes/", "/keyed-prompts/")


@pytest.mark.parametrize("query", ["resend", "retry", "may I resend", "-32602", "-32800"])
def test_search_ranks_a_retry_decision_page_first(site_url, browser_page, query):
    page, _ = browser_page
    page.goto(f"{site_url}/")
    page.wait_for_load_state("networkidle")
    search = page.locator("input.md-search__input")
    search.click()
    search.press_sequentially(query)
    page.locator(".md-search-result__list > li > a").first.wait_for(state="visible")
    # Results are redrawn as each letter arrives: read the list once it has stopped changing.
    links = ".md-search-result__list > li > a"
    seen, href = None, ""
    for _ in range(80):
        now = page.locator(links).evaluate_all("els => els.map(e => e.getAttribute('href'))")
        if now and now == seen:
            href = now[0]
            break
        seen = now
        page.wait_for_timeout(250)
    assert any(path in href for path in RETRY_DECISION_PAGES), f"{query!r} ranks {href} first"
    assert search.input_value() == query  # the reader's text is left as typed


@pytest.mark.parametrize("width", [390, 1280])
def test_no_suggestion_is_drawn_over_a_typed_error_code(site_url, browser_page, width):
    """The search reads -32602 as 32602; the theme's grey completion, built from what it reads, would be drawn over
    the typed text. It is left empty then, and still offered for an ordinary word."""
    page, _ = browser_page
    page.set_viewport_size({"width": width, "height": 800})
    page.goto(f"{site_url}/")
    page.wait_for_load_state("networkidle")
    if width < 960:  # on a phone the field opens from the header's search button
        page.locator("label.md-header__button[for='__search']").click()
    search = page.locator("input.md-search__input")
    suggest = page.locator(".md-search__suggest")
    search.click()
    search.press_sequentially("idempot")
    page.wait_for_function("document.querySelector('.md-search__suggest').textContent.startsWith('idempot')")
    search.fill("")
    search.press_sequentially("-32602")
    page.locator(".md-search-result__list > li > a").first.wait_for(state="visible")
    page.wait_for_timeout(500)  # the theme draws its completion after the results
    assert suggest.text_content() == ""
    assert search.input_value() == "-32602"
