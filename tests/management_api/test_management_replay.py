"""`POST /api/v1/workspaces/{ws}/routes/{slug}/replay` (SPEC R-BEY-3, R-MGT-1, D-25): a
version replayed over the traces of the route's keys, from their decision inputs; a member
may run it (it changes nothing), a viewer may not."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.utils import timezone

from audit.models import RequestTrace
from presets.models import KeySettings
from presets.services import deploy_route, save_route
from routing.models import Endpoint, Model, Provider
from tests.management_api.clients import client_as
from workspaces.models import Workspace
from workspaces.services import create_api_key

REPLAY = "/api/v1/workspaces/acme/routes/support/replay"
SMALL, BIG = "acme/small", "acme/big"


def route(model: str) -> dict[str, Any]:
    return {"slug": "support", "start": "pick",
            "nodes": {"pick": {"type": "model", "model": model}}}  # fmt: skip


@pytest.fixture
def acme(db: None) -> Workspace:
    provider = Provider.objects.create(slug="p", name="p", base_url="https://p.example/v1")
    for slug, price in ((SMALL, 1), (BIG, 10)):
        model = Model.objects.create(slug=slug, capabilities=["text"])
        Endpoint.objects.create(id=f"p-{slug}", provider=provider, model=model,
                                upstream_model="up", region="r", price_input=price,
                                price_output=price)  # fmt: skip
    workspace = Workspace.objects.create(slug="acme", name="Acme")
    support = save_route(workspace, route(SMALL), actor="ann").route
    deploy_route(support, actor="ann")
    save_route(workspace, route(BIG), actor="ann")  # the draft v2
    KeySettings.objects.create(workspace=workspace, name="bot", routes=["support"])
    key = create_api_key(workspace, name="bot", actor="ann").api_key
    RequestTrace.objects.create(  # what the gateway records for the key's request under v1
        id=uuid.uuid4(), request_id="r", workspace=workspace, api_key=key,
        created_at=timezone.now(), operation="chat.completions", requested_model="support",
        model=SMALL, provider="p", endpoint=f"p-{SMALL}", status_code=200,
        usage={"prompt_tokens": 1000, "completion_tokens": 1000}, cost_micros=2000,
        route="support", route_version=1, route_node="pick",
        decision={
            "request": {"model": SMALL, "mode": "balanced", "mode_source": "default"},
            "route": {"slug": "support", "version": 1, "model": SMALL},
            "route_inputs": {"requested_model": "support", "operation": "chat.completions",
                             "seed": 7, "body": {}, "headers": {}, "metadata": {},
                             "usage": {}},
        },
    )  # fmt: skip
    return workspace


def test_r_bey_3_a_draft_is_replayed_over_the_recorded_requests(acme) -> None:
    # when a member replays v2 over the last day
    answer = client_as(acme, "member").post(REPLAY, {"version": 2}, format="json")
    # then the one request would go to the big model, at ten times the cost
    assert answer.status_code == 200, answer.content
    report = answer.json()
    assert (report["total"], report["deployed"], report["refused"]) == (1, 1, 0)
    assert report["changed"] == {"node": 0, "model": 1, "endpoint": 1}
    assert report["cost_delta_usd"] == pytest.approx(0.018)
    assert len(report["sample"]) == 1


def test_r_mgt_1_a_viewer_may_not_replay_and_a_bad_window_is_a_400(acme) -> None:
    assert client_as(acme, "viewer").post(REPLAY, {"version": 2}, format="json").status_code == 403
    admin = client_as(acme, "admin")
    bad = admin.post(REPLAY, {"version": 2, "since": "1y"}, format="json")
    assert (bad.status_code, bad.json()["error"]["param"]) == (400, "since")
    missing = admin.post(REPLAY, {"version": 9}, format="json")
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "version_not_found")
