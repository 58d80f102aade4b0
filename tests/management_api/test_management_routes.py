"""`/api/v1/workspaces/{ws}/routes` (SPEC R-MGT-1, R-ROUTE-2, D-25, R-OBS-4): saving a route
makes numbered immutable versions (none when unchanged), an invalid route is one 400 with
every problem's path, deploy and rollback take their defaults and are audited, diffs read
as `manage.py route diff` prints them, and a refused request writes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from audit.models import AdminEvent
from presets.models import Route, RouteDeployment, RouteVersion
from presets.services import deploy_route, save_route
from routing.models import Model, Provider
from tests.management_api.clients import client_as
from workspaces.models import Workspace

ROUTES = "/api/v1/workspaces/acme/routes"
SUPPORT = f"{ROUTES}/support"
VERSIONS = f"{SUPPORT}/versions"
SMALL, BIG = "meta/llama-3.3-70b", "mistral/mistral-large"


@pytest.fixture
def acme(db: None) -> Workspace:
    Provider.objects.create(slug="groq", name="Groq", base_url="https://groq.example/v1")
    for slug in (SMALL, BIG):
        Model.objects.create(slug=slug, capabilities=["text"])
    return Workspace.objects.create(slug="acme", name="Acme")


def route(model: str = SMALL, **extra: Any) -> dict[str, Any]:
    return {"slug": "support", "start": "pick",
            "nodes": {"pick": {"type": "model", "model": model}}, **extra}  # fmt: skip


def three_versions(workspace: Workspace) -> Route:
    save_route(workspace, route(), actor="ann")
    save_route(workspace, route(BIG), actor="ann")
    return save_route(workspace, route(description="third"), actor="ann").route


def route_events() -> list[AdminEvent]:
    return list(AdminEvent.objects.filter(action__startswith="route.").order_by("id"))


def written() -> tuple[int, int, int, int]:
    counts = (Route.objects.count(), RouteVersion.objects.count())
    return (*counts, RouteDeployment.objects.count(), len(route_events()))


# Saving versions --------------------------------------------------------------------


def test_posting_a_route_creates_it_with_version_1(acme, owner):
    # when
    response = owner.post(VERSIONS, {**route(), "message": "first cut"}, format="json")
    # then
    assert response.status_code == 201
    version = RouteVersion.objects.get()
    assert response.json() == {
        "number": 1,
        "author": "token:deployer",
        "message": "first cut",
        "created_at": version.created_at.isoformat().replace("+00:00", "Z"),
        "content_hash": version.content_hash,
        "deployed": False,
        "content": route(),
    }
    assert version.content == route()
    assert Route.objects.get().deployed is None  # a draft routes nothing (D-25)
    (event,) = route_events()
    assert (event.actor, event.action, event.target) == (
        "token:deployer",
        "route.save",
        "support v1",
    )


def test_posting_an_unchanged_route_returns_the_same_version_with_200(acme, owner):
    # given
    owner.post(VERSIONS, route(), format="json")
    # when
    response = owner.post(VERSIONS, {**route(), "message": "again"}, format="json")
    # then
    assert response.status_code == 200
    assert (response.json()["number"], response.json()["message"]) == (1, "")
    assert written() == (1, 1, 0, 1)


def test_posting_a_changed_route_creates_version_2(acme, owner):
    # given
    owner.post(VERSIONS, route(), format="json")
    # when
    response = owner.post(VERSIONS, {**route(BIG), "message": "bigger"}, format="json")
    # then
    assert response.status_code == 201
    assert (response.json()["number"], response.json()["content"]) == (2, route(BIG))
    assert list(RouteVersion.objects.values_list("number", "message")) == [(1, ""), (2, "bigger")]
    assert route_events()[-1].changes == {
        "version": {"before": 1, "after": 2},
        "message": "bigger",
        "diff": [f"~ nodes.pick.model: {SMALL} → {BIG}"],
    }


def test_a_body_without_a_slug_is_the_route_of_the_url(acme, owner):
    # given
    body = {k: v for k, v in route().items() if k != "slug"}
    # when
    response = owner.post(VERSIONS, body, format="json")
    # then
    assert response.status_code == 201
    assert RouteVersion.objects.get().content == route()


def test_a_body_slug_other_than_the_url_is_a_400_that_writes_nothing(acme, owner):
    # when
    response = owner.post(VERSIONS, {**route(), "slug": "other"}, format="json")
    # then
    assert response.status_code == 400
    assert response.json()["error"] == {
        "message": "slug: 'other' is not the route of the URL ('support')",
        "type": "invalid_request_error",
        "code": "slug_mismatch",
        "param": "slug",
    }
    assert written() == (0, 0, 0, 0)


def test_an_invalid_route_is_a_400_listing_every_problem_with_its_path(acme, owner):
    # given
    bad = {"slug": "support", "start": "plan", "colour": "red", "nodes": {
        "plan": {"type": "split", "by": "session",
                 "branches": [{"weight": 90, "next": "pick"}, {"weight": 10, "next": "canry"}]},
        "pick": {"type": "model", "model": "acme/none"},
        "old": {"type": "model", "model": SMALL},
    }}  # fmt: skip
    # when
    response = owner.post(VERSIONS, bad, format="json")
    # then
    assert response.status_code == 400
    assert response.json()["error"] == {
        "message": "colour: unknown key; "
        "nodes.old: unreachable from start 'plan'; "
        "nodes.pick.model: unknown model 'acme/none'; "
        "nodes.plan.branches[1].next: unknown node 'canry'",
        "type": "invalid_request_error",
        "code": "invalid_route",
        "param": "colour",
    }
    assert written() == (0, 0, 0, 0)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({**route(), "message": 7}, "message: must be a string"),
        ({**route(), "message": "x" * 501}, "message: must be at most 500 characters"),
        (["support"], "Expected a JSON object: the route (CONFIG.md shape) and a message."),
    ],
)
def test_a_bad_message_or_body_is_a_400_that_writes_nothing(acme, owner, body, message):
    # when
    response = owner.post(VERSIONS, body, format="json")
    # then
    assert response.status_code == 400
    assert response.json()["error"]["message"] == message
    assert written() == (0, 0, 0, 0)


# Reading ----------------------------------------------------------------------------


def test_list_shows_each_route_with_its_deployed_and_newest_version(acme, globex, owner):
    # given
    support = three_versions(acme)
    deploy_route(support, 2, actor="ann")
    save_route(acme, {**route(), "slug": "draft"}, actor="ann")
    save_route(globex, route(), actor="ann")
    # when
    response = owner.get(ROUTES)
    # then
    assert response.status_code == 200
    assert [(r["slug"], r["deployed_version"], r["newest_version"]) for r in response.json()] == [
        ("draft", None, 1),
        ("support", 2, 3),
    ]
    assert set(response.json()[0]) == {
        "slug", "deployed_version", "newest_version", "created_at", "updated_at",
    }  # fmt: skip


def test_a_route_shows_its_deployed_content(acme, owner):
    # given
    support = three_versions(acme)
    deploy_route(support, 2, actor="ann")
    # when
    body = owner.get(SUPPORT).json()
    # then
    assert (body["slug"], body["deployed_version"], body["newest_version"]) == ("support", 2, 3)
    assert body["content"] == route(BIG)


def test_a_route_never_deployed_has_no_content(acme, owner):
    # given
    save_route(acme, route(), actor="ann")
    # when
    body = owner.get(SUPPORT).json()
    # then
    assert (body["deployed_version"], body["newest_version"], body["content"]) == (None, 1, None)


def test_versions_are_listed_oldest_first_with_the_deployed_one_marked(acme, owner):
    # given
    support = three_versions(acme)
    deploy_route(support, 2, actor="ann")
    # when
    response = owner.get(VERSIONS)
    # then
    assert response.status_code == 200
    assert [(v["number"], v["author"], v["deployed"]) for v in response.json()] == [
        (1, "ann", False),
        (2, "ann", True),
        (3, "ann", False),
    ]
    assert "content" not in response.json()[0]


def test_a_version_shows_its_content(acme, owner):
    # given
    three_versions(acme)
    # when
    response = owner.get(f"{VERSIONS}/2")
    # then
    assert response.status_code == 200
    assert (response.json()["number"], response.json()["content"]) == (2, route(BIG))


@pytest.mark.parametrize(
    ("path", "code", "message"),
    [
        (f"{VERSIONS}/9", "version_not_found", "Route 'support' has no version 9."),
        (f"{ROUTES}/nope", "route_not_found", "No route 'nope' in workspace 'acme'."),
        (f"{ROUTES}/nope/versions", "route_not_found", "No route 'nope' in workspace 'acme'."),
        (f"{ROUTES}/nope/versions/1", "route_not_found", "No route 'nope' in workspace 'acme'."),
        (f"{ROUTES}/nope/diff?from=1", "route_not_found", "No route 'nope' in workspace 'acme'."),
    ],
)
def test_an_unknown_route_or_version_is_a_404(acme, owner, path, code, message):
    # given
    save_route(acme, route(), actor="ann")
    # when
    response = owner.get(path)
    # then
    assert response.status_code == 404
    assert response.json()["error"] == {
        "message": message,
        "type": "not_found_error",
        "code": code,
        "param": None,
    }


# Diffs ------------------------------------------------------------------------------


def test_diff_between_two_versions(acme, owner):
    # given
    three_versions(acme)
    # when
    response = owner.get(f"{SUPPORT}/diff", {"from": 1, "to": 3})
    # then
    assert response.status_code == 200
    assert response.json() == {
        "from_version": 1,
        "to_version": 3,
        "lines": ["+ description: third"],
    }


def test_diff_compares_to_the_deployed_version_by_default(acme, owner):
    # given
    support = three_versions(acme)
    deploy_route(support, 2, actor="ann")
    # when
    response = owner.get(f"{SUPPORT}/diff", {"from": 1})
    # then
    assert response.json() == {
        "from_version": 1,
        "to_version": 2,
        "lines": [f"~ nodes.pick.model: {SMALL} → {BIG}"],
    }


@pytest.mark.parametrize(
    ("query", "status", "code", "message"),
    [
        ({}, 400, "invalid_request", "from: is required (a version number)"),
        ({"from": "one"}, 400, "invalid_request", "from: must be a version number (1, 2, …), "
                                                  "not 'one'"),
        ({"from": 1, "to": "0"}, 400, "invalid_request", "to: must be a version number (1, 2, "
                                                         "…), not '0'"),
        ({"from": 1}, 400, "not_deployed", "route 'support' is not deployed: give the version "
                                           "to compare"),
        ({"from": 1, "to": 9}, 404, "version_not_found", "Route 'support' has no version 9."),
    ],
)  # fmt: skip
def test_a_diff_that_cannot_be_made_says_why(acme, owner, query, status, code, message):
    # given
    three_versions(acme)
    # when
    response = owner.get(f"{SUPPORT}/diff", query)
    # then
    assert response.status_code == status
    assert (response.json()["error"]["code"], response.json()["error"]["message"]) == (
        code,
        message,
    )


# Deploy and rollback ----------------------------------------------------------------


def test_deploy_defaults_to_the_newest_version_and_is_audited(acme, owner):
    # given
    support = three_versions(acme)
    deploy_route(support, 1, actor="ann")
    # when
    response = owner.post(f"{SUPPORT}/deploy", {}, format="json")
    # then
    assert response.status_code == 200
    assert response.json() == {"slug": "support", "deployed_version": 3, "previous_version": 1}
    assert Route.objects.get().deployed.number == 3
    event = route_events()[-1]
    assert (event.actor, event.action, event.target) == (
        "token:deployer",
        "route.deploy",
        "support v3",
    )
    assert event.changes == {
        "deployed_version": {"before": 1, "after": 3},
        "diff": ["+ description: third"],
    }


def test_deploy_a_given_version(acme, owner):
    # given
    three_versions(acme)
    # when
    response = owner.post(f"{SUPPORT}/deploy", {"version": 2}, format="json")
    # then
    assert response.json() == {"slug": "support", "deployed_version": 2, "previous_version": None}
    assert Route.objects.get().deployed.number == 2
    assert list(RouteDeployment.objects.values_list("version__number", "action", "actor")) == [
        (2, "deploy", "token:deployer")
    ]


def test_deploying_the_deployed_version_changes_nothing(acme, owner):
    # given
    support = three_versions(acme)
    deploy_route(support, 3, actor="ann")
    before = written()
    # when
    response = owner.post(f"{SUPPORT}/deploy", {}, format="json")
    # then
    assert response.json() == {"slug": "support", "deployed_version": 3, "previous_version": 3}
    assert written() == before


def test_rollback_defaults_to_the_version_deployed_before_and_is_audited(acme, owner):
    # given
    support = three_versions(acme)
    deploy_route(support, 1, actor="ann")
    deploy_route(support, 3, actor="ann")
    # when
    response = owner.post(f"{SUPPORT}/rollback", {}, format="json")
    # then
    assert response.status_code == 200
    assert response.json() == {"slug": "support", "deployed_version": 1, "previous_version": 3}
    assert Route.objects.get().deployed.number == 1
    event = route_events()[-1]
    assert (event.actor, event.action, event.target) == (
        "token:deployer",
        "route.rollback",
        "support v1",
    )
    assert event.changes["deployed_version"] == {"before": 3, "after": 1}


def test_rollback_to_a_given_version(acme, owner):
    # given
    support = three_versions(acme)
    deploy_route(support, 3, actor="ann")
    # when
    response = owner.post(f"{SUPPORT}/rollback", {"version": 2}, format="json")
    # then
    assert response.json() == {"slug": "support", "deployed_version": 2, "previous_version": 3}
    assert RouteDeployment.objects.latest("id").action == "rollback"


@pytest.mark.parametrize(
    ("operation", "body", "status", "code", "message"),
    [
        ("deploy", {"version": 9}, 404, "version_not_found", "Route 'support' has no version 9."),
        ("rollback", {}, 400, "nothing_to_roll_back",
         "route 'support' is not deployed: nothing to roll back"),
        ("rollback", {"version": 9}, 404, "version_not_found",
         "Route 'support' has no version 9."),
        ("deploy", {"version": 0}, 400, "invalid_request",
         "version: Ensure this value is greater than or equal to 1."),
        ("deploy", {"number": 1}, 400, "invalid_request", "number: is not a field"),
    ],
)  # fmt: skip
def test_a_deploy_or_rollback_that_cannot_be_done_says_why_and_writes_nothing(
    acme, owner, operation, body, status, code, message
):
    # given
    three_versions(acme)
    before = written()
    # when
    response = owner.post(f"{SUPPORT}/{operation}", body, format="json")
    # then
    assert response.status_code == status
    assert (response.json()["error"]["code"], response.json()["error"]["message"]) == (
        code,
        message,
    )
    assert written() == before
    assert Route.objects.get().deployed is None


def test_a_route_with_no_version_has_nothing_to_deploy(acme, owner):
    # given
    Route.objects.create(workspace=acme, slug="support")
    # when
    response = owner.post(f"{SUPPORT}/deploy", {}, format="json")
    # then
    assert response.status_code == 400
    assert response.json()["error"] == {
        "message": "route 'support' has no version to deploy",
        "type": "invalid_request_error",
        "code": "nothing_to_deploy",
        "param": None,
    }
    assert RouteDeployment.objects.count() == 0


def test_deploy_and_rollback_of_an_unknown_route_are_404(acme, owner):
    # when
    deploy = owner.post(f"{ROUTES}/nope/deploy", {}, format="json")
    rollback = owner.post(f"{ROUTES}/nope/rollback", {}, format="json")
    # then
    assert (deploy.status_code, rollback.status_code) == (404, 404)
    assert deploy.json()["error"]["code"] == "route_not_found"
    assert written() == (0, 0, 0, 0)


# Who may --------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["viewer", "member"])
@pytest.mark.parametrize(
    ("path", "body"),
    [(VERSIONS, route(BIG)), (f"{SUPPORT}/deploy", {}), (f"{SUPPORT}/rollback", {"version": 1})],
)
def test_readers_cannot_save_deploy_or_roll_back(acme, role, path, body):
    # given
    support = save_route(acme, route(), actor="ann").route
    save_route(acme, route(BIG), actor="ann")
    deploy_route(support, 2, actor="ann")
    api = client_as(acme, role)
    before = written()
    # when
    response = api.post(path, body, format="json")
    # then
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"
    assert written() == before
    assert Route.objects.get().deployed.number == 2


@pytest.mark.parametrize("role", ["viewer", "member"])
def test_readers_read_routes_versions_and_diffs(acme, role):
    # given
    three_versions(acme)
    api = client_as(acme, role)
    # when
    responses = [
        api.get(ROUTES),
        api.get(SUPPORT),
        api.get(VERSIONS),
        api.get(f"{VERSIONS}/1"),
        api.get(f"{SUPPORT}/diff", {"from": 1, "to": 2}),
    ]
    # then
    assert [r.status_code for r in responses] == [200, 200, 200, 200, 200]


@pytest.mark.parametrize(
    ("method", "path"),
    [("get", SUPPORT), ("get", VERSIONS), ("post", VERSIONS), ("post", f"{SUPPORT}/deploy"),
     ("post", f"{SUPPORT}/rollback"), ("get", f"{SUPPORT}/diff?from=1&to=2")],
)  # fmt: skip
def test_a_token_of_another_workspace_gets_a_404(acme, globex, method, path):
    # given
    three_versions(acme)
    theirs = client_as(globex, "owner")
    before = written()
    # when
    body = route() if method == "post" else None
    response = getattr(theirs, method)(path, body, format="json")
    # then
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "workspace_not_found"
    assert written() == before
