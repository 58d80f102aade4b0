"""BYOK on the request path (SPEC R-BYOK-1): a workspace's own provider key is used for
that workspace's calls to that provider, and only for them."""

from __future__ import annotations

import hashlib

import openai
import orjson
import pytest

from fakeupstream.process import running_fake_upstream
from tests.live.installation import UPSTREAM_KEY
from workspaces.secrets import owner_aad

pytestmark = pytest.mark.live

BYOK_SECRET = "byok-secret-of-acme"
MESSAGES = [{"role": "user", "content": "hi"}]


def test_r_byok_1_workspace_key_is_used_for_its_own_calls_only(fresh_live):
    # given a provider that only accepts ACME's own key; its managed key is the shared one
    with (
        running_fake_upstream("fast", name="vault", api_key=BYOK_SECRET) as vault,
        fresh_live.applied(
            f"""
providers:
  - {{slug: vault, name: Vault, base_url: "{vault.base_url}", api_key_env: LIVE_UPSTREAM_KEY}}
models:
  - {{slug: acme/vaulted, capabilities: [text], context_window: 8192}}
endpoints:
  - {{id: vault-vaulted, provider: vault, model: acme/vaulted, upstream_model: v, region: r,
      price: {{input: 0.1, output: 0.1}}}}
workspaces:
  - slug: acme
    name: ACME
    credentials:
      - {{provider: vault, api_key_env: ACME_VAULT_KEY}}
""",
            env_extra={"ACME_VAULT_KEY": BYOK_SECRET},
        ),
    ):
        acme = openai.OpenAI(base_url=fresh_live.base_url, api_key=fresh_live.keys["acme"],
                             max_retries=0)  # fmt: skip
        other = openai.OpenAI(base_url=fresh_live.base_url, api_key=fresh_live.keys["other"],
                              max_retries=0)  # fmt: skip
        fresh_live.wait_for_model(acme, "acme/vaulted")
        # when ACME calls it
        reply = acme.chat.completions.create(model="acme/vaulted", messages=MESSAGES)
        # then the upstream saw ACME's key (the fake keeps only a hash of the header)
        assert reply.model_extra["switchyard"]["provider"] == "vault"
        sent = vault.stats()["last_request"]["headers"]["authorization"]
        assert sent == hashlib.sha256(f"Bearer {BYOK_SECRET}".encode()).hexdigest()
        # and another workspace's call goes out with the managed key, which this upstream
        # refuses: nothing of ACME's credential leaks into other tenants' requests
        with pytest.raises(openai.APIStatusError) as caught:
            other.chat.completions.create(model="acme/vaulted", messages=MESSAGES)
        assert caught.value.body["attempts"][0]["http_status"] == 401
        sent = vault.stats()["last_request"]["headers"]["authorization"]
        assert sent == hashlib.sha256(f"Bearer {UPSTREAM_KEY}".encode()).hexdigest()
    # the secret is in no response, trace or export
    exported = fresh_live.manage("export")
    assert BYOK_SECRET not in exported
    assert BYOK_SECRET not in orjson.dumps(reply.model_dump()).decode()


def test_r_byok_1_owner_binding_is_workspace_and_provider():
    assert owner_aad("acme", "vault") != owner_aad("other", "vault")
    assert owner_aad("acme", "vault") != owner_aad("acme", "groq")
