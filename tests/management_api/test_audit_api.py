"""`GET /api/v1/workspaces/{ws}/audit` (SPEC R-OBS-4, R-MGT-1): each kind of admin change —
through the management API, the commands, `manage.py apply` and the rollout guard — is one
event with the before and after of what changed, listed newest first with filters and
cursor pages; never another workspace's event, never a secret."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from audit.cursor import Cursor
from audit.models import AdminEvent
from presets import rollout_guard
from presets.models import Route
from presets.rollout_guard import check_rollout_guards
from routing.models import Model, Provider
from tests.management_api.clients import client_as

# `guarded`, a fixture: a route whose v2 splits traffic onto a guarded canary node
from tests.presets.test_rollout_guard import NOW, guarded, traces  # noqa: F401
from workspaces.models import ApiKey, Workspace
from workspaces.services import create_api_key

pytestmark = pytest.mark.django_db

WS = "/api/v1/workspaces/acme"
AUDIT = f"{WS}/audit"
SECRET, NEW_SECRET = "sk-vault-acme-0123456789", "sk-vault-acme-rotated-9876"
SMALL, BIG = "meta/llama-3.3-70b", "mistral/mistral-large"
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


@pytest.fixture
def acme(db: None) -> Workspace:
    Provider.objects.create(slug="vault", name="Vault", base_url="http://127.0.0.1:9/v1")
    for slug in (SMALL, BIG):
        Model.objects.create(slug=slug, capabilities=["text"])
    return Workspace.objects.create(slug="acme", name="Acme")


@pytest.fixture
def owner(acme: Workspace) -> APIClient:
    return client_as(acme, "owner", "deployer")


@pytest.fixture
def viewer(acme: Workspace) -> APIClient:
    return client_as(acme, "viewer")


def listed(api: APIClient, **params: Any) -> dict[str, Any]:
    response = api.get(AUDIT, params)
    assert response.status_code == 200, response.content
    return response.json()


def events(api: APIClient, action: str) -> list[tuple[str, str, dict[str, Any]]]:
    """(action, target, changes) of the events of `action`, newest first."""
    found = listed(api, action=action, limit=200)["data"]
    return [(event["action"], event["target"], event["changes"]) for event in found]


# Each kind of change is one event with before and after ---------------------------------


def test_r_obs_4_a_key_created_renamed_and_revoked(owner):
    # when
    key = owner.post(f"{WS}/keys", {"name": "ci"}, format="json").json()
    owner.patch(f"{WS}/keys/{key['id']}", {"name": "ci-2"}, format="json")
    owner.delete(f"{WS}/keys/{key['id']}")
    # then
    prefix, revoked_at = f"sk-sy-{key['id']}", ApiKey.objects.get().revoked_at
    assert events(owner, "api_key.*") == [
        ("api_key.revoke", prefix, {"revoked_at": {"before": None,
                                                   "after": revoked_at.isoformat()}}),
        ("api_key.update", prefix, {"name": {"before": "ci", "after": "ci-2"}}),
        ("api_key.create", prefix, {"name": {"before": None, "after": "ci"}}),
    ]  # fmt: skip
    [event] = listed(owner, action="api_key.create")["data"]
    assert set(event) == {"id", "created_at", "actor", "action", "target", "changes"}
    assert event["actor"] == "token:deployer"
    assert key["key"] not in json.dumps(listed(owner))


def test_r_obs_4_a_byok_credential_added_replaced_and_deleted_never_shows_the_key(owner):
    # when
    owner.post(f"{WS}/credentials", {"provider": "vault", "api_key": SECRET}, format="json")
    owner.put(f"{WS}/credentials/vault", {"api_key": NEW_SECRET, "managed_fallback": True},
              format="json")  # fmt: skip
    owner.delete(f"{WS}/credentials/vault")
    # then
    assert events(owner, "credential.*") == [
        ("credential.delete", "vault", {
            "allowed_models": {"before": [], "after": None},
            "api_keys": {"before": [], "after": None},
            "managed_fallback": {"before": True, "after": None},
            "secret": {"before": "[secret]", "after": None},
        }),
        ("credential.update", "vault", {
            "managed_fallback": {"before": False, "after": True},
            "secret": {"before": "[secret]", "after": "[secret]"},
        }),
        ("credential.create", "vault", {
            "allowed_models": {"before": None, "after": []},
            "api_keys": {"before": None, "after": []},
            "managed_fallback": {"before": None, "after": False},
            "secret": {"before": None, "after": "[secret]"},
        }),
    ]  # fmt: skip
    shown = json.dumps(listed(owner))
    assert SECRET not in shown
    assert NEW_SECRET not in shown


def test_r_obs_4_a_preset_and_the_key_settings_that_use_it(acme, owner):
    # given
    key = create_api_key(acme, name="bot", actor="test").api_key
    # when
    owner.post(f"{WS}/presets", {"slug": "support", "default_prompt": "Hi."}, format="json")
    owner.patch(f"{WS}/presets/support", {"default_prompt": "Be brief."}, format="json")
    owner.patch(f"{WS}/keys/{key.lookup_id}", {"preset": "support"}, format="json")
    owner.patch(f"{WS}/keys/{key.lookup_id}", {"preset": None}, format="json")
    owner.delete(f"{WS}/presets/support")
    # then
    assert [(action, changes.get("default_prompt")) for action, _, changes in
            events(owner, "preset.*")] == [
        ("preset.delete", {"before": "Be brief.", "after": None}),
        ("preset.update", {"before": "Hi.", "after": "Be brief."}),
        ("preset.create", {"before": None, "after": "Hi."}),
    ]  # fmt: skip
    assert events(owner, "key_settings.*") == [
        ("key_settings.update", "bot", {"preset": {"before": "support", "after": None}}),
        ("key_settings.create", "bot", {"preset": {"before": None, "after": "support"}}),
    ]


def test_r_obs_4_route_versions_deploys_and_a_rollback(owner):
    # given
    route = {"slug": "support", "start": "pick", "nodes": {"pick": {"type": "model"}}}
    for model in (SMALL, BIG):
        route["nodes"]["pick"]["model"] = model
        owner.post(f"{WS}/routes/support/versions", route, format="json")
    # when
    owner.post(f"{WS}/routes/support/deploy", {"version": 1}, format="json")
    owner.post(f"{WS}/routes/support/deploy", {}, format="json")
    owner.post(f"{WS}/routes/support/rollback", {}, format="json")
    # then
    found = events(owner, "route.*")
    assert [(action, target, changes.get("deployed_version", changes.get("version")))
            for action, target, changes in found] == [
        ("route.rollback", "support v1", {"before": 2, "after": 1}),
        ("route.deploy", "support v2", {"before": 1, "after": 2}),
        ("route.deploy", "support v1", {"before": None, "after": 1}),
        ("route.save", "support v2", {"before": 1, "after": 2}),
        ("route.save", "support v1", {"before": None, "after": 1}),
    ]  # fmt: skip
    assert found[0][2]["diff"] == [f"~ nodes.pick.model: {BIG} → {SMALL}"]


def test_r_obs_4_budgets_and_rate_limits(acme, owner):
    # when
    owner.post(f"{WS}/budgets", {"period": "daily", "usd": 20}, format="json")
    budget = owner.post(f"{WS}/budgets", {"period": "daily", "usd": 25, "alerts": [0.8]},
                        format="json").json()  # fmt: skip
    owner.delete(f"{WS}/budgets/{budget['id']}")
    owner.put(f"{WS}/limits", {"requests_per_minute": 600}, format="json")
    owner.put(f"{WS}/limits", {"requests_per_minute": None}, format="json")
    # then
    assert [(action, changes["limit_micros"]) for action, _, changes in
            events(owner, "budget.*")] == [
        ("budget.delete", {"before": 25_000_000, "after": None}),
        ("budget.update", {"before": 20_000_000, "after": 25_000_000}),
        ("budget.create", {"before": None, "after": 20_000_000}),
    ]  # fmt: skip
    assert events(owner, "rate_limit.*") == [
        ("rate_limit.delete", "*", {"requests_per_minute": {"before": 600, "after": None}}),
        ("rate_limit.create", "*", {"requests_per_minute": {"before": None, "after": 600}}),
    ]


def test_r_obs_4_tokens_users_and_roles_made_on_the_command_line(acme, viewer, monkeypatch):
    # given
    monkeypatch.setenv("SWITCHYARD_USER_PASSWORD", "correct horse battery")
    quiet = {"stdout": io.StringIO()}
    # when
    call_command("createtoken", "--workspace", "acme", "--role", "admin", "--name", "ci", **quiet)
    call_command("createuser", "carol", "--workspace", "acme", "--role", "member", **quiet)
    call_command("createuser", "carol", "--workspace", "acme", "--role", "admin", **quiet)
    # then
    assert [(e["action"], e["target"], e["changes"]) for e in
            listed(viewer, actor="cli:createuser")["data"]] == [
        ("membership.update", "user:carol", {"role": {"before": "member", "after": "admin"}}),
        ("membership.create", "user:carol", {"role": {"before": None, "after": "member"}}),
        ("user.create", "user:carol", {"username": {"before": None, "after": "carol"}}),
    ]  # fmt: skip
    [token] = listed(viewer, actor="cli:createtoken")["data"]
    assert (token["action"], token["changes"]) == ("management_token.create", {
        "name": {"before": None, "after": "ci"}, "role": {"before": None, "after": "admin"},
    })  # fmt: skip


APPLIED = """\
workspaces:
  - slug: acme
    name: Acme
    policy: {routing_mode: MODE}
    credentials:
      - {provider: vault, api_key_env: ACME_VAULT_KEY}
"""


def test_r_obs_4_apply_writes_each_object_s_before_and_after_into_its_workspace_s_log(
    owner, tmp_path, monkeypatch
):
    # given
    monkeypatch.setenv("ACME_VAULT_KEY", SECRET)
    path = tmp_path / "acme.yaml"
    # when
    for mode in ("price", "latency"):
        path.write_text(APPLIED.replace("MODE", mode))
        call_command("apply", "-f", str(path), stdout=io.StringIO())
    # then
    second, first = listed(owner, action="config.apply")["data"]
    assert (second["actor"], second["target"]) == ("cli:apply", "acme.yaml")
    assert second["changes"] == {"objects": [{"kind": "policy", "name": "acme", "changes": {
        "routing_mode": {"before": "price", "after": "latency"}}}]}  # fmt: skip
    created = {(o["kind"], o["name"]): o["changes"] for o in first["changes"]["objects"]}
    assert created[("policy", "acme")]["routing_mode"] == {"before": None, "after": "price"}
    assert created[("credential", "acme/vault")]["api_key"] == {"before": None, "after": "[secret]"}
    assert SECRET not in json.dumps(listed(owner))
    # and each run's own event (counts, the catalog) is in no workspace's log
    assert AdminEvent.objects.filter(action="config.apply", workspace=None).count() == 2


def test_r_obs_4_a_rollback_by_the_rollout_guard_names_the_guard_and_the_versions(guarded):  # noqa: F811
    # given a canary failing a quarter of its requests
    rollout_guard._last_judged.clear()
    traces(guarded, "stable", 200)
    traces(guarded, "canary", 40, errors=10)
    # when
    check_rollout_guards(NOW)
    # then
    [event] = listed(client_as(guarded.workspace, "viewer"), action="route.guard_rollback")["data"]
    assert (event["actor"], event["target"]) == ("rollout-guard", "r v1")
    assert event["changes"]["deployed_version"] == {"before": 2, "after": 1}
    assert event["changes"]["numbers"]["watched_error_rate"] == 0.25
    assert Route.objects.get().deployed.number == 1


# Filters and pages ---------------------------------------------------------------------


@pytest.fixture
def history(acme: Workspace) -> None:
    """Five events a minute apart from T0, oldest first (targets e1…e5)."""
    rows = [("alice", "route.save"), ("alice", "route.deploy"), ("bob", "api_key.create"),
            ("bob", "rate_limit.create"), ("token:ci", "route.rollback")]  # fmt: skip
    for minute, (actor, action) in enumerate(rows):
        at = T0 + timedelta(minutes=minute)
        AdminEvent.objects.create(workspace=acme, actor=actor, action=action,
                                  target=f"e{minute + 1}", created_at=at)  # fmt: skip


@pytest.mark.parametrize(
    ("_case", "params", "expected"),
    [
        ("an action", {"action": "route.deploy"}, ["e2"]),
        ("an action family", {"action": "route.*"}, ["e5", "e2", "e1"]),
        ("an actor", {"actor": "bob"}, ["e4", "e3"]),
        ("a target", {"target": "e3"}, ["e3"]),
        ("since is inclusive", {"since": "2026-01-05T09:03:00Z", "actor": "bob"}, ["e4"]),
        ("until is exclusive", {"until": "2026-01-05T09:02:00+00:00"}, ["e2", "e1"]),
        ("a window, in another zone", {"since": "2026-01-05T10:01:00+01:00",
                                       "until": "2026-01-05T09:04:00Z"}, ["e4", "e3", "e2"]),
        ("filters combine", {"action": "route.*", "actor": "alice", "since": "2026-01-05T09:01Z"},
         ["e2"]),
    ],
)  # fmt: skip
def test_r_obs_4_the_list_filters(history, viewer, _case, params, expected):
    # when
    data = listed(viewer, **params)["data"]
    # then
    assert [event["target"] for event in data] == expected


def test_r_obs_4_an_unencoded_plus_of_an_offset_is_read_as_one(history, viewer):
    response = viewer.get(f"{AUDIT}?until=2026-01-05T10:01:00+01:00")
    assert [event["target"] for event in response.json()["data"]] == ["e1"]


def test_r_obs_4_cursor_pages_have_no_duplicates_and_no_gaps(acme, viewer):
    # given seven events, three of them in the same microsecond
    for index in range(7):
        at = T0 + timedelta(minutes=index // 3)
        AdminEvent.objects.create(workspace=acme, actor="x", action="test.page",
                                  target=str(index), created_at=at)  # fmt: skip
    expected = list(AdminEvent.objects.filter(workspace=acme).order_by("-created_at", "-id")
                    .values_list("id", flat=True))  # fmt: skip
    # when
    pages, cursor = [], ""
    while cursor is not None:
        body = listed(viewer, limit=3, cursor=cursor)
        pages.append([event["id"] for event in body["data"]])
        cursor = body["next_cursor"]
    # then (the viewer's own token is the eighth event)
    assert [len(found) for found in pages] == [3, 3, 2]
    assert [event_id for found in pages for event_id in found] == expected


def test_r_obs_4_another_workspace_s_events_are_neither_listed_nor_reachable(acme, viewer):
    # given
    globex = Workspace.objects.create(slug="globex", name="Globex")
    theirs = client_as(globex, "owner")
    AdminEvent.objects.create(workspace=globex, actor="eve", action="api_key.create", target="x")
    # when
    mine = listed(viewer)["data"]
    refused = theirs.get(AUDIT)
    # then
    assert "eve" not in {event["actor"] for event in mine}
    assert (refused.status_code, refused.json()["error"]["code"]) == (404, "workspace_not_found")


@pytest.mark.parametrize("role", ["owner", "admin", "member", "viewer"])
def test_r_obs_4_every_role_may_read_the_audit_log(acme, role):
    assert client_as(acme, role).get(AUDIT).status_code == 200


def test_r_obs_4_no_token_is_a_401(acme):
    response = APIClient().get(AUDIT)
    assert (response.status_code, response.json()["error"]["code"]) == (401, "invalid_token")


@pytest.mark.parametrize(
    ("params", "param"),
    [
        ({"since": "yesterday"}, "since"),
        ({"since": "2026-01-05T09:00:00"}, "since"),  # no time zone
        ({"since": "2026-01-05T10:00Z", "until": "2026-01-05T09:00Z"}, "until"),
        ({"cursor": "not-a-cursor"}, "cursor"),
        ({"limit": "0"}, "limit"),
        ({"actions": "route.*"}, "actions"),
    ],
)
def test_r_obs_4_a_bad_parameter_is_a_400_naming_it(viewer, params, param):
    # when
    response = viewer.get(AUDIT, params)
    # then
    assert response.status_code == 400
    assert (response.json()["error"]["code"], response.json()["error"]["param"]) == (
        "invalid_request", param,
    )  # fmt: skip


def test_r_obs_4_a_cursor_of_another_list_is_a_400(viewer):
    traces_cursor = Cursor(T0, "2b1f5c0e-8a43-4c8e-9d57-4f3f7f8e2a10").encode()
    response = viewer.get(AUDIT, {"cursor": traces_cursor})
    assert (response.status_code, response.json()["error"]["param"]) == (400, "cursor")


def test_r_obs_4_the_management_schema_describes_the_audit_log(db):
    # when
    schema = APIClient().get("/api/v1/schema/").json()
    # then
    get = schema["paths"]["/api/v1/workspaces/{ws}/audit"]["get"]
    assert {p["name"] for p in get["parameters"]} >= {
        "ws", "action", "actor", "target", "since", "until", "cursor", "limit",
    }  # fmt: skip
    page = get["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert set(schema["components"]["schemas"][page.rsplit("/", 1)[1]]["properties"]) == {
        "object", "data", "next_cursor",
    }  # fmt: skip
    assert set(get["responses"]) == {"200", "400", "401", "403", "404"}
