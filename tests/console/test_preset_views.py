"""Presets in the console (SPEC R-PRE-1, R-MGT-1, D-30): an admin creates and edits a
preset through `apply` (stored, audited), a wrong value is a 400 that writes nothing, a
viewer reads them — with the keys that use each — and may not save."""

from __future__ import annotations

import pytest

from audit.models import AdminEvent
from presets.models import KeySettings, Preset

pytestmark = pytest.mark.django_db
SAVE = "/console/acme/presets/save"
FORM = {"slug": "support", "allowed_models": "meta/*, acme/tiny", "provider_ignore": "slow",
        "default_prompt": "Be brief.", "default_params": '{"temperature": 0.2}'}  # fmt: skip


def test_r_pre_1_an_admin_creates_then_edits_a_preset(acme, people):
    assert people["admin"].post(SAVE, FORM).status_code == 302
    made = Preset.objects.get(workspace=acme, slug="support")
    assert (made.allowed_models, made.provider_ignore) == (["meta/*", "acme/tiny"], ["slow"])
    assert (made.default_prompt, made.default_params) == ("Be brief.", {"temperature": 0.2})
    assert people["admin"].post(SAVE, {**FORM, "default_prompt": "Be kind."}).status_code == 302
    made.refresh_from_db()
    assert made.default_prompt == "Be kind."
    events = AdminEvent.objects.filter(workspace=acme, target="console:presets")
    assert events.count() == 2
    page = people["admin"].get("/console/acme/presets/")
    assert b"Preset support saved." in page.content


def test_r_pre_1_a_wrong_value_is_a_400_that_writes_nothing(acme, people):
    before = (Preset.objects.count(), AdminEvent.objects.count())
    for wrong in ({**FORM, "slug": "not a slug"}, {**FORM, "default_params": "{temperature"},
                  {**FORM, "default_params": "[1, 2]"}):  # fmt: skip
        answer = people["owner"].post(SAVE, wrong)
        assert answer.status_code == 400, wrong
        assert b'role="alert"' in answer.content
    assert (Preset.objects.count(), AdminEvent.objects.count()) == before


def test_d_30_a_viewer_reads_presets_and_their_keys_and_may_not_save(acme, people):
    preset = Preset.objects.create(workspace=acme, slug="cheap", allowed_models=["acme/*"])
    KeySettings.objects.create(workspace=acme, name="bot", preset=preset)
    page = people["viewer"].get("/console/acme/presets/")
    assert b"Used by: bot" in page.content
    assert b"Save preset" not in page.content
    assert b"New preset" not in page.content
    assert people["viewer"].post(SAVE, FORM).status_code == 403
    assert not Preset.objects.filter(slug="support").exists()
    assert people["outsider"].get("/console/acme/presets/").status_code == 404
