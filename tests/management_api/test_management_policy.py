"""`GET` and `PUT /api/v1/workspaces/{ws}/policy` (SPEC R-MGT-1, R-POL-1, R-OBS-4): the
policy as the `policy:` section of a config file, replaced whole through `apply`'s
validator and writer — every problem in one 400 that writes nothing, an audited change,
a new configuration version."""

from __future__ import annotations

import pytest

from audit.models import AdminEvent
from gateway.state.snapshot_load import read_version
from tests.management_api.clients import client_as
from workspaces.models import Policy, Workspace

pytestmark = pytest.mark.django_db
POLICY = "/api/v1/workspaces/acme/policy"


@pytest.fixture
def acme() -> Workspace:
    return Workspace.objects.create(slug="acme", name="Acme")


def test_r_mgt_1_a_workspace_without_a_policy_reads_the_defaults(acme) -> None:
    shown = client_as(acme, "viewer").get(POLICY)
    assert shown.status_code == 200
    assert shown.json()["routing_mode"] == "balanced"
    assert shown.json()["provider_deny"] == []


def test_r_pol_1_an_admin_replaces_the_policy_audited_and_every_gateway_reloads(
    acme, django_capture_on_commit_callbacks
) -> None:
    # given
    before = read_version()
    body = {"provider_deny": ["cheap"], "routing_mode": "price", "max_attempts": 2,
            "daily_budget": 12.5}  # fmt: skip
    # when
    with django_capture_on_commit_callbacks(execute=True):
        answer = client_as(acme, "admin").put(POLICY, body, format="json")
    # then the policy is stored and shown as the GET shows it
    assert answer.status_code == 200, answer.content
    assert answer.json() == client_as(acme, "viewer").get(POLICY).json()
    stored = Policy.objects.get(workspace=acme)
    assert (stored.provider_deny, stored.routing_mode, stored.max_attempts) == (
        ["cheap"], "price", 2,
    )  # fmt: skip
    assert stored.daily_budget_micros == 12_500_000
    event = AdminEvent.objects.get(workspace=acme, action="config.apply")
    assert event.target == "api:policy"
    assert event.actor == "token:admin-bot"
    (change,) = event.changes["objects"]  # a policy created: every field from None
    assert (change["kind"], change["name"]) == ("policy", "acme")
    assert change["changes"]["routing_mode"] == {"before": None, "after": "price"}
    assert read_version() > before
    # and a second PUT of the same body changes nothing more
    again = client_as(acme, "admin", name="second").put(POLICY, body, format="json")
    assert again.status_code == 200
    assert AdminEvent.objects.filter(workspace=acme, action="config.apply").count() == 1


def test_r_pol_1_a_bad_policy_is_one_400_naming_every_problem_and_writes_nothing(acme) -> None:
    # given a stored policy
    admin = client_as(acme, "admin")
    admin.put(POLICY, {"routing_mode": "price"}, format="json")
    events = AdminEvent.objects.count()
    # when
    bad = admin.put(
        POLICY, {"routing_mode": "fastest", "max_attempts": 0, "colour": "red"}, format="json"
    )
    # then
    assert bad.status_code == 400
    error = bad.json()["error"]
    assert error["code"] == "invalid_policy"
    for field in ("routing_mode", "max_attempts", "colour"):
        assert f"{field}:" in error["message"], (field, error["message"])
    assert Policy.objects.get(workspace=acme).routing_mode == "price"
    assert AdminEvent.objects.count() == events
    not_an_object = admin.put(POLICY, ["price"], format="json")
    assert not_an_object.status_code == 400


def test_d_30_readers_may_not_replace_the_policy(acme) -> None:
    for role in ("member", "viewer"):
        answer = client_as(acme, role).put(POLICY, {"routing_mode": "price"}, format="json")
        assert answer.status_code == 403, role
    assert not Policy.objects.filter(workspace=acme, routing_mode="price").exists()
