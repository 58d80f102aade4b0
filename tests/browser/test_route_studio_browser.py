"""The route studio in a real browser (SPEC R-ROUTE-1, R-ROUTE-2, R-BEY-3, R-BEY-4, D-25,
D-30), against the live gateway: an owner creates a route, is shown the validation error at
its field, fixes it, attaches it to a key and deploys it; then edits it, compares the draft
with the deployed version, replays it over the key's recorded requests, deploys it — and a
second gateway process on the same database routes by it within 2 s — and rolls it back. A
viewer sees the studio and its rollout guard and can change nothing. Screenshots:
var/test-artifacts/screens/."""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING

import openai
import pytest

from gateway.processes import running_gateway
from tests.browser.conftest import screenshot
from tests.browser.test_console_browser import _person, _sign_in
from tests.waiting import wait_for

if TYPE_CHECKING:
    from tests.live.installation import Live

pytestmark = pytest.mark.live
DEADLINE_S = 2.0  # D-25: a deploy is in effect on every replica within 2 s
GUARDED = """\
workspaces:
  - slug: {slug}
    name: Guarded
    keys:
      - {{name: studio-bot, routes: [flow]}}
    routes:
      - slug: flow
        description: half the traffic tries the tiny model
        start: split
        nodes:
          split: {{type: split, by: random, branches: [{{weight: 1, next: pick}},
                                                      {{weight: 1, next: canary}}]}}
          pick: {{type: model, model: acme/mini}}
          canary: {{type: model, model: acme/tiny}}
        rollout_guard: {{node: canary, baseline: pick, min_requests: 3,
                         max_error_rate_delta: 0.5, max_p99_ratio: 50}}
"""
KEY_ONLY = """\
workspaces:
  - slug: {slug}
    name: Studio
    keys:
      - {{name: studio-bot}}
"""
FIRST = """\
description: everything to one model
start: pick
nodes:
  pick: {type: model, model: acme/mini}
"""


def _studio(live: Live, tmp_path, template: str) -> tuple[str, str]:
    """A workspace of its own (from `template`) and its key `studio-bot`."""
    slug = f"studio-{uuid.uuid4().hex[:6]}"
    config = tmp_path / "studio.yaml"
    config.write_text(template.format(slug=slug))
    live.manage("apply", "-f", str(config), "--deploy")
    return slug, live.new_key(slug, "studio-bot")


def _served_model(base_url: str, key: str) -> str:
    client = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0)
    answer = client.chat.completions.create(
        model="meta/llama-3.3-70b", messages=[{"role": "user", "content": "hi"}], max_tokens=8
    )
    return str(answer.model_extra["switchyard"]["model"])


def test_r_route_2_create_validate_deploy_diff_replay_redeploy_and_roll_back_in_the_studio(
    live, page, console_errors, tmp_path
):
    slug, key = _studio(live, tmp_path, KEY_ONLY)
    _sign_in(live, page, _person(live, "owner", slug), slug)
    # a new route with a typo in `start` is refused with its field named; nothing is saved
    page.get_by_role("link", name="Routes").click()
    page.get_by_role("link", name="New route").click()
    page.get_by_label("Slug").fill("flow")
    page.locator("textarea[name=text]").fill(FIRST.replace("start: pick", "start: pikc"))
    page.get_by_role("button", name="Save as a new version").click()
    problem = page.locator("ul.route-problems")
    problem.wait_for()
    assert "start: unknown node 'pikc'" in problem.inner_text()
    screenshot(page, "route_studio_editor_with_a_problem")
    # fixed, it is saved as v1, a draft that routes nothing yet
    page.locator("textarea[name=text]").fill(FIRST)
    page.get_by_role("button", name="Save as a new version").click()
    page.get_by_text("Saved as version 1, a draft").wait_for()
    assert page.locator("svg.route-diagram").count() == 1
    # attached to the key on its page, and deployed after the confirmation naming the key
    page.get_by_role("link", name="API keys").click()
    page.get_by_role("link", name="studio-bot").click()
    page.get_by_label("Routes, tried in order").fill("flow")
    page.get_by_role("button", name="Save key").click()
    page.goto(f"{live.gateway.url}/console/{slug}/routes/flow/")
    page.get_by_role("link", name="Deploy…").click()
    assert page.locator(".keys-changing").inner_text().strip() == "studio-bot"
    page.get_by_role("button", name="Deploy v1").click()
    page.get_by_text("Deployed version 1").wait_for()
    wait_for(lambda: _served_model(live.base_url, key) == "acme/mini",
             "v1 (acme/mini) to serve the key once deployed", DEADLINE_S)  # fmt: skip
    for _ in range(3):  # recorded traffic for the replay, ended at `pick` (acme/mini)
        assert _served_model(live.base_url, key) == "acme/mini"
    # an edit is saved as v2, a draft, and compared with the deployed version
    page.locator("textarea[name=text]").fill(FIRST.replace("acme/mini", "acme/tiny"))
    page.get_by_label("Message").fill("everything to tiny")
    page.get_by_role("button", name="Save as a new version").click()
    page.get_by_text("Saved as version 2, a draft").wait_for()
    page.get_by_role("link", name="diff with deployed").click()
    page.wait_for_url("**/diff/?from=1&to=2")
    changed = page.locator("table.sides tr.changed", has_text="acme/tiny")
    assert "acme/mini" in changed.inner_text()
    assert page.locator("svg.route-diagram").count() == 2
    screenshot(page, "route_studio_diff")
    # the replay predicts every request recorded since the key took the route (the three,
    # and those that waited for the deploy) moving to acme/tiny
    page.get_by_role("link", name="flow", exact=True).click()
    page.locator("select[name=since]").select_option("1h")
    page.get_by_role("button", name="Replay").click()
    page.locator("dl.counts").wait_for()
    total = int(page.locator("[data-count=total]").inner_text())
    assert total >= 4
    assert int(page.locator("[data-count=model]").inner_text()) == total
    assert page.locator("table.replay-sample tbody tr").count() == min(total, 20)
    screenshot(page, "route_studio_replay")
    # deploy from the replay: the traffic follows, here and on a second gateway within 2 s
    with running_gateway({**live.env, "SWITCHYARD_SNAPSHOT_POLL_S": "1.0"}) as other:
        wait_for(lambda: _served_model(other.base_url, key) == "acme/mini",
                 "v1 (acme/mini) to serve the key on the other gateway", 10)  # fmt: skip
        page.get_by_role("link", name="Deploy v2…").click()
        page.get_by_role("button", name="Deploy v2").click()
        page.get_by_text("Deployed version 2").wait_for()
        deployed_at = time.monotonic()
        wait_for(lambda: _served_model(other.base_url, key) == "acme/tiny",
                 "v2 (acme/tiny) to serve the key on the other gateway", DEADLINE_S)  # fmt: skip
        took = time.monotonic() - deployed_at
        wait_for(lambda: _served_model(live.base_url, key) == "acme/tiny",
                 "v2 (acme/tiny) to serve the key here", DEADLINE_S)  # fmt: skip
        # and a rollback to v1 is in effect on the other gateway within 2 s too
        page.get_by_role("link", name="Roll back…").click()
        page.get_by_role("button", name="Roll back to v1").click()
        page.get_by_text("Rolled back to version 1").wait_for()
        wait_for(lambda: _served_model(other.base_url, key) == "acme/mini",
                 "the rollback to v1 (acme/mini) on the other gateway", DEADLINE_S)  # fmt: skip
    assert took < DEADLINE_S
    page.get_by_role("link", name="Audit log").click()
    for action in ("route.save", "route.deploy", "route.rollback"):
        assert page.get_by_role("cell", name=action, exact=True).first.is_visible()
    # the one error is the refused save's own 400, which Chromium reports as a failed load
    refused = [e for e in console_errors if "status of 400" in e and "/routes/save" in e]
    assert len(refused) == 1
    assert [e for e in console_errors if e not in refused] == []


def test_d_30_a_viewer_reads_the_studio_and_its_guard_and_can_change_none_of_it(
    live, page, console_errors, tmp_path
):
    slug, key = _studio(live, tmp_path, GUARDED)
    served = [_served_model(live.base_url, key) for _ in range(24)]
    assert set(served) == {"acme/mini", "acme/tiny"}
    _sign_in(live, page, _person(live, "viewer", slug), slug)
    page.goto(f"{live.gateway.url}/console/{slug}/routes/flow/")
    assert page.locator("svg.route-diagram g.node").count() == 3
    # the guard's live comparison counts both sides of the split, as its next pass will
    guard = page.locator("table.guard-numbers")

    def counted() -> tuple[int, int] | None:  # traces are written in batches (50 ms here)
        row = guard.locator("tr", has_text="requests").inner_text().split()
        if int(row[1]) + int(row[2]) == len(served):
            return int(row[1]), int(row[2])
        page.reload()
        return None

    watched, baseline = wait_for(counted, f"the guard panel to count all {len(served)} requests", 5)
    assert (watched, baseline) == (served.count("acme/tiny"), served.count("acme/mini"))
    shares = page.locator("svg.route-diagram").text_content() or ""
    assert f"{watched} req" in shares
    assert f"{baseline} req" in shares
    assert page.locator("p.verdict.healthy").inner_text().strip() == "Within every bound."
    screenshot(page, "route_studio_guard_panel")
    assert page.locator("textarea[name=text]").get_attribute("readonly") is not None
    for name in ("Save as a new version", "Replay"):
        assert page.get_by_role("button", name=name).count() == 0
    assert page.get_by_role("link", name="Deploy…").count() == 0
    page.goto(f"{live.gateway.url}/console/{slug}/routes/")
    assert page.get_by_role("link", name="New route").count() == 0
    page.goto(f"{live.gateway.url}/console/{slug}/routes/flow/")
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    headers = {"X-CSRFToken": token, "Referer": page.url}
    base = f"{live.gateway.url}/console/{slug}/routes"
    for url, form in ((f"{base}/save", {"slug": "flow", "text": FIRST}),
                      (f"{base}/flow/deploy/", {"version": "1"}),
                      (f"{base}/flow/rollback/", {}),
                      (f"{base}/flow/replay", {"version": "1"})):  # fmt: skip
        assert page.request.post(url, form=form, headers=headers).status == 403, url
    page.reload()
    assert page.locator("section.versions tbody tr").count() == 1  # still one version
    assert console_errors == []


def test_every_console_page_opens_without_a_script_error(live, page, console_errors, tmp_path):
    """Each page of the navigation, and the studio's own, in Chromium under the CSP: no
    script error, no CSP violation, no failed load."""
    slug, _key = _studio(live, tmp_path, GUARDED)
    _sign_in(live, page, _person(live, "owner", slug), slug)
    names = [link.inner_text() for link in page.locator("header nav a").all()]
    assert {"Routes", "Budgets", "Presets", "Policy", "Provider keys"} <= set(names)
    for name in names:
        page.locator("header nav a", has_text=name).click()
        page.wait_for_load_state("load")
    base = f"{live.gateway.url}/console/{slug}/routes"
    for url in (f"{base}/new", f"{base}/flow/", f"{base}/flow/diff/",
                f"{base}/flow/deploy/?version=1", f"{base}/flow/rollback/"):  # fmt: skip
        page.goto(url)
    assert console_errors == []
