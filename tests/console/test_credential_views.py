"""BYOK credentials in the console (SPEC R-BYOK-1, D-30): an admin adds a provider key
(sealed, audited as `[secret]`), restricts it to models and keys, replaces its rules while
an empty key field keeps the stored key, and deletes it; the page never holds a secret; a
wrong name is a 400 that writes nothing; a viewer may not write."""

from __future__ import annotations

import pytest

from audit.models import AdminEvent
from gateway.config.apply import apply_config
from workspaces.models import ProviderCredential
from workspaces.secrets import Sealed, owner_aad, unseal
from workspaces.services import create_api_key

pytestmark = pytest.mark.django_db
SAVE = "/console/acme/credentials/save"
SECRET = "sk-own-" + "s" * 30


@pytest.fixture(autouse=True)
def catalog(acme) -> None:
    apply_config({"providers": [{"slug": "groq", "name": "Groq", "base_url": "http://127.0.0.1:9"}],
                  "models": [{"slug": "m/x", "capabilities": ["text"], "context_window": 8192}]},
                 actor="test")  # fmt: skip


def _stored_secret(credential: ProviderCredential) -> str:
    from django.conf import settings

    sealed = Sealed(bytes(credential.ciphertext), bytes(credential.nonce), credential.key_id)
    return unseal(sealed, owner_aad("acme", "groq"), settings.SWITCHYARD_ENCRYPTION_KEYS)


def test_r_byok_1_an_admin_adds_restricts_replaces_and_deletes_a_provider_key(acme, people):
    bot = create_api_key(acme, name="bot", actor="test").api_key
    added = people["admin"].post(
        SAVE,
        {
            "provider": "groq",
            "secret": SECRET,
            "allowed_models": "m/x",
            "api_keys": [bot.lookup_id],
        },
    )
    assert added.status_code == 302
    stored = ProviderCredential.objects.get(workspace=acme, provider_slug="groq")
    assert (stored.allowed_models, [k.pk for k in stored.api_keys.all()]) == (["m/x"], [bot.pk])
    assert _stored_secret(stored) == SECRET
    page = people["admin"].get("/console/acme/credentials/").content.decode()
    assert SECRET not in page
    assert "Key stored" in page
    # the rules change, the key field left empty keeps the key
    changed = people["admin"].post(
        SAVE, {"provider": "groq", "secret": "", "managed_fallback": "on"}
    )
    assert changed.status_code == 302
    stored.refresh_from_db()
    assert (stored.managed_fallback, stored.allowed_models, stored.api_keys.count()) == (
        True,
        [],
        0,
    )
    assert _stored_secret(stored) == SECRET
    events = AdminEvent.objects.filter(workspace=acme, target="groq").order_by("id")
    assert [e.action for e in events] == ["credential.create", "credential.update"]
    assert SECRET not in str([e.changes for e in events])
    assert people["admin"].post("/console/acme/credentials/groq/delete").status_code == 302
    assert not ProviderCredential.objects.filter(workspace=acme).exists()


def test_r_byok_1_a_wrong_name_is_a_400_that_writes_nothing(acme, people):
    before = AdminEvent.objects.count()
    for form in ({"provider": "nope", "secret": SECRET},
                 {"provider": "groq", "secret": SECRET, "allowed_models": "m/unknown"},
                 {"provider": "groq", "secret": "  "}):  # fmt: skip
        answer = people["owner"].post(SAVE, form)
        assert answer.status_code == 400, form
        assert SECRET not in answer.content.decode()
    assert not ProviderCredential.objects.exists()
    assert AdminEvent.objects.count() == before


def test_d_30_a_viewer_sees_the_credentials_and_may_not_write_them(acme, people):
    people["owner"].post(SAVE, {"provider": "groq", "secret": SECRET})
    page = people["viewer"].get("/console/acme/credentials/")
    assert b"groq" in page.content
    assert b"Add a provider key" not in page.content
    assert people["viewer"].post(SAVE, {"provider": "groq", "secret": "x" * 20}).status_code == 403
    assert people["viewer"].post("/console/acme/credentials/groq/delete").status_code == 403
    assert ProviderCredential.objects.filter(workspace=acme).count() == 1
