"""Fixtures for the browser tests: build the site once, serve it on loopback, drive Debian's Chromium headless.

The browser is /usr/bin/chromium, installed by .ci/setup.d/20-chromium.sh; playwright only drives it and never
downloads one. Without it the tests are skipped on a developer's machine and fail in CI (CI=true).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "build" / "site"
SCREENSHOTS = ROOT / "build" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
# Flags this machine needs: no sandbox as root, and no background traffic to services the closed network refuses.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
EDIT_BASE = "https://code.example/acp-v2/edit/main/"
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "[::1]", "::1"}


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"browser tests cannot run in CI: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def built_site() -> Path:
    """`mkdocs build --strict` into build/site, once per test session; any warning fails the build."""
    # With an edit base set, as a published site has it, so the pages' edit links can be checked.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "ACP_DOCS_EDIT_BASE": EDIT_BASE}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--clean"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, f"mkdocs build failed:\n{done.stdout}\n{done.stderr}"
    assert "WARNING" not in done.stderr, done.stderr
    return SITE


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="session")
def site_url(built_site: Path) -> Iterator[str]:
    """The built site, served by a thread on a free loopback port."""
    handler = functools.partial(_QuietHandler, directory=str(built_site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="site-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# Package scope: Playwright's sync API keeps an event loop running in this thread until it stops, which would
# break tests that call asyncio.run() later in the session.
@pytest.fixture(scope="package")
def browser_context(site_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """One headless Chromium with a fresh profile for the site tests."""
    if not CHROMIUM.is_file():
        _unavailable(f"{CHROMIUM} is missing; run .ci/setup.d/20-chromium.sh")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (pip install -e '.[dev]')")
    with sync_playwright() as driver:
        context = driver.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 900},
            color_scheme="light",
        )
        try:
            yield context
        finally:
            context.close()


@dataclass
class Problems:
    """What went wrong in the browser while a test ran."""

    console: list[str] = field(default_factory=list)
    outside: list[str] = field(default_factory=list)


@pytest.fixture
def browser_page(browser_context: object) -> Iterator[tuple[object, Problems]]:
    """A fresh tab that records console errors, page errors and any request that leaves the loopback host."""
    page = browser_context.new_page()  # type: ignore[attr-defined]
    problems = Problems()
    page.on("console", lambda msg: problems.console.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: problems.console.append(f"uncaught: {exc}"))

    def watch(request: object) -> None:
        host = urlsplit(request.url).hostname or ""  # type: ignore[attr-defined]
        if request.url.startswith(("http:", "https:")) and host not in LOOPBACK_HOSTS:  # type: ignore[attr-defined]
            problems.outside.append(request.url)  # type: ignore[attr-defined]

    page.on("request", watch)
    try:
        yield page, problems
    finally:
        page.close()
    assert problems.console == [], f"console errors: {problems.console}"
    assert problems.outside == [], f"requests left the machine: {problems.outside}"
