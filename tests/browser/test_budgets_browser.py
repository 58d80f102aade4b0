"""Budgets and limits in a real browser (SPEC R-LIM-1, R-LIM-2, D-30), against the live
gateway: an admin sets a key's daily budget and its rate limits, the key's requests are
charged against the budget and counted against the limit, and the next request over the
limit is refused; a viewer reads the same page without a form. Screenshot:
var/test-artifacts/screens/."""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING

import openai
import pytest

from tests.browser.conftest import screenshot
from tests.browser.test_console_browser import _person, _sign_in

if TYPE_CHECKING:
    from playwright.sync_api import Page

    from tests.live.installation import Live

pytestmark = pytest.mark.live


def _rows(page: Page, table: str) -> list[str]:
    return [
        " ".join(row.inner_text().split()) for row in page.locator(f"table.{table} tbody tr").all()
    ]


def test_r_lim_2_an_admin_sets_a_budget_and_limits_and_sees_them_used(
    live: Live, page: Page, console_errors: list[str], tmp_path
) -> None:
    slug = f"budget-{uuid.uuid4().hex[:6]}"
    (tmp_path / "ws.yaml").write_text(f"workspaces:\n  - {{slug: {slug}, name: Budgeted}}\n")
    live.manage("apply", "-f", str(tmp_path / "ws.yaml"))
    key = live.new_key(slug, "metered")
    _sign_in(live, page, _person(live, "admin", slug), slug)
    page.get_by_role("link", name="Budgets").click()
    # the admin sets the key's daily budget with an alert, and a limit of 3 requests a minute
    budget = page.locator("form", has=page.get_by_role("button", name="Save budget"))
    budget.get_by_label("Key name").fill("metered")
    budget.get_by_label("Period").select_option("daily")
    budget.get_by_label("Limit (USD)").fill("5")
    budget.get_by_label("Alerts").fill("0.5")
    budget.get_by_role("button", name="Save budget").click()
    page.get_by_text("The daily budget of key metered created.").wait_for()
    limits = page.locator("form", has=page.get_by_role("button", name="Save limits"))
    limits.get_by_label("Key name").fill("metered")
    limits.get_by_label("Requests / min").fill("3")
    limits.get_by_role("button", name="Save limits").click()
    page.get_by_text("metered").first.wait_for()
    assert _rows(page, "limits") == ["key metered 0 / 3 — —"]
    # the key's requests: three admitted, the fourth refused by the limit
    client = openai.OpenAI(base_url=live.base_url, api_key=key, max_retries=0)
    deadline = time.monotonic() + 5
    while True:  # the gateway takes the new limit and budget from its next snapshot
        try:
            client.chat.completions.create(
                model="meta/llama-3.3-70b", messages=[{"role": "user", "content": "hi"}],
                max_tokens=8,
            )  # fmt: skip
        except openai.RateLimitError:
            break
        assert time.monotonic() < deadline, "the limit never refused a request"
    # the page shows the budget charged and the limit in use
    page.reload()
    budget_row = _rows(page, "budgets")[0]
    assert budget_row.startswith("key metered daily $5.00 $0.0"), budget_row
    assert "50 %: not yet" in budget_row
    assert _rows(page, "limits")[0].startswith("key metered 3 / 3 empty in ")
    screenshot(page, "budgets_and_limits")
    assert console_errors == []
