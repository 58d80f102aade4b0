"""Browser tests: Playwright drives Debian's Chromium (`apt-get install -y chromium`), never
a browser of Playwright's own (no `playwright install`). Without Chromium these tests are
skipped with a one-line reason, except under CI=true, where they fail: CI never skips them.
After each test a full-page screenshot lands in var/test-artifacts/screens/<test name>.png.

The pages come from the suite's live gateway (the `live` / `fresh_live` fixtures of
tests/conftest.py): `page.goto(f"{live.gateway.url}/admin/login/")`."""

from __future__ import annotations

import os
import re
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, ConsoleMessage, Error, Page

HERE = Path(__file__).resolve().parent
SCREENS = HERE.parents[1] / "var" / "test-artifacts" / "screens"
NEED_CHROMIUM = "browser tests need Chromium: apt-get install -y chromium"
NEED_PLAYWRIGHT = "browser tests need the playwright package: make install"
# --disable-background-networking and the two after it keep Chromium from calling home:
# with no network here, those connections are refused and the launch goes wrong.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Everything in tests/browser is marked `browser` (`-m "not browser"` leaves it out)."""
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.browser)


def find_chromium() -> str | None:
    found = shutil.which("chromium")
    if found:
        return found
    return "/usr/bin/chromium" if os.access("/usr/bin/chromium", os.X_OK) else None


def unavailable(reason: str) -> NoReturn:
    """Skip with the reason; under CI=true fail with it instead."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One headless Debian Chromium per test module. Not per session: while Playwright's
    sync API runs, the main thread has a running event loop, and every later test that
    calls `asyncio.run` (the SDK clients', the translation tests) would fail."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable(NEED_PLAYWRIGHT)
    executable = find_chromium()
    if executable is None:
        unavailable(NEED_CHROMIUM)
    playwright = sync_playwright().start()
    try:
        chromium = playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield chromium
        finally:
            chromium.close()
    finally:
        playwright.stop()


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A fresh context (1280x900) and page per test, 10 s default timeout; a full-page
    screenshot of where the test left it, then the context closed."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(10_000)
    try:
        yield tab
    finally:
        try:
            SCREENS.mkdir(parents=True, exist_ok=True)
            name = re.sub(r"[^\w.\[\]-]+", "_", request.node.name)
            tab.screenshot(path=SCREENS / f"{name}.png", full_page=True)
        except Exception as exc:  # a closed or crashed page must not hide the test's result
            warnings.warn(f"no screenshot of {request.node.name}: {exc}", stacklevel=1)
        finally:
            context.close()


def screenshot(tab: Page, name: str) -> None:
    """A full-page screenshot of a step a test wants seen (the `page` fixture takes only
    the last page): var/test-artifacts/screens/<name>.png."""
    SCREENS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=SCREENS / f"{name}.png", full_page=True)


def watch_console(tab: Page) -> list[str]:
    """A list that fills, from now on, with the page's console errors (CSP violations and
    failed loads among them: Chromium reports both there) and its uncaught exceptions. The
    one load left out is the /favicon.ico Chromium asks for on its own, not the page."""
    errors: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        where = message.location
        if message.type == "error" and not where["url"].endswith("/favicon.ico"):
            errors.append(f"console: {message.text} ({where['url']}:{where['lineNumber']})")

    def on_page_error(error: Error) -> None:
        errors.append(f"pageerror: {error.message}")

    tab.on("console", on_console)
    tab.on("pageerror", on_page_error)
    return errors


@pytest.fixture
def console_errors(page: Page) -> list[str]:
    """The `page` fixture's console errors and uncaught exceptions, collected for the whole
    test: `assert console_errors == []` once the page has done its work."""
    return watch_console(page)
