"""BYOK credentials in the console (SPEC R-BYOK-1, D-30, R-BEY-7): an admin adds a provider
key (sealed, audited as `[secret]`), restricts it to models and keys, replaces its rules
while an empty key field keeps the stored key, and deletes it; the page never holds a
secret; a wrong name is a 400 that writes nothing; a viewer may not write; each key shows
the last five minutes of attempts with it, its workspace's alone."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterator

import pytest

from audit.models import AdminEvent
from gateway.state import runtime
from management_api.config_apply import apply_config
from routing.engine.live import Observation, credential_series
from workspaces.credential_services import CredentialRules, create_credential
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


@pytest.fixture
def fresh_runtime() -> Iterator[None]:
    runtime.reset()
    yield
    runtime.reset()


def _live_line(page: str, provider: str) -> str:
    found = re.search(rf'id="live-{provider}">(.*?)</p>', page, re.S)
    assert found is not None, f"no live line for {provider}"
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", found.group(1))).split())


def test_r_bey_7_each_key_shows_its_last_five_minutes_of_attempts(
    acme, globex, people, fresh_runtime
):
    # given acme's keys for groq and vault, three attempts with acme's groq key (one
    # refused) and five refused ones with globex's, as the gateway observed them
    providers = [
        {"slug": s, "name": s, "base_url": "http://127.0.0.1:9"} for s in ("groq", "vault")
    ]
    apply_config({"providers": providers}, actor="test")
    for slug in ("groq", "vault"):
        create_credential(acme, slug, secret=SECRET, rules=CredentialRules(), actor="test")
    now, live = time.time(), runtime.credential_live()
    for ok, latency_ms in ((True, 80.0), (True, 200.0), (False, None)):
        attempt = Observation(at=now, ok=ok, latency_ms=latency_ms, tokens_per_s=None)
        live.observe(credential_series(acme.pk, "groq"), "groq", attempt)
    refused = Observation(at=now, ok=False, latency_ms=None, tokens_per_s=None)
    for _ in range(5):
        live.observe(credential_series(globex.pk, "groq"), "groq", refused)
    # when a viewer opens the page
    page = people["viewer"].get("/console/acme/credentials/").content.decode()
    # then each key shows its own attempts, in per cent and whole ms
    assert _live_line(page, "groq") == (
        "Last 5 minutes with this key: 3 requests · error rate 33.3 % · p50 latency 80 ms"
    )
    assert _live_line(page, "vault") == "Last 5 minutes with this key: no requests"
    assert SECRET not in page
