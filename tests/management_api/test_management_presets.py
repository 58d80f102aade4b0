"""`/api/v1/workspaces/{ws}/presets` (SPEC R-MGT-1, R-PRE-1, R-OBS-4): presets validated by
the rules `manage.py apply` uses, every change audited with who and a before/after, a
preset that key settings use never deleted, and a refused request that writes nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from audit.models import AdminEvent
from declarative.fields import ConfigError
from management_api.config_apply import apply_config
from presets.models import KeySettings, Preset
from tests.management_api.clients import client_as
from workspaces.models import Membership, Workspace

PRESETS = "/api/v1/workspaces/acme/presets"
SUPPORT = f"{PRESETS}/support"
FULL = {
    "slug": "support",
    "allowed_models": ["meta/*", "anthropic/*"],
    "provider_allow": ["groq"],
    "provider_ignore": ["fake-us"],
    "default_prompt": "You answer ACME support questions.",
    "default_params": {"temperature": 0.2},
}
DEFAULTS = {
    "allowed_models": [],
    "provider_allow": [],
    "provider_ignore": [],
    "default_prompt": "",
    "default_params": {},
}


@pytest.fixture
def acme(db: None) -> Workspace:
    return Workspace.objects.create(slug="acme", name="Acme")


def make_preset(workspace: Workspace, slug: str = "support", **values: object) -> Preset:
    return Preset.objects.create(workspace=workspace, slug=slug, **values)


def preset_events() -> list[AdminEvent]:
    return list(AdminEvent.objects.filter(action__startswith="preset.").order_by("id"))


def stored(preset: Preset) -> dict[str, object]:
    preset.refresh_from_db()
    return {"slug": preset.slug, **{field: getattr(preset, field) for field in DEFAULTS}}


def test_create_stores_the_preset_and_audits_every_field(acme, owner):
    # when
    response = owner.post(PRESETS, FULL, format="json")
    # then
    assert response.status_code == 201
    assert response.json() == FULL
    assert stored(Preset.objects.get(workspace=acme)) == FULL
    (event,) = preset_events()
    assert (event.actor, event.action, event.target, event.workspace) == (
        "token:deployer",
        "preset.create",
        "support",
        acme,
    )
    assert event.changes == {field: {"before": None, "after": v} for field, v in FULL.items()}


def test_create_with_the_slug_alone_takes_the_defaults(acme, owner):
    # when
    response = owner.post(PRESETS, {"slug": "bare"}, format="json")
    # then
    assert response.status_code == 201
    assert response.json() == {"slug": "bare", **DEFAULTS}
    assert preset_events()[0].changes == {
        field: {"before": None, "after": value}
        for field, value in {"slug": "bare", **DEFAULTS}.items()
    }


@pytest.mark.parametrize(
    ("_case", "body", "message", "param"),
    [
        ("no slug", {"default_prompt": "hi"}, "slug: is required", "slug"),
        ("bad slug", {"slug": "not a slug"}, "slug: 'not a slug' is not a slug", "slug"),
        ("unknown key", {"slug": "s", "allowed_model": ["x"]},
         "allowed_model: unknown key (did you mean 'allowed_models'?)", "allowed_model"),
        ("not a list", {"slug": "s", "provider_allow": "groq"}, "provider_allow: must be a list",
         "provider_allow"),
        ("every problem", {"slug": 5, "allowed_models": ["", "meta/*"], "default_prompt": 1},
         "slug: must be a string (quote it: \"5\"); allowed_models[0]: must be a non-empty "
         "string; default_prompt: must be a string (quote it: \"1\")", "slug"),
        ("params not a mapping", {"slug": "s", "default_params": [1]},
         "default_params: must be a mapping", "default_params"),
        ("long prompt", {"slug": "s", "default_prompt": "x" * 100_001},
         "default_prompt: must be at most 100000 characters", "default_prompt"),
        ("not an object", ["support"], "(top level): must be a mapping", None),
    ],
)  # fmt: skip
def test_a_bad_preset_is_a_400_listing_every_problem_and_writes_nothing(
    acme, owner, _case, body, message, param
):
    # when
    response = owner.post(PRESETS, body, format="json")
    # then
    assert response.status_code == 400
    assert response.json()["error"] == {
        "message": message,
        "type": "invalid_request_error",
        "code": "invalid_request",
        "param": param,
    }
    assert (Preset.objects.count(), preset_events()) == (0, [])


def test_the_api_refuses_a_preset_with_the_words_of_apply(acme, owner):
    # given the same bad preset, in a file and in a body
    bad = {"slug": "s", "allowed_models": [""], "default_params": {"when": {1, 2}}}
    with pytest.raises(ConfigError) as refused:
        apply_config({"workspaces": [{"slug": "acme", "presets": [bad]}]}, actor="test")
    # when
    response = owner.post(PRESETS, {"slug": "s", "allowed_models": [""]}, format="json")
    # then
    assert "workspaces[0].presets[0].allowed_models[0]: must be a non-empty string" in (
        refused.value.errors
    )
    assert response.json()["error"]["message"] == "allowed_models[0]: must be a non-empty string"


def test_a_taken_slug_is_a_400_that_changes_nothing(acme, owner):
    # given
    make_preset(acme, default_prompt="the first")
    # when
    response = owner.post(PRESETS, {"slug": "support"}, format="json")
    # then
    assert response.status_code == 400
    assert response.json()["error"] == {
        "message": "slug: workspace 'acme' already has a preset 'support'",
        "type": "invalid_request_error",
        "code": "duplicate_slug",
        "param": "slug",
    }
    assert list(Preset.objects.values_list("default_prompt", flat=True)) == ["the first"]
    assert preset_events() == []


def test_list_shows_the_workspace_presets_by_slug(acme, globex, owner):
    # given
    make_preset(acme, "zeta")
    make_preset(acme, "alpha", allowed_models=["meta/*"])
    make_preset(globex, "theirs")
    # when
    response = owner.get(PRESETS)
    # then
    assert response.status_code == 200
    assert response.json() == [
        {"slug": "alpha", **DEFAULTS, "allowed_models": ["meta/*"]},
        {"slug": "zeta", **DEFAULTS},
    ]


def test_get_shows_one_preset(acme, owner):
    # given
    make_preset(acme, **{k: v for k, v in FULL.items() if k != "slug"})
    # when
    response = owner.get(SUPPORT)
    # then
    assert response.status_code == 200
    assert response.json() == FULL


def test_an_unknown_preset_is_a_404(acme, owner):
    # when
    response = owner.get(f"{PRESETS}/nope")
    # then
    assert response.status_code == 404
    assert response.json()["error"] == {
        "message": "No preset 'nope' in workspace 'acme'.",
        "type": "not_found_error",
        "code": "preset_not_found",
        "param": None,
    }


def test_put_replaces_the_whole_preset_and_audits_what_changed(acme, owner):
    # given
    preset = make_preset(acme, **{k: v for k, v in FULL.items() if k != "slug"})
    # when
    response = owner.put(SUPPORT, {"default_prompt": "Be brief."}, format="json")
    # then absent fields take their defaults, as in `apply`
    assert response.status_code == 200
    assert response.json() == {"slug": "support", **DEFAULTS, "default_prompt": "Be brief."}
    assert stored(preset) == response.json()
    (event,) = preset_events()
    assert (event.actor, event.action, event.target) == (
        "token:deployer",
        "preset.update",
        "support",
    )
    assert event.changes == {
        "allowed_models": {"before": ["meta/*", "anthropic/*"], "after": []},
        "provider_allow": {"before": ["groq"], "after": []},
        "provider_ignore": {"before": ["fake-us"], "after": []},
        "default_prompt": {"before": FULL["default_prompt"], "after": "Be brief."},
        "default_params": {"before": {"temperature": 0.2}, "after": {}},
    }


def test_patch_changes_only_the_fields_it_names(acme, owner):
    # given
    preset = make_preset(acme, **{k: v for k, v in FULL.items() if k != "slug"})
    # when
    response = owner.patch(SUPPORT, {"provider_ignore": []}, format="json")
    # then
    assert response.status_code == 200
    assert response.json() == {**FULL, "provider_ignore": []}
    assert stored(preset) == {**FULL, "provider_ignore": []}
    assert [e.changes for e in preset_events()] == [
        {"provider_ignore": {"before": ["fake-us"], "after": []}}
    ]


def test_a_change_that_changes_nothing_is_not_audited(acme, owner):
    # given
    make_preset(acme, default_prompt="same")
    # when
    patched = owner.patch(SUPPORT, {"default_prompt": "same"}, format="json")
    put = owner.put(SUPPORT, {"slug": "support", "default_prompt": "same"}, format="json")
    # then
    assert (patched.status_code, put.status_code) == (200, 200)
    assert preset_events() == []


@pytest.mark.parametrize("method", ["put", "patch"])
def test_the_slug_of_a_preset_does_not_change(acme, owner, method):
    # given
    preset = make_preset(acme, default_prompt="kept")
    body = {"slug": "other", "default_prompt": "x"}
    # when
    response = getattr(owner, method)(SUPPORT, body, format="json")
    # then
    assert response.status_code == 400
    assert response.json()["error"] == {
        "message": "slug: 'other' is not the preset of the URL ('support'); a preset's slug "
        "does not change",
        "type": "invalid_request_error",
        "code": "slug_mismatch",
        "param": "slug",
    }
    assert stored(preset)["default_prompt"] == "kept"
    assert preset_events() == []


def test_a_bad_patch_is_a_400_that_changes_nothing(acme, owner):
    # given
    preset = make_preset(acme, allowed_models=["meta/*"])
    # when
    response = owner.patch(SUPPORT, {"allowed_models": "meta/*", "colour": "red"}, format="json")
    # then
    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        "colour: unknown key; allowed_models: must be a list"
    )
    assert stored(preset)["allowed_models"] == ["meta/*"]
    assert preset_events() == []


def test_delete_removes_the_preset_and_audits_what_it_was(acme, owner):
    # given
    make_preset(acme, default_prompt="gone soon")
    # when
    response = owner.delete(SUPPORT)
    # then
    assert (response.status_code, response.content) == (204, b"")
    assert Preset.objects.count() == 0
    (event,) = preset_events()
    assert (event.actor, event.action, event.target) == (
        "token:deployer",
        "preset.delete",
        "support",
    )
    assert event.changes == {
        "slug": {"before": "support", "after": None},
        "allowed_models": {"before": [], "after": None},
        "provider_allow": {"before": [], "after": None},
        "provider_ignore": {"before": [], "after": None},
        "default_prompt": {"before": "gone soon", "after": None},
        "default_params": {"before": {}, "after": None},
    }


def test_deleting_a_preset_that_key_settings_use_is_refused(acme, owner):
    # given
    preset = make_preset(acme)
    KeySettings.objects.create(workspace=acme, name="support-bot", preset=preset)
    KeySettings.objects.create(workspace=acme, name="chat", preset=preset)
    # when
    response = owner.delete(SUPPORT)
    # then
    assert response.status_code == 400
    assert response.json()["error"] == {
        "message": "preset 'support' is used by the settings of the key(s) 'chat', "
        "'support-bot'; give them another preset (or none) first",
        "type": "invalid_request_error",
        "code": "preset_in_use",
        "param": None,
    }
    assert Preset.objects.filter(pk=preset.pk).exists()
    assert KeySettings.objects.filter(preset=preset).count() == 2
    assert preset_events() == []


@pytest.mark.parametrize("role", ["viewer", "member"])
@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", PRESETS, {"slug": "new"}),
        ("put", SUPPORT, {"default_prompt": "changed"}),
        ("patch", SUPPORT, {"default_prompt": "changed"}),
        ("delete", SUPPORT, None),
    ],
)
def test_readers_cannot_write_presets(acme, role, method, path, body):
    # given
    preset = make_preset(acme, default_prompt="kept")
    api = client_as(acme, role)
    events = AdminEvent.objects.count()
    # when
    response = getattr(api, method)(path, body, format="json")
    # then
    assert response.status_code == 403
    assert response.json()["error"]["message"] == (
        f"Role {role!r} may not edit in workspace 'acme' "
        "(owner and admin edit, member reads and uses, viewer reads)."
    )
    assert list(Preset.objects.values_list("slug", flat=True)) == ["support"]
    assert stored(preset)["default_prompt"] == "kept"
    assert AdminEvent.objects.count() == events


@pytest.mark.parametrize("role", ["viewer", "member"])
def test_readers_read_presets(acme, role):
    # given
    make_preset(acme)
    api = client_as(acme, role)
    # when
    listed, one = api.get(PRESETS), api.get(SUPPORT)
    # then
    assert (listed.status_code, one.status_code) == (200, 200)
    assert [p["slug"] for p in listed.json()] == ["support"]


@pytest.mark.parametrize("role", ["owner", "admin"])
def test_owners_and_admins_edit_presets(acme, role):
    # when
    response = client_as(acme, role).post(PRESETS, {"slug": "new"}, format="json")
    # then
    assert response.status_code == 201
    assert list(Preset.objects.values_list("slug", flat=True)) == ["new"]


@pytest.mark.parametrize(
    ("method", "body"), [("get", None), ("delete", None), ("post", {"slug": "x"})]
)
def test_a_token_of_another_workspace_gets_a_404(acme, globex, method, body):
    # given
    make_preset(acme)
    theirs = client_as(globex, "owner")
    path = SUPPORT if method != "post" else PRESETS
    # when
    response = getattr(theirs, method)(path, body, format="json")
    # then
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "workspace_not_found"
    assert list(Preset.objects.values_list("slug", flat=True)) == ["support"]
    assert preset_events() == []


def test_a_session_write_needs_the_csrf_token(acme):
    # given
    user = get_user_model().objects.create_user("alice", password="irrelevant-here")
    Membership.objects.create(user=user, workspace=acme, role="admin")
    api = APIClient(enforce_csrf_checks=True)
    api.force_login(user)
    # when
    response = api.post(PRESETS, {"slug": "new"}, format="json")
    # then
    assert response.status_code == 403
    assert response.json()["error"]["message"].startswith("CSRF Failed")
    assert Preset.objects.count() == 0
    assert AdminEvent.objects.count() == 0
