"""The console's doors (SPEC D-30, R-MGT-1, R-OBS-1): every page for every persona —
owner, admin, member, viewer and an outsider who belongs to another workspace — decided
by the predicate the management API asks, so the two never disagree; an outsider gets
404 and none of the workspace's data; no page ever shows a secret; text from requests
and names renders escaped; sign-in is throttled."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from audit.models import AdminEvent, RequestTrace
from budgets.models import Budget
from console.csp import POLICY
from console.sign_in import MAX_FAILURES
from console.urls import urlpatterns
from management_api.config_apply import apply_config
from presets.services import deploy_route, save_route
from tests.console.conftest import PASSWORD, ROLES
from tests.management_api.clients import client_as
from workspaces.credential_services import CredentialRules, create_credential
from workspaces.models import ApiKey, ProviderCredential, Workspace
from workspaces.permissions import allows
from workspaces.services import create_api_key

pytestmark = pytest.mark.django_db
MANAGED_SECRET = "sk-managed-" + "m" * 24
BYOK_SECRET = "sk-byok-" + "b" * 24
PLANTED_BUDGET_ID = 4242


def _trace(workspace: Workspace, key: ApiKey | None, **fields: Any) -> RequestTrace:
    return RequestTrace.objects.create(
        workspace=workspace, api_key=key, request_id=uuid.uuid4().hex,
        operation="chat.completions", requested_model=fields.pop("requested_model", "m/x"),
        status_code=200, attempts=[{"provider": "p", "endpoint": "e", "status": "ok",
                                    "http_status": 200, "latency_ms": 4}],
        decision=fields.pop("decision", {"decisions": [{"model": "m/x", "reason": "Routed."}]}),
        **fields,
    )  # fmt: skip


# Every console URL of a workspace is one of these, or a page any member may read: a new
# URL is checked without a word here, and a write left out of this table fails the test.
WRITES = {  # URL name -> the action it needs
    "create-key": "edit", "revoke-key": "edit", "save-policy": "edit", "save-preset": "edit",
    "save-credential": "edit", "remove-credential": "edit", "preview-policy": "read",
    "explain": "use", "edit-key": "edit",
    "save-budget": "edit", "delete-budget": "edit", "save-limits": "edit",
    "save-route": "edit", "route-replay": "use", "deploy-route": "edit", "rollback-route": "edit",
}  # fmt: skip
# a form on GET, its write on POST
SHOWN_TOO = {"explain", "edit-key", "deploy-route", "rollback-route"}


def _workspace_urls(workspace: Workspace, trace: RequestTrace, key: ApiKey) -> dict[str, str]:
    """Every console URL of `workspace`, by name: the `<ws>/…` patterns of console/urls.py."""
    values = {"ws": workspace.slug, "trace_id": trace.pk, "key_id": key.pk, "provider": "prov",
              "slug": "r"}  # fmt: skip
    values["budget_id"] = _budget(workspace).pk
    found = {}
    for pattern in urlpatterns:
        names = re.findall(r"<(?:\w+:)?(\w+)>", str(pattern.pattern))
        if "ws" in names:
            found[pattern.name] = reverse(f"console:{pattern.name}",
                                          kwargs={n: values[n] for n in names})  # fmt: skip
    return found


def _budget(workspace: Workspace) -> Budget:
    """The budget `delete-budget` deletes, made again (same id, so same URL) once deleted."""
    return Budget.objects.get_or_create(pk=PLANTED_BUDGET_ID, defaults={
        "workspace": workspace, "period": "weekly", "limit_micros": 1_000_000})[0]  # fmt: skip


def _planted(workspace: Workspace) -> tuple[ApiKey, RequestTrace]:
    key = create_api_key(workspace, name="acme-bot", actor="test").api_key
    apply_config({"providers": [{"slug": "prov", "name": "Prov", "base_url": "http://127.0.0.1:9"}]},
                 actor="test")  # fmt: skip
    create_credential(workspace, "prov", secret=BYOK_SECRET, rules=CredentialRules(), actor="test")
    _route(workspace)
    return key, _trace(workspace, key)


def _route(workspace: Workspace) -> None:
    """Route `r`: v1 deployed, v2 a draft — so deploy and rollback each have a target."""
    for model in ("requested", "auto"):
        content = {"slug": "r", "start": "pick", "nodes": {"pick": {"type": "model",
                                                                   "model": model}}}  # fmt: skip
        saved = save_route(workspace, content, actor="test")
        if model == "requested":
            deploy_route(saved.route, actor="test")


def test_d_30_every_member_reads_every_page_and_an_outsider_gets_404(acme, people):
    key, trace = _planted(acme)
    urls = _workspace_urls(acme, trace, key)
    pages = {n: u for n, u in urls.items() if n not in WRITES or n in SHOWN_TOO}
    assert {"requests", "trace", "keys", "edit-key", "policy", "presets", "credentials",
            "explain", "audit", "routes", "new-route", "route", "route-diff", "deploy-route",
            "rollback-route"} <= set(pages)  # fmt: skip
    for role, browser in people.items():
        for url in pages.values():
            response = browser.get(url)
            expected = 404 if role == "outsider" else 200
            assert response.status_code == expected, (role, url)
            if role == "outsider":
                body = response.content.decode()
                assert "acme-bot" not in body, url
                assert str(trace.pk) not in body, url


def test_d_30_every_write_is_the_predicate_s_and_an_outsider_s_is_a_404(acme, people):
    key, trace = _planted(acme)
    urls = _workspace_urls(acme, trace, key)
    assert set(WRITES) <= set(urls)
    for role, browser in people.items():
        for name, action in WRITES.items():
            if not ProviderCredential.objects.filter(workspace=acme).exists():  # deleted by one
                create_credential(acme, "prov", secret=BYOK_SECRET, rules=CredentialRules(),
                                  actor="test")  # fmt: skip
            _budget(acme)  # deleted by one
            status = browser.post(urls[name], {}).status_code
            if role == "outsider":
                assert status == 404, (role, name)
            elif not allows(role, action):
                assert status == 403, (role, name)
            else:  # allowed: whatever the empty form makes of it, never a refusal
                assert status not in (403, 404), (role, name, status)


def test_d_30_a_signed_out_visitor_is_sent_to_sign_in(acme):
    response = Client().get("/console/acme/requests/")
    assert response.status_code == 302
    assert response["Location"].startswith("/console/sign-in/?next=/console/acme/requests/")


def test_d_30_console_and_management_api_grant_the_same_writes(acme, people):
    """The one predicate: a role may create and revoke a key in the console exactly when
    the management API lets a token of that role."""
    for role in ROLES:
        api_allowed = (
            client_as(acme, role, name=f"api-{role}")
            .post("/api/v1/workspaces/acme/keys", {"name": f"by-api-{role}"}, format="json")
            .status_code
            == 201
        )
        create = people[role].post("/console/acme/keys/new/", {"name": f"by-console-{role}"})
        console_allowed = create.status_code == 200
        assert create.status_code in (200, 403), (role, create.status_code)
        assert console_allowed == api_allowed, role
        made = ApiKey.objects.filter(workspace=acme, name=f"by-console-{role}").exists()
        assert made == console_allowed, role
        target = create_api_key(acme, name=f"target-{role}", actor="test").api_key
        revoke = people[role].post(f"/console/acme/keys/{target.pk}/revoke/")
        target.refresh_from_db()
        assert (target.revoked_at is not None) == api_allowed, role
        assert revoke.status_code == (302 if api_allowed else 403), role


def test_d_30_a_viewer_sees_no_edit_buttons(acme, people):
    create_api_key(acme, name="acme-bot", actor="test")
    viewer, owner = (
        people["viewer"].get("/console/acme/keys/"),
        people["owner"].get("/console/acme/keys/"),
    )
    for button in (b"Create key", b"Revoke"):
        assert button not in viewer.content
        assert button in owner.content


def test_r_key_1_a_new_key_is_shown_once_and_audited(acme, people):
    created = people["admin"].post("/console/acme/keys/new/", {"name": "support-bot"})
    secret = re.search(rb'id="new-key">(sk-sy-[^<]+)<', created.content)
    assert secret is not None
    assert created["Cache-Control"] == "no-store"
    assert ApiKey.objects.get(workspace=acme, name="support-bot").prefix in secret.group(1).decode()
    again = people["admin"].get("/console/acme/keys/")
    assert secret.group(1) not in again.content
    event = AdminEvent.objects.get(workspace=acme, action="api_key.create")
    assert event.actor == "admin-acme"


def test_r_key_1_a_bad_key_form_is_a_400_that_writes_nothing(acme, people):
    create_api_key(acme, name="taken", actor="test")
    before = ApiKey.objects.count(), AdminEvent.objects.count()
    for form in ({"name": "taken"}, {"name": "ok", "expires_on": "soon"},
                 {"name": "ok", "expires_on": "2001-01-01"}):  # fmt: skip
        response = people["owner"].post("/console/acme/keys/new/", form)
        assert response.status_code == 400, form
        assert b'role="alert"' in response.content
    assert (ApiKey.objects.count(), AdminEvent.objects.count()) == before


def test_r_obs_1_no_page_shows_a_secret(acme, people, monkeypatch):
    monkeypatch.setenv("CONSOLE_TEST_MANAGED_KEY", MANAGED_SECRET)
    apply_config({"providers": [{"slug": "prov", "name": "Prov", "base_url": "http://127.0.0.1:9",
                                 "api_key_env": "CONSOLE_TEST_MANAGED_KEY"}]},
                 actor="test")  # fmt: skip
    create_credential(acme, "prov", secret=BYOK_SECRET, rules=CredentialRules(), actor="test")
    made = create_api_key(acme, name="acme-bot", actor="test")
    trace = _trace(acme, made.api_key)
    lookup, _secret = made.plaintext.removeprefix("sk-sy-").split("-", 1)
    planted = [MANAGED_SECRET, BYOK_SECRET, made.plaintext, _secret]
    urls = _workspace_urls(acme, trace, made.api_key)
    pages = [u for n, u in urls.items() if n not in WRITES or n in SHOWN_TOO]
    for url in [*pages, "/console/acme/audit/?action=credential.*"]:
        body = people["owner"].get(url).content.decode()
        for secret in planted:
            assert secret not in body, (url, secret[:8])


def test_r_obs_1_text_from_requests_and_names_renders_escaped(acme, people):
    hostile = "<script>alert(1)</script>"
    key = create_api_key(acme, name="bot", actor="test").api_key
    rejected = [{"endpoint": hostile, "reason": hostile}]
    decision = {"decisions": [{"model": hostile, "reason": hostile, "rejected": rejected}],
                "route": {"nodes": [{"node": hostile, "why": hostile}]}}  # fmt: skip
    trace = _trace(acme, key, requested_model=hostile, session_id=hostile, route="r",
                   decision=decision)  # fmt: skip
    for url in (
        f"/console/acme/requests/?session_id={hostile}",
        f"/console/acme/requests/{trace.pk}/",
    ):
        body = people["viewer"].get(url).content.decode()
        assert "<script>alert" not in body, url
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body, url


def test_console_pages_carry_a_csp_without_inline_script(acme, people):
    response = people["viewer"].get("/console/acme/requests/")
    assert response["Content-Security-Policy"] == POLICY
    assert "script-src 'self'" in POLICY
    assert "unsafe-inline" not in POLICY
    assert re.search(rb"<script(?![^>]*\bsrc=)[^>]*>", response.content) is None


def test_sign_in_is_throttled_per_username_and_address(acme, people):
    browser = Client()
    for _ in range(MAX_FAILURES):
        wrong = browser.post("/console/sign-in/", {"username": "viewer-acme", "password": "no"})
        assert wrong.status_code == 200
    right = browser.post("/console/sign-in/", {"username": "viewer-acme", "password": PASSWORD})
    assert right.status_code == 200
    assert b"Too many failed sign-ins" in right.content
    other = browser.post("/console/sign-in/", {"username": "owner-acme", "password": PASSWORD})
    assert other.status_code == 302


def test_r_obs_1_a_page_of_the_request_log_is_a_fixed_number_of_queries(
    acme, people, django_assert_max_num_queries
):
    keys = [create_api_key(acme, name=f"k{i}", actor="test").api_key for i in range(5)]
    for i in range(60):
        _trace(acme, keys[i % 5])
    with django_assert_max_num_queries(6):  # session, user, memberships, workspace, page, keys
        response = people["viewer"].get("/console/acme/requests/?limit=50")
    assert response.status_code == 200
    assert response.content.count(b"/console/acme/requests/") >= 50
