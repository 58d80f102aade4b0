"""`/api/v1/workspaces/{ws}/keys` (SPEC R-MGT-1, R-KEY-1, D-24, R-OBS-4): the secret in the
creating response and never again, no HMAC ever, names unique, every change audited with
who and a before/after, and a user error a 400 that changes nothing."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from audit.models import AdminEvent
from workspaces.keys import secret_matches, split_key
from workspaces.models import ApiKey
from workspaces.services import create_api_key, revoke_api_key

KEYS = "/api/v1/workspaces/acme/keys"
BAD_EXPIRY = "expires_at: Expected a date (2027-06-30) or an ISO datetime (2027-06-30T12:00:00Z)."


@pytest.fixture
def owner(api_as):
    return api_as("owner", name="deployer")


def key_events():
    return list(AdminEvent.objects.filter(action__startswith="api_key.").order_by("id"))


def test_create_returns_the_key_once_with_its_secret(workspace, owner):
    # when
    response = owner.post(KEYS, {"name": "ci"}, format="json")
    # then
    assert response.status_code == 201
    assert response["Cache-Control"] == "no-store"
    body = response.json()
    key = ApiKey.objects.get()
    assert body == {
        "id": key.lookup_id,
        "name": "ci",
        "prefix": f"sk-sy-{key.lookup_id}",
        "status": "active",
        "created_at": key.created_at.isoformat().replace("+00:00", "Z"),
        "expires_at": None,
        "revoked_at": None,
        "allowed_models": [],
        "preset": None,
        "routes": [],
        "settings_expires_at": None,
        "budget": None,
        "limits": None,
        "key": body["key"],
    }
    lookup_id, secret = split_key(body["key"])
    assert lookup_id == key.lookup_id
    assert secret_matches(secret, key.secret_hmac, settings.SWITCHYARD_KEY_PEPPER)


def test_the_secret_and_hmac_never_appear_again(workspace, owner):
    # given
    created = owner.post(KEYS, {"name": "ci"}, format="json").json()
    key = ApiKey.objects.get()
    # when
    later = [
        owner.get(KEYS),
        owner.get(f"{KEYS}/{key.lookup_id}"),
        owner.patch(f"{KEYS}/{key.lookup_id}", {"name": "ci-2"}, format="json"),
    ]
    # then
    secret = created["key"].split("-", 3)[3]
    for response in later:
        assert response.status_code == 200
        assert secret not in response.content.decode()
        assert key.secret_hmac not in response.content.decode()
    assert "key" not in later[1].json()
    assert secret not in json.dumps([e.changes for e in AdminEvent.objects.all()])


def test_create_without_a_name_generates_one(workspace, owner):
    # when
    body = owner.post(KEYS, {}, format="json").json()
    # then
    assert body["name"] == f"key-{body['id']}"


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        ("2027-06-30", datetime(2027, 7, 1, tzinfo=UTC)),  # the end of that day, UTC
        ("2027-06-30T12:00:00+02:00", datetime(2027, 6, 30, 10, tzinfo=UTC)),
        ("2027-06-30T12:00:00", datetime(2027, 6, 30, 12, tzinfo=UTC)),
    ],
)
def test_expiry_is_a_date_or_an_iso_datetime(workspace, owner, sent, stored):
    # when
    response = owner.post(KEYS, {"name": "ci", "expires_at": sent}, format="json")
    # then
    assert response.status_code == 201
    assert ApiKey.objects.get().expires_at == stored


def test_a_past_expiry_is_accepted_and_the_key_is_expired(workspace, owner):
    # when
    body = owner.post(KEYS, {"name": "old", "expires_at": "2020-01-01"}, format="json").json()
    # then
    assert body["status"] == "expired"


def test_creation_is_audited_with_the_token_and_the_values(workspace, owner):
    # when
    body = owner.post(KEYS, {"name": "ci", "expires_at": "2027-06-30"}, format="json").json()
    # then
    (event,) = key_events()
    assert (event.actor, event.action, event.target, event.workspace) == (
        "token:deployer",
        "api_key.create",
        f"sk-sy-{body['id']}",
        workspace,
    )
    assert event.changes == {
        "name": {"before": None, "after": "ci"},
        "expires_at": {"before": None, "after": "2027-07-01T00:00:00+00:00"},
    }


@pytest.mark.parametrize(
    ("_case", "body", "code", "message"),
    [
        ("duplicate name", {"name": "taken"}, "duplicate_name",
         "name: workspace 'acme' already has a key named 'taken'"),
        ("blank name", {"name": ""}, "invalid_request", "name: This field may not be blank."),
        ("long name", {"name": "x" * 101}, "invalid_request",
         "name: Ensure this field has no more than 100 characters."),
        ("bad expiry", {"name": "ci", "expires_at": "soon"}, "invalid_request", BAD_EXPIRY),
        ("impossible date", {"name": "ci", "expires_at": "2027-02-30"}, "invalid_request",
         BAD_EXPIRY),
        ("expiry not a string", {"name": "ci", "expires_at": 20270630}, "invalid_request",
         BAD_EXPIRY),
        ("unknown field", {"name": "ci", "preset": "cheap"}, "invalid_request",
         "preset: is not a field"),
        ("read-only field", {"name": "ci", "revoked_at": None}, "invalid_request",
         "revoked_at: is read-only"),
        ("not an object", ["ci"], "invalid_request",
         "Invalid data. Expected a dictionary, but got list."),
    ],
)  # fmt: skip
def test_a_bad_create_is_a_400_that_writes_nothing(workspace, owner, _case, body, code, message):
    # given
    create_api_key(workspace, name="taken", actor="test")
    before = (ApiKey.objects.count(), AdminEvent.objects.count())
    # when
    response = owner.post(KEYS, body, format="json")
    # then
    assert response.status_code == 400
    assert response.json()["error"]["message"] == message
    assert response.json()["error"]["code"] == code
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert (ApiKey.objects.count(), AdminEvent.objects.count()) == before


def test_malformed_json_is_a_400(workspace, owner):
    # when
    response = owner.post(KEYS, "{", content_type="application/json")
    # then
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "parse_error"
    assert ApiKey.objects.count() == 0


def test_list_shows_the_workspace_keys_newest_first(workspace, other_workspace, owner):
    # given
    now = timezone.now()
    old = create_api_key(workspace, name="old", actor="test").api_key
    ApiKey.objects.filter(pk=old.pk).update(created_at=now - timedelta(days=2))
    gone = create_api_key(workspace, name="gone", actor="test").api_key
    ApiKey.objects.filter(pk=gone.pk).update(created_at=now - timedelta(days=1))
    revoke_api_key(gone, actor="test")
    create_api_key(workspace, name="new", actor="test")
    create_api_key(other_workspace, name="theirs", actor="test")
    # when
    body = owner.get(KEYS).json()
    # then
    assert [(k["name"], k["status"]) for k in body] == [
        ("new", "active"),
        ("gone", "revoked"),
        ("old", "active"),
    ]


def test_an_unknown_key_is_a_404(workspace, owner):
    # when
    response = owner.get(f"{KEYS}/nope")
    # then
    assert response.status_code == 404
    assert response.json()["error"] == {
        "message": "No API key 'nope' in workspace 'acme'.",
        "type": "not_found_error",
        "code": "key_not_found",
        "param": None,
    }


def test_patch_renames_and_audits_before_and_after(workspace, owner):
    # given
    key = create_api_key(workspace, name="ci", actor="test").api_key
    # when
    response = owner.patch(
        f"{KEYS}/{key.lookup_id}", {"name": "ci-2", "expires_at": "2027-06-30"}, format="json"
    )
    # then
    assert response.status_code == 200
    assert (response.json()["name"], response.json()["expires_at"]) == (
        "ci-2",
        "2027-07-01T00:00:00Z",
    )
    key.refresh_from_db()
    assert (key.name, key.expires_at) == ("ci-2", datetime(2027, 7, 1, tzinfo=UTC))
    event = key_events()[-1]
    assert (event.actor, event.action, event.target) == (
        "token:deployer",
        "api_key.update",
        key.prefix,
    )
    assert event.changes == {
        "name": {"before": "ci", "after": "ci-2"},
        "expires_at": {"before": None, "after": "2027-07-01T00:00:00+00:00"},
    }


def test_patch_can_clear_the_expiry(workspace, owner):
    # given
    soon = timezone.now() + timedelta(days=1)
    key = create_api_key(workspace, name="ci", expires_at=soon, actor="test").api_key
    # when
    response = owner.patch(f"{KEYS}/{key.lookup_id}", {"expires_at": None}, format="json")
    # then
    assert response.status_code == 200
    key.refresh_from_db()
    assert key.expires_at is None
    assert key_events()[-1].changes == {"expires_at": {"before": soon.isoformat(), "after": None}}


def test_a_patch_that_changes_nothing_is_not_audited(workspace, owner):
    # given
    key = create_api_key(workspace, name="ci", actor="test").api_key
    # when
    response = owner.patch(f"{KEYS}/{key.lookup_id}", {"name": "ci"}, format="json")
    # then
    assert response.status_code == 200
    assert [e.action for e in key_events()] == ["api_key.create"]


def test_patch_to_a_taken_name_is_a_400_that_changes_nothing(workspace, owner):
    # given
    create_api_key(workspace, name="taken", actor="test")
    key = create_api_key(workspace, name="ci", actor="test").api_key
    # when
    response = owner.patch(
        f"{KEYS}/{key.lookup_id}", {"name": "taken", "expires_at": "2027-06-30"}, format="json"
    )
    # then
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "duplicate_name"
    key.refresh_from_db()
    assert (key.name, key.expires_at) == ("ci", None)
    assert [e.action for e in key_events()] == ["api_key.create", "api_key.create"]


def test_a_revoked_key_cannot_be_changed(workspace, owner):
    # given
    key = create_api_key(workspace, name="ci", actor="test").api_key
    revoke_api_key(key, actor="test")
    # when
    response = owner.patch(f"{KEYS}/{key.lookup_id}", {"name": "again"}, format="json")
    # then
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "key_revoked"
    key.refresh_from_db()
    assert key.name == "ci"


def test_delete_revokes_once_and_audits_it(workspace, owner):
    # given
    key = create_api_key(workspace, name="ci", actor="test").api_key
    # when
    first = owner.delete(f"{KEYS}/{key.lookup_id}")
    again = owner.delete(f"{KEYS}/{key.lookup_id}")
    # then
    assert (first.status_code, first.content) == (204, b"")
    assert again.status_code == 204
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert ApiKey.objects.active().count() == 0
    revocations = [e for e in key_events() if e.action == "api_key.revoke"]
    assert len(revocations) == 1
    assert revocations[0].actor == "token:deployer"
    assert revocations[0].changes == {
        "revoked_at": {"before": None, "after": key.revoked_at.isoformat()}
    }


def test_put_is_not_a_method_of_a_key(workspace, owner):
    # given
    key = create_api_key(workspace, name="ci", actor="test").api_key
    # when
    response = owner.put(f"{KEYS}/{key.lookup_id}", {"name": "x"}, format="json")
    # then
    assert response.status_code == 405
    assert response.json()["error"]["code"] == "method_not_allowed"
    key.refresh_from_db()
    assert key.name == "ci"
