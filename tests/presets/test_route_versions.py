"""Route versions, deploys, rollbacks and diffs (SPEC R-ROUTE-2, D-25, R-OBS-4): through
the service functions every writer uses, against the database."""

from __future__ import annotations

from typing import Any

import pytest

from audit.models import AdminEvent
from presets.models import Route, RouteDeployment, RouteVersion
from presets.services import (
    RouteError,
    deploy_route,
    diff_versions,
    rollback_route,
    save_route,
)
from routing.engine.routes import RouteInvalid
from routing.models import Model, Provider
from workspaces.models import Workspace

pytestmark = pytest.mark.django_db


@pytest.fixture
def acme() -> Workspace:
    Provider.objects.create(slug="groq", name="Groq", base_url="https://groq.example/v1")
    for slug in ("meta/llama-3.3-70b", "mistral/mistral-large"):
        Model.objects.create(slug=slug, capabilities=["text"])
    return Workspace.objects.create(slug="acme", name="ACME")


def route(model: str = "meta/llama-3.3-70b", **extra: Any) -> dict[str, Any]:
    return {"slug": "support", "start": "pick",
            "nodes": {"pick": {"type": "model", "model": model}}, **extra}  # fmt: skip


def test_d_25_saving_makes_numbered_versions_and_an_unchanged_save_makes_none(acme) -> None:
    # when
    first = save_route(acme, route(), actor="ann")
    again = save_route(acme, route(), actor="bob")
    changed = save_route(acme, route("mistral/mistral-large"), actor="bob", message="bigger")
    # then
    assert (first.version.number, first.created) == (1, True)
    assert (again.version.number, again.created) == (1, False)
    assert (changed.version.number, changed.version.author, changed.version.message) == (
        2, "bob", "bigger",
    )  # fmt: skip
    assert RouteVersion.objects.count() == 2
    # and a saved route routes nothing until it is deployed
    assert Route.objects.get().deployed is None


def test_r_route_2_a_version_is_immutable_content_with_its_hash(acme) -> None:
    saved = save_route(acme, route(description="x"), actor="ann")
    stored = RouteVersion.objects.get(pk=saved.version.pk)
    assert stored.content == route(description="x")
    assert len(stored.content_hash) == 64


def test_r_route_1_an_invalid_route_is_refused_with_every_problem_and_writes_nothing(acme):
    bad = {"slug": "support", "start": "nowhere",
           "nodes": {"pick": {"type": "model", "model": "acme/none"}}}  # fmt: skip
    with pytest.raises(RouteInvalid) as refused:
        save_route(acme, bad, actor="ann")
    assert [str(p) for p in refused.value.problems] == [
        "nodes.pick.model: unknown model 'acme/none'",
        "start: unknown node 'nowhere'",
    ]
    assert (Route.objects.count(), AdminEvent.objects.count()) == (0, 0)


def test_d_25_deploy_defaults_to_the_newest_and_rollback_to_the_one_before(acme) -> None:
    # given three versions, v1 then v3 deployed
    save_route(acme, route(), actor="ann")
    save_route(acme, route("mistral/mistral-large"), actor="ann")
    saved = save_route(acme, route(description="third"), actor="ann")
    support = saved.route
    deploy_route(support, 1, actor="ann")
    # when
    deployed = deploy_route(support, actor="ann")
    # then
    assert deployed.number == 3
    # when rolled back without a version
    back = rollback_route(support, actor="bob")
    # then the version deployed before the current one is back
    assert back.number == 1
    assert Route.objects.get().deployed.number == 1
    assert list(RouteDeployment.objects.values_list("version__number", "action")) == [
        (1, "deploy"), (3, "deploy"), (1, "rollback"),
    ]  # fmt: skip
    # and a second rollback goes back to v3 (the one deployed before v1 was again)
    assert rollback_route(support, actor="bob").number == 3


def test_r_obs_4_deploys_and_rollbacks_are_audited_with_the_diff(acme) -> None:
    # given
    support = save_route(acme, route(), actor="ann").route
    save_route(acme, route("mistral/mistral-large"), actor="ann")
    deploy_route(support, 1, actor="ann")
    # when
    deploy_route(support, 2, actor="bob")
    # then
    event = AdminEvent.objects.filter(action="route.deploy").latest("id")
    assert (event.actor, event.target, event.workspace) == ("bob", "support v2", acme)
    assert event.changes["deployed_version"] == {"before": 1, "after": 2}
    assert event.changes["diff"] == [
        "~ nodes.pick.model: meta/llama-3.3-70b → mistral/mistral-large"
    ]


def test_d_25_deploying_the_deployed_version_changes_nothing(acme) -> None:
    support = save_route(acme, route(), actor="ann").route
    deploy_route(support, actor="ann")
    events = AdminEvent.objects.count()
    assert deploy_route(support, actor="ann").number == 1
    assert AdminEvent.objects.count() == events
    assert RouteDeployment.objects.count() == 1


@pytest.mark.parametrize(
    ("act", "message"),
    [
        (lambda r: deploy_route(r, 7, actor="x"), "route 'support' has no version 7"),
        (lambda r: rollback_route(r, actor="x"), "route 'support' is not deployed: nothing to "
                                                 "roll back"),
        (lambda r: diff_versions(r, 1), "route 'support' is not deployed: give the version to "
                                        "compare"),
    ],
)  # fmt: skip
def test_requests_that_cannot_be_carried_out_say_why_and_write_nothing(acme, act, message):
    support = save_route(acme, route(), actor="ann").route
    events = AdminEvent.objects.count()
    with pytest.raises(RouteError) as refused:
        act(support)
    assert str(refused.value) == message
    assert AdminEvent.objects.count() == events


def test_d_25_diff_between_any_two_versions(acme) -> None:
    support = save_route(acme, route(), actor="ann").route
    save_route(acme, route(description="v2"), actor="ann")
    assert diff_versions(support, 1, 2) == ["+ description: v2"]
    assert diff_versions(support, 2, 2) == []
