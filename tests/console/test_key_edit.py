"""Editing a key in the console (SPEC R-KEY-1, D-24): name, expiry, allowed models, preset
and routes through the management API's service (`update_key`): the settings follow a
rename, a preset the workspace lacks is a 400 that writes nothing, a viewer may not."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from audit.models import AdminEvent
from presets.models import KeySettings, Preset
from workspaces.services import create_api_key

pytestmark = pytest.mark.django_db


@pytest.fixture
def key(acme):
    return create_api_key(acme, name="bot", actor="test").api_key


def _url(key) -> str:
    return f"/console/acme/keys/{key.pk}/"


def test_r_key_1_an_admin_edits_a_key_and_its_settings_follow_a_rename(acme, people, key):
    Preset.objects.create(workspace=acme, slug="cheap")
    expires = (datetime.now(UTC) + timedelta(days=30)).date().isoformat()
    form = {"name": "support-bot", "expires_on": expires, "allowed_models": "acme/*, m/x",
            "preset": "cheap", "routes": ""}  # fmt: skip
    assert people["admin"].post(_url(key), form).status_code == 302
    key.refresh_from_db()
    assert (key.name, key.expires_at.date().isoformat()) == ("support-bot", expires)
    settings = KeySettings.objects.get(workspace=acme, name="support-bot")
    assert (settings.allowed_models, settings.preset.slug) == (["acme/*", "m/x"], "cheap")
    assert AdminEvent.objects.filter(workspace=acme, action="api_key.update").exists()
    page = people["viewer"].get(_url(key)).content.decode()
    assert 'value="support-bot"' in page
    assert 'value="acme/*, m/x"' in page


def test_r_key_1_an_unknown_preset_is_a_400_that_writes_nothing(acme, people, key):
    before = AdminEvent.objects.count()
    answer = people["owner"].post(_url(key), {"name": "renamed", "preset": "nope"})
    assert answer.status_code == 400
    assert b"unknown preset" in answer.content
    key.refresh_from_db()
    assert key.name == "bot"
    assert AdminEvent.objects.count() == before


def test_d_30_a_viewer_sees_the_form_disabled_and_may_not_save(acme, people, key):
    page = people["viewer"].get(_url(key))
    assert b"<fieldset disabled>" in page.content
    assert b"Save key" not in page.content
    assert people["viewer"].post(_url(key), {"name": "mine"}).status_code == 403
    key.refresh_from_db()
    assert key.name == "bot"


def test_r_key_1_the_list_shows_when_each_key_was_last_used(acme, people, key):
    from audit.models import RequestTrace

    idle = create_api_key(acme, name="idle", actor="test").api_key
    for minutes in (90, 5, 30):
        RequestTrace.objects.create(
            workspace=acme, api_key=key, request_id=f"r{minutes}", operation="chat.completions",
            requested_model="m/x", status_code=200,
            created_at=datetime(2026, 12, 1, 12, 0, tzinfo=UTC) - timedelta(minutes=minutes),
        )  # fmt: skip
    page = people["viewer"].get("/console/acme/keys/").content.decode()
    row = re.search(r"<tr class=\"active\">\s*<td><code>" + re.escape(key.prefix) + r".*?</tr>",
                    page, re.S)  # fmt: skip
    assert row is not None
    assert "2026-12-01 11:55" in row.group(0)  # the newest of its three
    idle_row = re.search(re.escape(idle.prefix) + r".*?</tr>", page, re.S)
    assert idle_row is not None
    assert "never" in idle_row.group(0)
