"""The settings of a key on `/api/v1/workspaces/{ws}/keys/{id}` (SPEC R-KEY-1, D-24,
R-MGT-1, R-OBS-4): kept by the key's name, shown with the key, changed with PATCH (a preset
and routes of the workspace only), carried along when the key is renamed, every change
audited, and a refused request that writes nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from audit.models import AdminEvent
from presets.models import KeySettings, Preset, Route
from tests.management_api.clients import client_as
from workspaces.models import ApiKey, Workspace
from workspaces.services import create_api_key, revoke_api_key

KEYS = "/api/v1/workspaces/acme/keys"
NO_SETTINGS = {"allowed_models": [], "preset": None, "routes": [], "settings_expires_at": None}


@pytest.fixture
def acme(db: None) -> Workspace:
    return Workspace.objects.create(slug="acme", name="Acme")


@pytest.fixture
def support(acme: Workspace) -> Preset:
    Preset.objects.create(workspace=acme, slug="cheap")
    return Preset.objects.create(workspace=acme, slug="support")


@pytest.fixture
def routes(acme: Workspace) -> None:
    for slug in ("canary", "main"):
        Route.objects.create(workspace=acme, slug=slug)


def key_named(workspace: Workspace, name: str) -> ApiKey:
    return create_api_key(workspace, name=name, actor="test").api_key


def settings_events() -> list[AdminEvent]:
    return list(AdminEvent.objects.filter(action__startswith="key_settings.").order_by("id"))


def rows() -> list[tuple[str, str | None, list[str], list[str]]]:
    found = KeySettings.objects.order_by("name").select_related("preset")
    return [
        (r.name, r.preset.slug if r.preset else None, r.allowed_models, r.routes) for r in found
    ]


def shown(body: dict[str, object]) -> dict[str, object]:
    return {field: body[field] for field in NO_SETTINGS}


def test_a_key_shows_the_settings_of_its_name(acme, owner, support):
    # given
    key = key_named(acme, "support-bot")
    expiry = datetime(2027, 7, 1, tzinfo=UTC)
    KeySettings.objects.create(
        workspace=acme, name="support-bot", preset=support, allowed_models=["meta/*"],
        routes=["main", "canary"], expires_at=expiry,
    )  # fmt: skip
    # when
    body = owner.get(f"{KEYS}/{key.lookup_id}").json()
    # then
    assert shown(body) == {
        "allowed_models": ["meta/*"],
        "preset": "support",
        "routes": ["main", "canary"],
        "settings_expires_at": "2027-07-01T00:00:00Z",
    }
    assert (body["name"], body["expires_at"], body["status"]) == ("support-bot", None, "active")


def test_a_key_without_settings_shows_none(acme, owner):
    # given
    key = key_named(acme, "plain")
    # when
    body = owner.get(f"{KEYS}/{key.lookup_id}").json()
    # then
    assert shown(body) == NO_SETTINGS


def test_the_list_shows_each_key_with_its_settings(acme, globex, owner, support):
    # given
    key_named(acme, "plain")
    key_named(acme, "support-bot")
    KeySettings.objects.create(workspace=acme, name="support-bot", preset=support)
    KeySettings.objects.create(workspace=globex, name="plain", allowed_models=["theirs/*"])
    # when
    body = owner.get(KEYS).json()
    # then
    assert [(k["name"], k["preset"], k["allowed_models"]) for k in body] == [
        ("support-bot", "support", []),
        ("plain", None, []),
    ]


def test_settings_expired_make_the_key_expired(acme, owner):
    # given
    key = key_named(acme, "old")
    past = timezone.now() - timedelta(days=1)
    KeySettings.objects.create(workspace=acme, name="old", expires_at=past)
    # when
    body = owner.get(f"{KEYS}/{key.lookup_id}").json()
    # then
    assert body["status"] == "expired"


def test_patch_sets_the_settings_and_audits_them(acme, owner, support, routes):
    # given
    key = key_named(acme, "support-bot")
    body = {"preset": "support", "allowed_models": ["meta/*"], "routes": ["main", "canary"]}
    # when
    response = owner.patch(f"{KEYS}/{key.lookup_id}", body, format="json")
    # then
    assert response.status_code == 200
    assert shown(response.json()) == {**body, "settings_expires_at": None}
    assert rows() == [("support-bot", "support", ["meta/*"], ["main", "canary"])]
    (event,) = settings_events()
    assert (event.actor, event.action, event.target, event.workspace) == (
        "token:deployer",
        "key_settings.create",
        "support-bot",
        acme,
    )
    assert event.changes == {
        "preset": {"before": None, "after": "support"},
        "allowed_models": {"before": [], "after": ["meta/*"]},
        "routes": {"before": [], "after": ["main", "canary"]},
    }
    assert [e.action for e in AdminEvent.objects.filter(action__startswith="api_key.")] == [
        "api_key.create"
    ]


def test_patch_changes_existing_settings_and_audits_only_what_changed(acme, owner, support):
    # given
    key = key_named(acme, "support-bot")
    KeySettings.objects.create(workspace=acme, name="support-bot", preset=support,
                               allowed_models=["meta/*"])  # fmt: skip
    # when
    response = owner.patch(
        f"{KEYS}/{key.lookup_id}", {"preset": "cheap", "allowed_models": ["meta/*"]}, format="json"
    )
    # then
    assert response.status_code == 200
    assert rows() == [("support-bot", "cheap", ["meta/*"], [])]
    (event,) = settings_events()
    assert (event.action, event.changes) == (
        "key_settings.update",
        {"preset": {"before": "support", "after": "cheap"}},
    )


def test_patch_with_null_clears_the_preset(acme, owner, support):
    # given
    key = key_named(acme, "support-bot")
    KeySettings.objects.create(workspace=acme, name="support-bot", preset=support)
    # when
    response = owner.patch(f"{KEYS}/{key.lookup_id}", {"preset": None}, format="json")
    # then
    assert response.json()["preset"] is None
    assert rows() == [("support-bot", None, [], [])]


def test_settings_that_change_nothing_write_nothing(acme, owner):
    # given
    key = key_named(acme, "plain")
    # when
    response = owner.patch(
        f"{KEYS}/{key.lookup_id}", {"preset": None, "routes": [], "allowed_models": []},
        format="json",
    )  # fmt: skip
    # then
    assert response.status_code == 200
    assert rows() == []
    assert settings_events() == []


def test_unknown_presets_and_routes_are_one_400_that_writes_nothing(acme, globex, owner, routes):
    # given
    Preset.objects.create(workspace=globex, slug="theirs")
    key = key_named(acme, "bot")
    body = {"preset": "theirs", "routes": ["main", "nope"], "allowed_models": ["x/*"]}
    # when
    response = owner.patch(f"{KEYS}/{key.lookup_id}", body, format="json")
    # then
    assert response.status_code == 400
    assert response.json()["error"] == {
        "message": "preset: unknown preset 'theirs' (not in this workspace); "
        "routes[1]: unknown route 'nope' (not in this workspace)",
        "type": "invalid_request_error",
        "code": "invalid_request",
        "param": "preset",
    }
    assert rows() == []
    assert settings_events() == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"preset": "not a slug"}, "preset: Enter a valid \"slug\" consisting of letters, numbers, "
                                   "underscores or hyphens."),
        ({"routes": "main"}, 'routes: Expected a list of items but got type "str".'),
        ({"allowed_models": [""]}, "allowed_models.0: This field may not be blank."),
        ({"settings_expires_at": None}, "settings_expires_at: is read-only"),
    ],
)  # fmt: skip
def test_a_malformed_setting_is_a_400_that_writes_nothing(acme, owner, body, message):
    # given
    key = key_named(acme, "bot")
    # when
    response = owner.patch(f"{KEYS}/{key.lookup_id}", body, format="json")
    # then
    assert response.status_code == 400
    assert response.json()["error"]["message"] == message
    assert rows() == []


def test_create_takes_no_settings(acme, owner, support):
    # when
    response = owner.post(KEYS, {"name": "bot", "preset": "support"}, format="json")
    # then
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "preset: is not a field"
    assert (ApiKey.objects.count(), rows()) == (0, [])


def test_a_key_created_for_a_name_with_settings_shows_them_at_once(acme, owner, support):
    # given settings written for a name before its key exists (D-24)
    KeySettings.objects.create(workspace=acme, name="bot", preset=support)
    # when
    response = owner.post(KEYS, {"name": "bot"}, format="json")
    # then
    assert response.status_code == 201
    assert (response.json()["preset"], response.json()["key"].startswith("sk-sy-")) == (
        "support",
        True,
    )


# Renames ----------------------------------------------------------------------------


def test_a_rename_carries_the_settings_to_the_new_name(acme, owner, support):
    # given
    key = key_named(acme, "bot")
    KeySettings.objects.create(workspace=acme, name="bot", preset=support, routes=[])
    # when
    response = owner.patch(f"{KEYS}/{key.lookup_id}", {"name": "support-bot"}, format="json")
    # then
    assert response.status_code == 200
    assert (response.json()["name"], response.json()["preset"]) == ("support-bot", "support")
    assert rows() == [("support-bot", "support", [], [])]
    events = AdminEvent.objects.exclude(action__startswith="management_token").order_by("id")
    assert [(e.action, e.target, e.changes) for e in events][1:] == [
        ("api_key.update", key.prefix, {"name": {"before": "bot", "after": "support-bot"}}),
        ("key_settings.rename", "support-bot",
         {"name": {"before": "bot", "after": "support-bot"}}),
    ]  # fmt: skip


def test_a_rename_and_new_settings_in_one_patch(acme, owner, support, routes):
    # given
    key = key_named(acme, "bot")
    KeySettings.objects.create(workspace=acme, name="bot", preset=support)
    # when
    response = owner.patch(
        f"{KEYS}/{key.lookup_id}", {"name": "bot-2", "routes": ["main"]}, format="json"
    )
    # then
    assert response.status_code == 200
    assert rows() == [("bot-2", "support", [], ["main"])]
    assert [e.action for e in settings_events()] == ["key_settings.rename", "key_settings.update"]


def test_a_rename_to_a_name_with_settings_of_its_own_is_refused(acme, owner, support):
    # given
    key = key_named(acme, "bot")
    KeySettings.objects.create(workspace=acme, name="bot", preset=support)
    KeySettings.objects.create(workspace=acme, name="taken", allowed_models=["meta/*"])
    events = AdminEvent.objects.count()
    # when
    response = owner.patch(
        f"{KEYS}/{key.lookup_id}", {"name": "taken", "routes": []}, format="json"
    )
    # then
    assert response.status_code == 400
    assert response.json()["error"] == {
        "message": "name: the name 'taken' already has key settings of its own; the settings "
        "of 'bot' would have nowhere to go",
        "type": "invalid_request_error",
        "code": "settings_name_taken",
        "param": "name",
    }
    key.refresh_from_db()
    assert key.name == "bot"
    assert rows() == [("bot", "support", [], []), ("taken", None, ["meta/*"], [])]
    assert AdminEvent.objects.count() == events


def test_a_key_without_settings_renamed_takes_on_those_of_its_new_name(acme, owner, support):
    # given
    key = key_named(acme, "tmp")
    KeySettings.objects.create(workspace=acme, name="bot", preset=support)
    # when
    response = owner.patch(f"{KEYS}/{key.lookup_id}", {"name": "bot"}, format="json")
    # then
    assert response.status_code == 200
    assert response.json()["preset"] == "support"
    assert rows() == [("bot", "support", [], [])]
    assert settings_events() == []


def test_a_refused_rename_moves_no_settings(acme, owner, support, routes):
    # given
    key_named(acme, "taken")
    key = key_named(acme, "bot")
    KeySettings.objects.create(workspace=acme, name="bot", preset=support)
    events = AdminEvent.objects.count()
    # when
    response = owner.patch(
        f"{KEYS}/{key.lookup_id}", {"name": "taken", "routes": ["main"]}, format="json"
    )
    # then
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "duplicate_name"
    assert rows() == [("bot", "support", [], [])]
    assert AdminEvent.objects.count() == events


def test_the_settings_of_a_revoked_key_cannot_be_changed(acme, owner, support):
    # given
    key = key_named(acme, "bot")
    revoke_api_key(key, actor="test")
    # when
    response = owner.patch(f"{KEYS}/{key.lookup_id}", {"preset": "support"}, format="json")
    # then
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "key_revoked"
    assert rows() == []


# Who may --------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["viewer", "member"])
@pytest.mark.parametrize("body", [{"preset": "support"}, {"routes": ["main"]}, {"name": "renamed"}])
def test_readers_cannot_change_settings(acme, support, routes, role, body):
    # given
    key = key_named(acme, "bot")
    KeySettings.objects.create(workspace=acme, name="bot", preset=support)
    api = client_as(acme, role)
    events = AdminEvent.objects.count()
    # when
    response = api.patch(f"{KEYS}/{key.lookup_id}", body, format="json")
    # then
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"
    assert rows() == [("bot", "support", [], [])]
    key.refresh_from_db()
    assert key.name == "bot"
    assert AdminEvent.objects.count() == events


@pytest.mark.parametrize("role", ["viewer", "member"])
def test_readers_see_settings(acme, support, role):
    # given
    key = key_named(acme, "bot")
    KeySettings.objects.create(workspace=acme, name="bot", preset=support)
    # when
    response = client_as(acme, role).get(f"{KEYS}/{key.lookup_id}")
    # then
    assert response.status_code == 200
    assert response.json()["preset"] == "support"


def test_a_token_of_another_workspace_cannot_change_settings(acme, globex, support):
    # given
    key = key_named(acme, "bot")
    theirs = client_as(globex, "owner")
    # when
    response = theirs.patch(f"{KEYS}/{key.lookup_id}", {"preset": "support"}, format="json")
    # then
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "workspace_not_found"
    assert rows() == []
