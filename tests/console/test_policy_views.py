"""The policy editor over HTTP (SPEC R-POL-1, R-MGT-1, D-30): an admin's save goes through
`apply` — the stored policy, an audit event with each changed field's before and after, a
new configuration version for every replica — a wrong value is a 400 with the
validator's message that writes nothing, a viewer reads and may not save, and the preview
answers from the form without writing."""

from __future__ import annotations

import pytest

from audit.models import AdminEvent
from gateway.state.snapshot_load import read_version
from management_api.config_apply import apply_config
from workspaces.models import Policy

pytestmark = pytest.mark.django_db
CATALOG = {
    "providers": [{"slug": s, "name": s, "base_url": "http://127.0.0.1:9"} for s in ("eu", "us")],
    "models": [{"slug": "m/x", "capabilities": ["text"], "context_window": 8192}],
    "endpoints": [
        {"id": "eu-x", "provider": "eu", "model": "m/x", "upstream_model": "x",
         "region": "eu-west-1", "price": {"input": 1, "output": 1},
         "sovereignty_class": "eu-owned"},
        {"id": "us-x", "provider": "us", "model": "m/x", "upstream_model": "x",
         "region": "us-east-1", "price": {"input": 1, "output": 1}, "sovereignty_class": "any"},
    ],
}  # fmt: skip
FORM = {"routing_mode": "price", "max_attempts": "2", "retention": "7d",
        "allowed_residency": ["eu-owned"], "provider_deny": "us"}  # fmt: skip


@pytest.fixture(autouse=True)
def catalog(acme) -> None:
    apply_config(CATALOG, actor="test")


def test_r_pol_1_an_admin_saves_the_policy_through_apply(
    acme, people, django_capture_on_commit_callbacks
):
    version = read_version()
    with django_capture_on_commit_callbacks(execute=True):  # the version bump runs on commit
        response = people["admin"].post("/console/acme/policy/save", FORM)
    assert response.status_code == 302
    stored = Policy.objects.get(workspace=acme)
    assert (stored.routing_mode, stored.max_attempts, stored.retention) == ("price", 2, "7d")
    assert (stored.allowed_residency, stored.provider_deny) == (["eu-owned"], ["us"])
    assert read_version() > version  # every replica's snapshot poll picks it up
    event = AdminEvent.objects.filter(workspace=acme, actor="admin-acme").latest("id")
    assert event.target == "console:policy"
    assert "max_attempts" in str(event.changes)
    page = people["admin"].get("/console/acme/policy/")
    assert b"Policy saved." in page.content
    assert b"1 of 2</b> endpoints of <b>m/x" in page.content


def test_r_pol_1_a_wrong_value_is_a_400_naming_the_field_and_writes_nothing(acme, people):
    before = (Policy.objects.count(), AdminEvent.objects.count(), read_version())
    response = people["owner"].post("/console/acme/policy/save", {**FORM, "max_attempts": "x"})
    assert response.status_code == 400
    assert b"max_attempts:" in response.content
    assert (Policy.objects.count(), AdminEvent.objects.count(), read_version()) == before


def test_d_30_a_viewer_reads_the_policy_and_may_not_save_it(acme, people):
    page = people["viewer"].get("/console/acme/policy/")
    assert page.status_code == 200
    assert b"Save policy" not in page.content
    assert b"<fieldset disabled>" in page.content
    refused = people["viewer"].post("/console/acme/policy/save", FORM)
    assert refused.status_code == 403
    assert not Policy.objects.filter(workspace=acme).exists()
    assert people["outsider"].get("/console/acme/policy/").status_code == 404


def test_r_pol_1_the_preview_shows_the_form_as_it_stands_and_writes_nothing(acme, people):
    before = (AdminEvent.objects.count(), read_version())
    answer = people["viewer"].post("/console/acme/policy/preview", FORM)
    assert answer.status_code == 200
    body = answer.content.decode()
    assert "1 of 2</b> endpoints of <b>m/x</b> remain: eu-x" in body
    assert "us-x — <code>sovereignty_not_allowed</code>" in body
    wrong = people["viewer"].post("/console/acme/policy/preview", {"cooldown_base_s": "-1"})
    assert b"cooldown" in wrong.content
    assert (AdminEvent.objects.count(), read_version()) == before
    assert not Policy.objects.filter(workspace=acme).exists()
