"""The browser infrastructure: Debian's Chromium runs the vendored htmx and uPlot under the
console's strict Content-Security-Policy, and a violation of it is caught (the console's
own pages are driven in test_console_browser.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tests.browser.conftest import watch_console

if TYPE_CHECKING:
    from playwright.sync_api import Page, Route


VENDOR = Path(__file__).resolve().parents[2] / "console" / "static" / "console" / "vendor"
ORIGIN = "http://console.test"  # answered by page.route below: no server, no network
STRICT_CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:"


PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>vendored</title>
<meta name="htmx-config" content='{"includeIndicatorStyles": false}'>
<link rel="stylesheet" href="/vendor/uPlot.min.css">
<script src="/vendor/htmx.min.js"></script>
<script src="/vendor/uPlot.iife.min.js"></script>
<script src="/chart.js" defer></script>
</head><body>
<div id="chart"></div>
<button hx-get="/fragment" hx-target="#out">load</button>
<div id="out">empty</div>
</body></html>"""

CHART_JS = """new uPlot(
  {width: 600, height: 240, series: [{}, {label: "requests", stroke: "#36c"}]},
  [[1, 2, 3, 4], [3, 1, 4, 2]],
  document.getElementById("chart"),
);"""

TYPES = {".js": "text/javascript", ".css": "text/css", ".html": "text/html"}


def serve(route: Route) -> None:
    """A tiny origin under a strict CSP: the test page, the vendored files, a fragment."""
    path = route.request.url.removeprefix(ORIGIN)
    if path.startswith("/vendor/") and (VENDOR / path.removeprefix("/vendor/")).is_file():
        file = VENDOR / path.removeprefix("/vendor/")
        body, kind = file.read_bytes(), TYPES[file.suffix]
    elif path == "/chart.js":
        body, kind = CHART_JS.encode(), TYPES[".js"]
    elif path == "/fragment":
        body, kind = b"<p id='swapped'>from the server</p>", TYPES[".html"]
    elif path == "/":
        body, kind = PAGE.encode(), TYPES[".html"]
    else:
        route.fulfill(status=404, body=b"")
        return
    route.fulfill(
        status=200, body=body, content_type=kind, headers={"Content-Security-Policy": STRICT_CSP}
    )


def test_vendored_htmx_and_uplot_run_under_a_strict_csp(
    page: Page, console_errors: list[str]
) -> None:
    page.route(f"{ORIGIN}/**", serve)
    page.goto(f"{ORIGIN}/")
    assert page.locator("#chart canvas").count() == 1  # uPlot drew its chart
    assert page.locator("#chart .u-legend").get_by_text("requests").is_visible()
    page.get_by_role("button", name="load").click()
    assert page.locator("#out #swapped").inner_text() == "from the server"  # htmx swapped
    assert console_errors == []


def test_a_csp_violation_is_reported(page: Page) -> None:
    """watch_console is not blind: an inline script under the strict CSP is refused."""
    errors = watch_console(page)
    page.route(
        f"{ORIGIN}/**",
        lambda route: route.fulfill(
            status=200,
            body=b"<!doctype html><script>document.title = 'ran'</script>",
            content_type="text/html",
            headers={"Content-Security-Policy": STRICT_CSP},
        ),
    )
    with page.expect_console_message(lambda message: "Content Security Policy" in message.text):
        page.goto(f"{ORIGIN}/")
    assert page.title() != "ran"
    assert any("Content Security Policy" in error for error in errors), errors
