"""The live metrics page in a real browser (SPEC R-OBS-2), against the live gateway: after
a few requests through the gateway, a member opens /console/acme/live/ and sees a uPlot
chart per metric and the totals table, which live.js refreshes from the JSON without
reloading the page, with no script error under the console's CSP. Screenshots:
var/test-artifacts/screens/."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import openai
import pytest

from tests.waiting import wait_for

if TYPE_CHECKING:
    from playwright.sync_api import Page

    from tests.live.installation import Live

pytestmark = pytest.mark.live
PASSWORD = "browser-test-password"
MODEL = "meta/llama-3.3-70b"
REFRESH_MS = 10_000  # console/live_views.REFRESH_S


def _person(live: Live, role: str) -> str:
    name = f"{role}-{uuid.uuid4().hex[:6]}"
    live.manage("createuser", name, "--workspace", "acme", "--role", role,
                env_extra={"SWITCHYARD_USER_PASSWORD": PASSWORD})  # fmt: skip
    return name


def _sign_in(live: Live, page: Page, username: str) -> None:
    page.goto(f"{live.gateway.url}/console/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/console/acme/requests/")


def test_r_obs_2_the_live_page_draws_its_charts_and_refreshes_in_place(live, page, console_errors):
    from playwright.sync_api import expect  # here: without playwright the fixtures skip

    # given: requests through the gateway, one of them streamed (time to first token)
    client = openai.OpenAI(base_url=live.base_url, api_key=live.keys["acme"], max_retries=0)
    for _ in range(3):
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    for _chunk in client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=True
    ):
        pass
    _sign_in(live, page, _person(live, "member"))
    # when
    page.goto(f"{live.gateway.url}/console/acme/live/?window=15m&by=provider")

    def rows_shown() -> int:  # the trace writer flushes in 50 ms
        shown = page.locator("#live-rows td.num").count()
        if not shown:
            page.reload()
        return shown

    wait_for(rows_shown, "the requests to reach the live page", 5, interval_s=0.2)
    # then: uPlot drew every chart, a line per provider named in the legend
    charts = page.locator(".chart[data-metric]")
    assert charts.count() == 7
    expect(page.locator(".chart canvas")).to_have_count(7)  # one canvas a chart: uPlot drew
    assert page.locator("#live-status").inner_text().startswith("Updated ")
    provider = page.locator("#live-rows td").first.inner_text()
    for chart in charts.all():
        assert chart.locator("canvas").count() == 1
        assert chart.locator(".u-legend").get_by_text(provider, exact=True).is_visible()
    assert page.locator("#live-capped").is_hidden()
    # and a new request shows up on the next refresh, without reloading the page
    shown = page.locator("#live-overall td").first  # all requests of the window
    before = int(shown.inner_text())
    page.evaluate("window.liveTestMark = 'same page'")
    client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "again"}])
    # (expect, not wait_for_function: the page's CSP refuses the eval that one needs)
    expect(shown).not_to_have_text(str(before), timeout=REFRESH_MS + 10_000)
    assert int(shown.inner_text()) > before
    assert page.evaluate("window.liveTestMark") == "same page"
    assert page.locator(".chart canvas").count() == 7
    assert console_errors == []
