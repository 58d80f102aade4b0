"""The route studio (SPEC R-ROUTE-1, R-ROUTE-2, R-BEY-3, R-BEY-4, D-25, D-30): the route
list with each route's traffic by node, the editor whose saves are new draft versions and
whose problems name their node and field, the side-by-side diff, deploy and rollback after
a confirmation, replay over recorded traffic and the rollout guard's panel — every write
through the services `apply` and the API use, audited, refused to readers."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from audit.models import AdminEvent, RequestTrace
from presets.models import KeySettings, Route, RouteVersion
from presets.services import deploy_route, rollback_route, save_route
from routing.models import Endpoint, Model, Provider
from workspaces.models import ApiKey, Workspace
from workspaces.services import create_api_key

pytestmark = pytest.mark.django_db
SMALL, BIG = "acme/small", "acme/big"
V1 = """\
description: everyone to the small model
start: pick
nodes:
  pick: {type: model, model: acme/small}
"""
V2 = """\
description: a tenth of the sessions try the big model
start: split
nodes:
  split: {type: split, by: session, branches: [{weight: 90, next: pick}, {weight: 10, next: big}]}
  pick: {type: model, model: acme/small}
  big: {type: model, model: acme/big}
"""


def content(text: str) -> dict[str, Any]:
    import yaml

    return {"slug": "support", **yaml.safe_load(text)}


@pytest.fixture
def studio(acme: Workspace) -> Route:
    """Route `support`: v1 deployed, v2 (a 90/10 split) a draft; attached to key `bot`."""
    provider = Provider.objects.create(slug="p", name="p", base_url="https://p.example/v1")
    for slug, price in ((SMALL, 1), (BIG, 10)):
        model = Model.objects.create(slug=slug, capabilities=["text"])
        Endpoint.objects.create(id=f"p-{slug}", provider=provider, model=model,
                                upstream_model="up", region="r", price_input=price,
                                price_output=price)  # fmt: skip
    route = save_route(acme, content(V1), actor="ann", message="first").route
    deploy_route(route, actor="ann")
    save_route(acme, content(V2), actor="ann", message="canary the big model")
    KeySettings.objects.create(workspace=acme, name="bot", routes=["support"])
    return Route.objects.get(pk=route.pk)


def served(workspace: Workspace, key: ApiKey | None, node: str, *, version: int = 1,
           age_s: float = 60, status: int = 200, **fields: Any) -> RequestTrace:  # fmt: skip
    """A request `support` v`version` ended at `node`, as the gateway records it."""
    return RequestTrace.objects.create(
        id=uuid.uuid4(), request_id="r", workspace=workspace, api_key=key,
        created_at=timezone.now() - timedelta(seconds=age_s), operation="chat.completions",
        requested_model="support", model=SMALL, provider="p", endpoint=f"p-{SMALL}",
        status_code=status, usage={"prompt_tokens": 1000, "completion_tokens": 1000},
        cost_micros=2000, route="support", route_version=version, route_node=node,
        decision={
            "request": {"model": SMALL, "mode": "balanced", "mode_source": "default"},
            "route": {"slug": "support", "version": version, "model": SMALL},
            "route_inputs": {"requested_model": "support", "operation": "chat.completions",
                             "seed": 7, "session_id": fields.pop("session", "s-1"),
                             "body": {}, "headers": {}, "metadata": {}, "usage": {}},
        },
        **fields,
    )  # fmt: skip


def test_r_route_1_the_list_shows_versions_keys_and_the_last_hour_by_node(acme, studio, people):
    # given three requests that ended at `pick` in the last hour, one two hours ago
    for _ in range(3):
        served(acme, None, "pick")
    served(acme, None, "pick", age_s=7200)
    # when a viewer opens the list
    page = people["viewer"].get("/console/acme/routes/").content.decode()
    # then the route shows v1 deployed, v2 a draft, its key and only the last hour's traffic
    assert ">v1<" in page
    assert 'v2 <span class="tag">draft</span>' in page
    assert "bot" in page
    assert '<code>pick</code> 100% <span class="meta">(3)</span>' in page
    assert "Only the newest" not in page


def test_r_route_1_the_route_pages_count_only_the_newest_traces_of_the_hour_and_say_so(
    acme, studio, people, monkeypatch
):
    # given a cap of two traces per count and three requests in the last hour
    monkeypatch.setattr("console.route_watch.TRAFFIC_MAX_TRACES", 2)
    served(acme, None, "pick", age_s=60)
    second = served(acme, None, "pick", age_s=120)
    served(acme, None, "other", age_s=180)
    # when a viewer opens the list and the route's page
    listed = people["viewer"].get("/console/acme/routes/").content.decode()
    studied = people["viewer"].get("/console/acme/routes/support/").content.decode()
    # then only the newest two are counted, and both pages say from when
    assert '<code>pick</code> 100% <span class="meta">(2)</span>' in listed
    assert "<code>other</code>" not in listed
    since = second.created_at.strftime("%Y-%m-%d %H:%M:%S")
    notice = f"Only the newest 2 requests of the last hour are counted: those from {since} UTC on."
    assert notice in listed
    assert notice in studied


def test_r_route_2_saving_the_editor_adds_a_draft_version_and_leaves_the_deployed_one(
    acme, studio, people
):
    # when an admin saves an edit with a message
    text = V2.replace("weight: 10", "weight: 30")
    form = {"slug": "support", "text": text, "message": "more canary"}
    saved = people["admin"].post("/console/acme/routes/save", form)
    # then v3 is a draft by them, audited, and v1 still routes
    assert saved.status_code == 302
    v3 = RouteVersion.objects.get(route=studio, number=3)
    assert (v3.author, v3.message) == ("admin-acme", "more canary")
    assert v3.content["nodes"]["split"]["branches"][1]["weight"] == 30
    assert Route.objects.get(pk=studio.pk).deployed.number == 1
    event = AdminEvent.objects.get(action="route.save", target="support v3")
    (line,) = event.changes["diff"]  # key order inside a node is the database's (jsonb)
    before, after = line.removeprefix("~ nodes.split.branches: ").split(" → ")
    assert ("weight: 10" in before, "weight: 30" in after) == (True, True)
    page = people["admin"].get(saved["Location"]).content.decode()
    assert "Saved as version 3, a draft: it routes nothing until it is deployed." in page


def test_r_route_2_an_unchanged_save_adds_no_version(acme, studio, people):
    answer = people["admin"].post("/console/acme/routes/save", {"slug": "support", "text": V2},
                                  follow=True)  # fmt: skip
    assert "Nothing changed: version 2 already says this." in answer.content.decode()
    assert studio.versions.count() == 2


@pytest.mark.parametrize(
    ("_case", "text", "shown"),
    [
        ("unknown exit", V2.replace("next: big}", "next: bgi}"),
         "node <code>split</code>, field <code>branches[1].next</code>: unknown node"),
        ("missing field", V1.replace("model: acme/small", "mode: price"),
         "node <code>pick</code>, field <code>model</code>: is required"),
        ("unknown start", V1.replace("start: pick", "start: nowhere"),
         "<code>start</code>: unknown node"),
        ("not YAML", "start: [pick", "line 1, column 13: expected"),
        ("not a mapping", "- pick", "the route must be a mapping"),
    ],
)  # fmt: skip
def test_r_route_1_a_bad_route_is_a_400_naming_node_and_field_and_writes_nothing(
    acme, studio, people, _case, text, shown
):
    before = RouteVersion.objects.count(), AdminEvent.objects.count()
    answer = people["owner"].post("/console/acme/routes/save", {"slug": "support", "text": text})
    assert answer.status_code == 400
    body = answer.content.decode()
    assert shown in body
    assert text.split("\n")[0] in body  # the editor keeps what was written
    assert (RouteVersion.objects.count(), AdminEvent.objects.count()) == before


def test_r_route_2_a_new_route_is_created_with_its_first_version_and_may_not_take_a_name(
    acme, studio, people
):
    owner = people["owner"]
    taken = owner.post("/console/acme/routes/save", {"new": "1", "slug": "support", "text": V1})
    assert taken.status_code == 400
    assert "route &#x27;support&#x27; exists already" in taken.content.decode()
    made = owner.post("/console/acme/routes/save", {"new": "1", "slug": "fresh", "text": V1})
    assert made.status_code == 302
    fresh = Route.objects.get(workspace=acme, slug="fresh")
    assert (fresh.versions.count(), fresh.deployed) == (1, None)


def test_d_30_a_viewer_reads_the_studio_and_changes_nothing(acme, studio, people):
    page = people["viewer"].get("/console/acme/routes/support/").content.decode()
    assert "readonly" in page
    for control in ("Save as a new version", "Deploy…", "Roll back…", ">Replay<"):
        assert control not in page
    owner_page = people["owner"].get("/console/acme/routes/support/").content.decode()
    for control in ("Save as a new version", "Deploy…", ">Replay<"):
        assert control in owner_page
    before = RouteVersion.objects.count(), AdminEvent.objects.count()
    viewer = people["viewer"]
    assert (
        viewer.post("/console/acme/routes/save", {"slug": "support", "text": V1}).status_code == 403
    )
    assert viewer.post("/console/acme/routes/support/deploy/", {"version": 2}).status_code == 403
    assert viewer.post("/console/acme/routes/support/rollback/", {}).status_code == 403
    assert viewer.post("/console/acme/routes/support/replay", {"version": 2}).status_code == 403
    assert (RouteVersion.objects.count(), AdminEvent.objects.count()) == before
    assert Route.objects.get(pk=studio.pk).deployed.number == 1


def test_r_route_2_the_diff_is_side_by_side_node_by_node(acme, studio, people):
    page = people["viewer"].get("/console/acme/routes/support/diff/?from=1&to=2").content.decode()
    assert "v1 → v2 of" in page
    assert '<tbody class="side-added">' in page  # the split and the big model are new
    assert 'node split <span class="tag mark-added">added</span>' in page
    assert 'node big <span class="tag mark-added">added</span>' in page
    assert "node pick" in page
    assert '<tbody class="side-same">' in page
    assert '<tr class="changed">' in page  # start: pick → split
    assert '<code>pick</code></td>\n      <td class="after"><code>split</code>' in page
    assert people["viewer"].get("/console/acme/routes/support/diff/?from=9").status_code == 400


def test_r_route_2_deploy_confirms_with_the_keys_then_deploys_and_audits(acme, studio, people):
    # given the confirmation page of v2
    confirm = people["admin"].get("/console/acme/routes/support/deploy/?version=2")
    body = confirm.content.decode()
    assert confirm.status_code == 200
    assert '<span class="tag">bot</span>' in body  # the key whose requests change
    assert "Deploy v2" in body
    assert "Now deployed: <b>v1</b>" in body
    assert Route.objects.get(pk=studio.pk).deployed.number == 1  # a GET changes nothing
    # when it is confirmed
    done = people["admin"].post("/console/acme/routes/support/deploy/", {"version": 2})
    # then v2 routes, the deploy is audited, and the page says when it takes effect
    assert done.status_code == 302
    assert Route.objects.get(pk=studio.pk).deployed.number == 2
    event = AdminEvent.objects.get(action="route.deploy", target="support v2")
    assert event.actor == "admin-acme"
    assert event.changes["deployed_version"] == {"before": 1, "after": 2}
    shown = people["admin"].get(done["Location"]).content.decode()
    assert "Deployed version 2: in effect on every gateway within 2 seconds." in shown


def test_r_route_2_rollback_to_any_earlier_version(acme, studio, people):
    save_route(acme, content(V2.replace("weight: 10", "weight: 50")), actor="ann")
    deploy_route(studio, 2, actor="ann")
    deploy_route(studio, 3, actor="ann")
    # when the owner rolls back to v1, two deploys back
    done = people["owner"].post("/console/acme/routes/support/rollback/", {"version": 1})
    assert done.status_code == 302
    assert Route.objects.get(pk=studio.pk).deployed.number == 1
    assert AdminEvent.objects.filter(action="route.rollback", target="support v1").count() == 1
    # and a version that does not exist is a 400 that changes nothing
    bad = people["owner"].post("/console/acme/routes/support/rollback/", {"version": 9})
    assert bad.status_code == 400
    assert Route.objects.get(pk=studio.pk).deployed.number == 1


def test_r_bey_3_replay_shows_counts_cost_and_the_changed_requests(acme, studio, people):
    # given two requests of the key `bot` served by v1 at the small model
    key = create_api_key(acme, name="bot", actor="ann").api_key
    first = served(acme, key, "pick", session="s-1")
    served(acme, key, "pick", session="s-2")
    # when a member replays v3, which sends everyone to the big model
    save_route(acme, content(V1.replace("acme/small", "acme/big")), actor="ann")
    before = AdminEvent.objects.count(), RequestTrace.objects.count()
    answer = people["member"].post("/console/acme/routes/support/replay",
                                   {"version": 3, "since": "1h"})  # fmt: skip
    # then both would change model and endpoint, at 10× the price, each linked to its trace
    assert answer.status_code == 200
    page = answer.content.decode()
    assert '<dd class="num" data-count="total">2</dd>' in page
    assert '<dd class="num" data-count="model">2</dd>' in page
    assert '<dd class="num" data-count="endpoint">2</dd>' in page
    assert '<dd class="num" data-count="cost">+$0.036000</dd>' in page
    assert f"/console/acme/requests/{first.pk}/" in page
    assert "acme/small → acme/big" in page
    assert (AdminEvent.objects.count(), RequestTrace.objects.count()) == before


def test_r_bey_3_a_replay_of_a_refusing_version_counts_newly_refused(acme, studio, people):
    key = create_api_key(acme, name="bot", actor="ann").api_key
    served(acme, key, "pick")
    refuse = "start: stop\nnodes:\n  stop: {type: reject, status: 403, message: closed}\n"
    save_route(acme, content(refuse), actor="ann")
    page = people["owner"].post("/console/acme/routes/support/replay",
                                {"version": 3, "since": "24h"}).content.decode()  # fmt: skip
    assert '<dd class="num" data-count="refused">1 <span class="meta">(1 answered' in page
    assert '<span class="code">refused</span>' in page


def test_r_bey_4_the_guard_panel_compares_the_window_and_lists_automatic_rollbacks(
    acme, studio, people
):
    # given a deployed v3 whose guard watches `big` against `pick`, and its traffic
    guard = {"node": "big", "baseline": "pick", "min_requests": 2, "max_error_rate_delta": 0.1}
    save_route(acme, {**content(V2), "rollout_guard": guard}, actor="ann")
    deploy_route(studio, 3, actor="ann")
    for _ in range(4):
        served(acme, None, "pick", version=3)
    served(acme, None, "big", version=3)
    served(acme, None, "big", version=3, status=502)
    # when the page is read
    page = people["viewer"].get("/console/acme/routes/support/").content.decode()
    # then the window's numbers and the verdict the next pass acts on are shown
    assert "watches <code>big</code> against <code>pick</code>" in page
    assert "50.0% (1)" in page
    assert "0.0% (0)" in page
    assert "+10.0 points" in page
    assert "Breached — the next pass rolls it back:" in page
    assert "error rate 50.0% on big vs 0.0% on pick" in page
    # and once the guard rolled it back, its event is in the history with the numbers
    rollback_route(studio, actor="rollout-guard", automatic=True,
                   numbers={"watched": "big", "baseline": "pick", "watched_requests": 2,
                            "baseline_requests": 4, "error_rate_delta": 0.5,
                            "reasons": ["error rate 50.0% on big vs 0.0% on pick"]})  # fmt: skip
    after = people["viewer"].get("/console/acme/routes/support/").content.decode()
    assert "v3 → v1" in after
    assert "big: 2 requests · pick: 4 requests · error rate Δ 0.500" in after


def test_r_obs_1_route_text_renders_escaped_in_the_studio(acme, studio, people):
    hostile = "<script>alert(1)</script>"
    reject = f"{{type: reject, status: 403, message: {hostile!r}}}"
    text = f"description: {hostile!r}\nstart: stop\nnodes:\n  stop: {reject}\n"
    people["owner"].post("/console/acme/routes/save",
                         {"slug": "support", "text": text, "message": hostile})  # fmt: skip
    assert studio.versions.count() == 3
    for url in ("/console/acme/routes/support/?version=3", "/console/acme/routes/",
                "/console/acme/routes/support/diff/?from=2&to=3",
                "/console/acme/routes/support/deploy/?version=3"):  # fmt: skip
        body = people["viewer"].get(url).content.decode()
        assert "<script>alert" not in body, url
    shown = people["viewer"].get("/console/acme/routes/support/?version=3").content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in shown
