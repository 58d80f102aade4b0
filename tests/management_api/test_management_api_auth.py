"""Who may call `/api/v1/workspaces/{ws}/…` (SPEC R-MGT-1, D-30, D-3): a management token
of that workspace or a console session with a membership there; every failure to
authenticate is one 401 body; another workspace is a 404, not a 403; the role decides
through the one predicate; a denied request writes nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.middleware.csrf import _get_new_csrf_string
from rest_framework.test import APIClient

from audit.models import AdminEvent
from workspaces.models import ApiKey, ManagementToken, Membership
from workspaces.services import create_api_key, revoke_management_token

KEYS = "/api/v1/workspaces/acme/keys"
INVALID_TOKEN = {
    "error": {
        "message": "Missing or invalid credentials: send `Authorization: Bearer "
        "<management token>` or log in to the console.",
        "type": "authentication_error",
        "code": "invalid_token",
        "param": None,
    }
}
NO_WORKSPACE_ACME = {
    "error": {
        "message": "No workspace 'acme'.",
        "type": "not_found_error",
        "code": "workspace_not_found",
        "param": None,
    }
}


def bearer(value: str) -> APIClient:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=value)
    return api


def test_no_credentials_is_a_401_with_the_bearer_challenge(workspace):
    # when
    response = APIClient().post(KEYS, {"name": "ci"}, format="json")
    # then
    assert response.status_code == 401
    assert response.json() == INVALID_TOKEN
    assert response["WWW-Authenticate"] == 'Bearer realm="switchyard-management"'
    assert ApiKey.objects.count() == 0


@pytest.mark.parametrize(
    ("_case", "header"),
    [
        ("unknown token", "Bearer sy-mt-AAAAAAAAAAAA-" + "s" * 43),
        ("malformed token", "Bearer sy-mt-nope"),
        ("not a token at all", "Bearer hello"),
        ("empty bearer", "Bearer "),
        ("another scheme", "Basic YWRtaW46YWRtaW4="),
    ],
)
def test_every_bad_credential_is_the_same_401(workspace, _case, header):
    # when
    response = bearer(header).post(KEYS, {"name": "ci"}, format="json")
    # then
    assert response.status_code == 401
    assert response.json() == INVALID_TOKEN
    assert ApiKey.objects.count() == 0


def test_an_api_key_is_not_a_management_token(workspace):
    # given
    key = create_api_key(workspace, name="app", actor="test").plaintext
    # when
    response = bearer(f"Bearer {key}").get(KEYS)
    # then
    assert response.status_code == 401
    assert response.json() == INVALID_TOKEN


def test_a_revoked_token_is_the_same_401(workspace, make_token):
    # given
    raw = make_token("owner", name="old")
    assert bearer(f"Bearer {raw}").get(KEYS).status_code == 200
    revoke_management_token(ManagementToken.objects.get(name="old"), actor="test")
    # when
    response = bearer(f"Bearer {raw}").post(KEYS, {"name": "ci"}, format="json")
    # then
    assert response.status_code == 401
    assert response.json() == INVALID_TOKEN
    assert ApiKey.objects.count() == 0


def test_a_token_of_another_workspace_gets_a_404_like_a_missing_workspace(
    workspace, other_workspace, make_token
):
    # given
    outsider = bearer(f"Bearer {make_token('owner', of=other_workspace)}")
    create_api_key(workspace, name="app", actor="test")
    events = AdminEvent.objects.count()
    # when
    listed = outsider.get(KEYS)
    created = outsider.post(KEYS, {"name": "ci"}, format="json")
    missing = outsider.get("/api/v1/workspaces/nope/keys")
    # then
    assert (listed.status_code, created.status_code) == (404, 404)
    assert listed.json() == created.json() == NO_WORKSPACE_ACME
    assert missing.json()["error"]["code"] == "workspace_not_found"
    assert list(ApiKey.objects.values_list("name", flat=True)) == ["app"]
    assert AdminEvent.objects.count() == events


def test_a_key_of_another_workspace_is_not_found_in_mine(workspace, other_workspace, api_as):
    # given
    theirs = create_api_key(other_workspace, name="theirs", actor="test").api_key
    # when
    response = api_as("owner").delete(f"{KEYS}/{theirs.lookup_id}")
    # then
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "key_not_found"
    theirs.refresh_from_db()
    assert theirs.revoked_at is None


@pytest.mark.parametrize("role", ["viewer", "member"])
def test_readers_read(workspace, api_as, role):
    # given
    key = create_api_key(workspace, name="app", actor="test").api_key
    api = api_as(role)
    # when
    listed = api.get(KEYS)
    one = api.get(f"{KEYS}/{key.lookup_id}")
    # then
    assert listed.status_code == 200
    assert [k["name"] for k in listed.json()] == ["app"]
    assert one.status_code == 200


@pytest.mark.parametrize("role", ["viewer", "member"])
def test_readers_cannot_create(workspace, api_as, role):
    # given
    api = api_as(role)
    events = AdminEvent.objects.count()
    # when
    response = api.post(KEYS, {"name": "ci"}, format="json")
    # then
    assert response.status_code == 403
    assert response.json()["error"] == {
        "message": f"Role {role!r} may not edit in workspace 'acme' "
        "(owner and admin edit, member reads and uses, viewer reads).",
        "type": "permission_error",
        "code": "permission_denied",
        "param": None,
    }
    assert ApiKey.objects.count() == 0
    assert AdminEvent.objects.count() == events


@pytest.mark.parametrize(
    ("role", "method", "body"),
    [
        ("member", "delete", None),
        ("member", "patch", {"name": "renamed"}),
        ("viewer", "delete", None),
        ("viewer", "patch", {"name": "renamed"}),
    ],
)
def test_readers_cannot_change_or_revoke(workspace, api_as, role, method, body):
    # given
    key = create_api_key(workspace, name="app", actor="test").api_key
    api = api_as(role)
    events = AdminEvent.objects.count()
    # when
    response = getattr(api, method)(f"{KEYS}/{key.lookup_id}", body, format="json")
    # then
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"
    key.refresh_from_db()
    assert (key.name, key.revoked_at) == ("app", None)
    assert AdminEvent.objects.count() == events


@pytest.mark.parametrize("role", ["owner", "admin"])
def test_owners_and_admins_edit(workspace, api_as, role):
    # when
    response = api_as(role).post(KEYS, {"name": "ci"}, format="json")
    # then
    assert response.status_code == 201
    assert ApiKey.objects.get().name == "ci"


def test_using_a_token_stamps_its_last_use(workspace, api_as):
    # given
    api = api_as("viewer", name="grafana")
    # when
    api.get(KEYS)
    # then
    assert ManagementToken.objects.get(name="grafana").last_used_at is not None


# The console's session --------------------------------------------------------------


def session_of(username: str, *, csrf: bool) -> APIClient:
    user = get_user_model().objects.get(username=username)
    api = APIClient(enforce_csrf_checks=True)
    api.force_login(user)
    if csrf:
        secret = _get_new_csrf_string()
        api.cookies["csrftoken"] = secret
        api.credentials(HTTP_X_CSRFTOKEN=secret)
    return api


@pytest.fixture
def alice(workspace):
    user = get_user_model().objects.create_user("alice", password="irrelevant-here")
    Membership.objects.create(user=user, workspace=workspace, role="admin")
    return user


def test_a_member_session_reads_with_its_membership_role(alice):
    # when
    response = session_of("alice", csrf=False).get(KEYS)
    # then
    assert response.status_code == 200


def test_a_session_write_needs_the_csrf_token(alice):
    # when
    response = session_of("alice", csrf=False).post(KEYS, {"name": "ci"}, format="json")
    # then
    assert response.status_code == 403
    assert response.json()["error"]["message"].startswith("CSRF Failed")
    assert ApiKey.objects.count() == 0
    assert AdminEvent.objects.count() == 0


def test_a_session_write_with_the_csrf_token_is_audited_with_the_username(alice):
    # when
    response = session_of("alice", csrf=True).post(KEYS, {"name": "ci"}, format="json")
    # then
    assert response.status_code == 201
    assert AdminEvent.objects.get().actor == "alice"


def test_a_session_without_a_membership_there_gets_a_404(alice, other_workspace):
    # when
    response = session_of("alice", csrf=False).get("/api/v1/workspaces/globex/keys")
    # then
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "workspace_not_found"


def test_a_viewer_session_cannot_write_even_with_csrf(workspace):
    # given
    user = get_user_model().objects.create_user("vic", password="irrelevant-here")
    Membership.objects.create(user=user, workspace=workspace, role="viewer")
    # when
    response = session_of("vic", csrf=True).post(KEYS, {"name": "ci"}, format="json")
    # then
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"
    assert ApiKey.objects.count() == 0
