"""`/api/v1/workspaces/{ws}/credentials` (SPEC R-MGT-1, R-BYOK-1, R-BEY-7, R-OBS-4): a
workspace's own provider keys, sealed as `apply` seals them and never shown again — not in
the response that saved them, not in a list, not in an audit event — with their rules and
the live health the gateway worker knows."""

from __future__ import annotations

import json
import time

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from audit.models import AdminEvent
from gateway.models import ConfigVersion
from gateway.state import runtime
from routing.engine.live import Observation, credential_series
from routing.models import Model, Provider
from workspaces.models import ProviderCredential
from workspaces.secrets import Sealed, owner_aad, unseal
from workspaces.services import create_api_key

CREDENTIALS = "/api/v1/workspaces/acme/credentials"
VAULT = f"{CREDENTIALS}/vault"
SECRET = "sk-vault-acme-0123456789"
NEW_SECRET = "sk-vault-acme-rotated-9876"
HEALTHY = {"status": "ok", "cooling_until": None, "cooling_reason": None,
           "last_failure": None, "last_failure_at": None, "recent_failures": 0,
           "requests": 0, "error_rate": None, "latency_p50_ms": None, "latency_p99_ms": None,
           "ttft_p50_ms": None}  # fmt: skip


@pytest.fixture
def catalog(db):
    for slug in ("vault", "groq"):
        Provider.objects.create(slug=slug, name=slug, base_url="http://127.0.0.1:9/v1")
    for slug in ("acme/vaulted", "acme/other"):
        Model.objects.create(slug=slug)


@pytest.fixture
def owner(api_as, catalog):
    return api_as("owner", name="deployer")


@pytest.fixture
def ci_key(workspace):
    return create_api_key(workspace, name="ci", actor="test").api_key


@pytest.fixture
def fresh_runtime():
    runtime.reset()
    yield
    runtime.reset()


def _create(api, **body):
    return api.post(CREDENTIALS, {"provider": "vault", "api_key": SECRET, **body}, format="json")


def _secret_of(credential: ProviderCredential) -> str:
    sealed = Sealed(bytes(credential.ciphertext), bytes(credential.nonce), credential.key_id)
    aad = owner_aad(credential.workspace.slug, credential.provider_slug)
    return unseal(sealed, aad, settings.SWITCHYARD_ENCRYPTION_KEYS)


def _events():
    return list(AdminEvent.objects.filter(action__startswith="credential.").order_by("id"))


def test_r_byok_1_create_seals_the_key_for_the_workspace_and_shows_it_to_no_one(
    workspace, owner, ci_key
):
    # when
    response = _create(owner, allowed_models=["acme/vaulted"], api_keys=[ci_key.lookup_id],
                       managed_fallback=True)  # fmt: skip
    # then
    assert response.status_code == 201, response.content
    credential = ProviderCredential.objects.get()
    assert response.json() == {
        "provider": "vault",
        "allowed_models": ["acme/vaulted"],
        "api_keys": [ci_key.lookup_id],
        "api_key_names": ["ci"],
        "managed_fallback": True,
        "created_at": credential.created_at.isoformat().replace("+00:00", "Z"),
        "updated_at": credential.updated_at.isoformat().replace("+00:00", "Z"),
        "health": HEALTHY,
    }
    assert _secret_of(credential) == SECRET  # bound to acme and vault (owner_aad)
    assert SECRET not in response.content.decode()
    [event] = _events()
    assert (event.actor, event.action, event.target) == ("token:deployer", "credential.create",
                                                         "vault")  # fmt: skip
    assert event.changes == {
        "allowed_models": {"before": None, "after": ["acme/vaulted"]},
        "api_keys": {"before": None, "after": [ci_key.lookup_id]},
        "managed_fallback": {"before": None, "after": True},
        "secret": {"before": None, "after": "[secret]"},
    }


def test_r_mgt_1_a_write_bumps_the_configuration_version(
    workspace, owner, django_capture_on_commit_callbacks
):
    # given
    before = ConfigVersion.objects.filter(pk=1).values_list("version", flat=True).first() or 0
    # when
    with django_capture_on_commit_callbacks(execute=True):
        assert _create(owner).status_code == 201
    # then every gateway reloads its snapshot
    assert ConfigVersion.objects.get(pk=1).version > before


def test_r_bey_7_the_list_shows_rules_and_health_but_never_the_key(
    workspace, owner, api_as, fresh_runtime
):
    # given a credential whose key the provider just refused (the gateway's own store)
    _create(owner)
    now = time.time()
    runtime.cooldowns().credentials.failure(workspace.pk, "vault", "http_401", 401, now)
    # when a viewer lists them
    response = api_as("viewer").get(CREDENTIALS)
    # then
    assert response.status_code == 200
    [shown] = response.json()
    assert (shown["provider"], shown["allowed_models"], shown["api_keys"]) == ("vault", [], [])
    health = shown["health"]
    assert (health["status"], health["cooling_reason"]) == ("cooling", "auth_or_not_found")
    assert (health["last_failure"], health["recent_failures"]) == ("http_401", 1)
    assert health["cooling_until"] > health["last_failure_at"]
    assert SECRET not in response.content.decode()
    assert "api_key" not in shown


def test_r_bey_7_the_health_carries_the_last_five_minutes_of_attempts_with_the_key(
    workspace, owner, api_as, fresh_runtime
):
    # given a credential, and three attempts with its key the gateway worker saw, one refused
    _create(owner)
    own, now = credential_series(workspace.pk, "vault"), time.time()
    for ok, latency_ms in ((True, 80.0), (True, 200.0), (False, None)):
        attempt = Observation(at=now, ok=ok, latency_ms=latency_ms, tokens_per_s=None)
        runtime.credential_live().observe(own, "vault", attempt)
    # when a viewer lists the credentials
    [shown] = api_as("viewer").get(CREDENTIALS).json()
    # then its health counts them (nearest-rank percentiles, rounded as `/health` rounds)
    assert shown["health"] == {**HEALTHY, "requests": 3, "error_rate": 0.333,
                               "latency_p50_ms": 80.0, "latency_p99_ms": 200.0}  # fmt: skip


def test_r_mgt_1_put_replaces_the_rules_and_keeps_the_key_when_none_is_sent(
    workspace, owner, ci_key
):
    # given
    _create(owner, allowed_models=["acme/vaulted"], api_keys=[ci_key.lookup_id],
            managed_fallback=True)  # fmt: skip
    stored = bytes(ProviderCredential.objects.get().ciphertext)
    # when a PUT sends only one rule
    response = owner.put(VAULT, {"allowed_models": ["acme/other"]}, format="json")
    # then the others take their defaults and the key is the stored one
    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["allowed_models"], body["api_keys"], body["managed_fallback"]) == (
        ["acme/other"], [], False,
    )  # fmt: skip
    credential = ProviderCredential.objects.get()
    assert bytes(credential.ciphertext) == stored
    assert _events()[-1].changes == {
        "allowed_models": {"before": ["acme/vaulted"], "after": ["acme/other"]},
        "api_keys": {"before": [ci_key.lookup_id], "after": []},
        "managed_fallback": {"before": True, "after": False},
    }


def test_r_mgt_1_put_with_a_key_replaces_it_and_audits_that_only(workspace, owner):
    # given
    _create(owner)
    # when
    response = owner.put(VAULT, {"provider": "vault", "api_key": NEW_SECRET}, format="json")
    # then
    assert response.status_code == 200
    assert _secret_of(ProviderCredential.objects.get()) == NEW_SECRET
    assert _events()[-1].changes == {"secret": {"before": "[secret]", "after": "[secret]"}}
    assert NEW_SECRET not in response.content.decode()


def test_r_mgt_1_a_put_that_changes_nothing_writes_no_event(workspace, owner):
    _create(owner)
    assert owner.put(VAULT, {}, format="json").status_code == 200
    assert [e.action for e in _events()] == ["credential.create"]


def test_r_mgt_1_put_cannot_move_a_credential_to_another_provider(workspace, owner):
    _create(owner)
    response = owner.put(VAULT, {"provider": "groq"}, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "provider_mismatch"
    assert ProviderCredential.objects.get().provider_slug == "vault"


def test_r_mgt_1_delete_removes_it_and_says_what_it_had(workspace, owner):
    # given
    _create(owner, managed_fallback=True)
    # when
    response = owner.delete(VAULT)
    # then
    assert response.status_code == 204
    assert not ProviderCredential.objects.exists()
    assert _events()[-1].action == "credential.delete"
    assert _events()[-1].changes == {
        "allowed_models": {"before": [], "after": None},
        "api_keys": {"before": [], "after": None},
        "managed_fallback": {"before": True, "after": None},
        "secret": {"before": "[secret]", "after": None},
    }
    assert owner.delete(VAULT).status_code == 404


def test_r_mgt_1_a_token_of_another_workspace_gets_404_and_changes_nothing(
    workspace, other_workspace, owner, make_token
):
    # given acme's credential, and an owner token of globex
    _create(owner)
    outsider = APIClient()
    outsider.credentials(HTTP_AUTHORIZATION=f"Bearer {make_token('owner', of=other_workspace)}")
    # when / then
    for response in (
        outsider.get(CREDENTIALS),
        outsider.get(VAULT),
        outsider.put(VAULT, {"api_key": "stolen"}, format="json"),
        outsider.delete(VAULT),
        _create(outsider),
    ):
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "workspace_not_found"
    assert _secret_of(ProviderCredential.objects.get()) == SECRET
    assert [e.action for e in _events()] == ["credential.create"]


@pytest.mark.parametrize("role", ["member", "viewer"])
def test_r_mgt_1_member_and_viewer_read_but_cannot_write(workspace, owner, api_as, role):
    # given
    _create(owner)
    reader = api_as(role)
    # when / then
    assert reader.get(CREDENTIALS).status_code == 200
    assert reader.get(VAULT).status_code == 200
    for response in (
        _create(reader, provider="groq"),
        reader.put(VAULT, {"api_key": NEW_SECRET}, format="json"),
        reader.delete(VAULT),
    ):
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "permission_denied"
    assert list(ProviderCredential.objects.values_list("provider_slug", flat=True)) == ["vault"]
    assert _secret_of(ProviderCredential.objects.get()) == SECRET


def test_r_byok_1_unknown_names_are_one_400_that_writes_nothing(workspace, other_workspace, owner):
    # given a key of another workspace
    theirs = create_api_key(other_workspace, name="theirs", actor="test").api_key
    # when
    response = owner.post(CREDENTIALS, {
        "provider": "nope", "api_key": SECRET,
        "allowed_models": ["acme/vaulted", "acme/none"], "api_keys": [theirs.lookup_id],
    }, format="json")  # fmt: skip
    # then
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["param"] == "provider"
    assert error["message"] == (
        "provider: unknown provider 'nope' (not in the catalog); "
        "allowed_models[1]: unknown model 'acme/none'; "
        f"api_keys[0]: no live API key '{theirs.lookup_id}' in workspace 'acme'"
    )
    assert not ProviderCredential.objects.exists()
    assert not _events()


def test_r_mgt_1_a_second_credential_for_a_provider_is_refused(workspace, owner):
    _create(owner)
    response = _create(owner, api_key=NEW_SECRET)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "duplicate_credential"
    assert _secret_of(ProviderCredential.objects.get()) == SECRET


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"provider": "vault"}, "api_key: This field is required."),
        ({"provider": "vault", "api_key": "  "}, "api_key: This field may not be blank."),
        ({"provider": "vault", "api_key": SECRET, "health": {}}, "health: is read-only"),
    ],
)
def test_r_mgt_1_a_bad_body_is_a_400_naming_the_field(workspace, owner, body, problem):
    response = owner.post(CREDENTIALS, body, format="json")
    assert response.status_code == 400
    assert response.json()["error"]["message"] == problem
    assert not ProviderCredential.objects.exists()


def test_r_byok_1_the_secret_is_in_no_response_and_no_event(workspace, owner, api_as):
    # given every way the API answers about a credential
    responses = [
        _create(owner),
        owner.get(CREDENTIALS),
        owner.get(VAULT),
        owner.put(VAULT, {"api_key": NEW_SECRET, "managed_fallback": True}, format="json"),
        api_as("viewer").get(CREDENTIALS),
        owner.get("/api/v1/schema/"),
    ]
    credential = ProviderCredential.objects.get()
    responses.append(owner.delete(VAULT))
    # then neither key nor ciphertext is in any of them or in the audit log
    events = json.dumps([e.changes for e in AdminEvent.objects.all()])
    for text in [r.content.decode() for r in responses] + [events]:
        for secret in (SECRET, NEW_SECRET, bytes(credential.ciphertext).hex()):
            assert secret not in text
