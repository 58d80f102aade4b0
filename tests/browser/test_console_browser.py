"""The console in a real browser (SPEC R-OBS-1, R-BEY-1, D-30), against the live gateway:
sign in; create a key and see its secret once; a viewer has no edit button and its POST
is refused; find a request by filter and open its trace; edit the policy, watch the
preview, and see the next request routed differently. Every page runs with no script
error under the console's CSP. Screenshots: var/test-artifacts/screens/."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import httpx
import openai
import pytest

from tests.waiting import wait_for

if TYPE_CHECKING:
    from playwright.sync_api import Page

    from tests.live.installation import Live

pytestmark = pytest.mark.live
PASSWORD = "browser-test-password"


def _person(live: Live, role: str, workspace: str = "acme") -> str:
    name = f"{role}-{uuid.uuid4().hex[:6]}"
    live.manage("createuser", name, "--workspace", workspace, "--role", role,
                env_extra={"SWITCHYARD_USER_PASSWORD": PASSWORD})  # fmt: skip
    return name


def _sign_in(live: Live, page: Page, username: str, workspace: str = "acme") -> None:
    page.goto(f"{live.gateway.url}/console/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"**/console/{workspace}/requests/")


def test_d_30_sign_in_lands_on_the_workspace_request_log(live, page, console_errors):
    _sign_in(live, page, _person(live, "viewer"))
    assert page.get_by_role("heading", name="Requests").is_visible()
    assert page.locator("header nav a[aria-current=page]").inner_text() == "Requests"
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/console/sign-in/")
    assert console_errors == []


def test_r_key_1_a_new_key_is_shown_once(live, page, console_errors):
    _sign_in(live, page, _person(live, "admin"))
    page.get_by_role("link", name="API keys").click()
    name = f"browser-{uuid.uuid4().hex[:6]}"
    page.get_by_label("Name").fill(name)
    page.get_by_role("button", name="Create key").click()
    secret = page.locator("#new-key").inner_text()
    assert secret.startswith("sk-sy-")
    # the secret works, and the page that showed it is the only one that ever does
    live.wait_for_key(secret)
    page.goto(f"{live.gateway.url}/console/acme/keys/")
    assert page.get_by_role("cell", name=name, exact=True).is_visible()
    assert secret not in page.content()
    assert console_errors == []


def test_d_30_a_viewer_has_no_edit_button_and_its_post_is_refused(live, page, console_errors):
    _sign_in(live, page, _person(live, "viewer"))
    page.goto(f"{live.gateway.url}/console/acme/keys/")
    assert page.get_by_role("button", name="Create key").count() == 0
    assert page.get_by_role("button", name="Revoke").count() == 0
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    refused = page.request.post(
        f"{live.gateway.url}/console/acme/keys/new/", form={"name": "by-viewer"},
        headers={"X-CSRFToken": token, "Referer": f"{live.gateway.url}/console/acme/keys/"},
    )  # fmt: skip
    assert refused.status == 403
    page.reload()
    assert page.get_by_role("cell", name="by-viewer", exact=True).count() == 0
    assert console_errors == []


def test_r_obs_1_a_request_found_by_filter_opens_on_its_trace(live, page, console_errors):
    name = f"finder-{uuid.uuid4().hex[:6]}"
    key = live.new_key("acme", name)
    client = openai.OpenAI(base_url=live.base_url, api_key=key, max_retries=0)
    answer = client.chat.completions.with_raw_response.create(
        model="meta/llama-3.3-70b", messages=[{"role": "user", "content": "hi"}]
    )
    trace_id = answer.headers["x-switchyard-trace-id"]
    _sign_in(live, page, _person(live, "member"))
    page.get_by_label("Key").fill(name)

    def found() -> bool:  # the trace writer flushes every 50 ms here
        # One filter request out at a time, and none left out before the click: a late
        # answer's swap and pushState would cancel the click's navigation to the trace.
        if page.locator("form.filters.htmx-request").count():
            return False
        if f"key={name}" in page.url and page.locator("table.log tbody a").count() == 1:
            return True
        page.get_by_label("Key").press("Enter")
        return False

    wait_for(found, "the request to reach the log, found by its key", 5, interval_s=0.2)
    assert "✓" in page.locator("td.chain").inner_text()
    page.locator("table.log tbody a").click()
    page.wait_for_url(f"**/console/acme/requests/{trace_id}/")
    assert page.locator("p.reason").first.inner_text().startswith("Routed")
    assert page.get_by_role("heading", name="Attempts").is_visible()
    assert page.locator(".timeline li.ok").count() == 1
    assert page.locator("table.candidates tr.chosen").count() == 1
    assert console_errors == []


def test_r_pol_1_a_policy_edited_in_the_console_routes_the_next_request(
    live, page, console_errors, tmp_path
):
    # a workspace of its own (its policy must not reach other tests), priced: cheap first
    slug = f"policy-{uuid.uuid4().hex[:6]}"
    config = tmp_path / "workspace.yaml"
    config.write_text(f"workspaces:\n  - {{slug: {slug}, policy: {{routing_mode: price}}}}\n")
    live.manage("apply", "-f", str(config))
    key = live.new_key(slug, "policy-bot")
    client = openai.OpenAI(base_url=live.base_url, api_key=key, max_retries=0)
    body = {"model": "meta/llama-3.3-70b", "messages": [{"role": "user", "content": "hi"}]}

    def provider() -> str:
        answer = client.chat.completions.create(**body)
        return answer.model_extra["switchyard"]["provider"]

    def denied() -> bool:
        explained = httpx.post(f"{live.base_url}/routing/explain", json=body,
                               headers={"Authorization": f"Bearer {key}"}).json()  # fmt: skip
        rejected = {r["endpoint"]: r["reason"] for r in explained["decisions"][0]["rejected"]}
        return rejected.get("cheap-llama") == "provider_denied"

    assert provider() == "cheap"
    _sign_in(live, page, _person(live, "owner", slug), slug)
    page.get_by_role("link", name="Policy").click()
    page.locator("input[name=provider_deny]").fill("cheap")
    page.locator("input[name=provider_deny]").press("Tab")  # a change: htmx asks the preview
    preview = page.locator("#preview")
    preview.get_by_text("cheap-llama — provider_denied").wait_for()
    assert "1 of 2 endpoints of meta/llama-3.3-70b remain: pricey-llama" in preview.inner_text()
    page.get_by_role("button", name="Save policy").click()
    page.get_by_text("Policy saved.").wait_for()
    # once the gateway's snapshot has the policy (its poll: 0.1 s here), as explain shows
    # without calling an upstream, the next request is routed by it
    wait_for(denied, "the saved policy to reach the gateway's snapshot", 5)
    assert provider() == "pricey"
    page.get_by_role("link", name="Audit log").click()
    assert page.get_by_role("cell", name="config.apply").first.is_visible()
    assert console_errors == []


def test_r_bey_2_the_explain_form_shows_the_decision_and_records_nothing(
    live, page, console_errors
):
    name = f"explain-{uuid.uuid4().hex[:6]}"
    key = live.new_key("acme", name)
    _sign_in(live, page, _person(live, "member"))
    page.get_by_role("link", name="Explain").click()
    page.locator("select[name=key]").select_option(label=name)
    page.get_by_label("Model").fill("meta/llama-3.3-70b")
    page.get_by_label("Message").fill("hello")
    page.locator("textarea[name=provider]").fill('{"ignore": ["cheap"]}')
    page.get_by_role("button", name="Explain").click()
    explanation = page.locator("#explanation")
    explanation.locator("p.reason").wait_for()
    assert "Attempt order: pricey-llama" in explanation.inner_text()
    assert explanation.get_by_text("cheap-llama").count() >= 1  # excluded, with its reason
    assert "provider_ignored" in explanation.inner_text()
    # a dry run: the key has no trace
    client = openai.OpenAI(base_url=live.base_url, api_key=key, max_retries=0)
    assert client.get("/traces", cast_to=object)["data"] == []
    assert console_errors == []
