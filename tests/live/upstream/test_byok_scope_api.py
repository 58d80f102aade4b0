"""BYOK scope through a live gateway (SPEC R-BYOK-1, R-BEY-5): a workspace's own key serves
only the models and API keys it is restricted to, and where it applies it is never
silently swapped for the managed key — unless `managed_fallback` says so.

Two fake providers: `byok-open` accepts any key (the test reads which one was sent: the
fake keeps a sha256 of the header), `byok-strict` only the managed key, so the workspaces'
own keys for it are refused with 401. Credentials are saved through the management API,
the only way to restrict one to API keys."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import openai
import orjson
import pytest

from fakeupstream.process import FakeUpstreamProcess, running_fake_upstream
from tests.live.installation import UPSTREAM_KEY, Live
from tests.waiting import wait_for

pytestmark = pytest.mark.live

MESSAGES = [{"role": "user", "content": "hi"}]
OWN_KEY = "byok-own-key-of-scope"
REFUSED_KEY = "byok-key-the-provider-refuses"
ALPHA, BETA, GAMMA = "byok/alpha", "byok/beta", "byok/gamma"


def _sent(key: str) -> str:
    """What the fake shows of an `Authorization: Bearer <key>` header."""
    return hashlib.sha256(f"Bearer {key}".encode()).hexdigest()


@dataclass
class Installation:
    live: Live
    open: FakeUpstreamProcess  # accepts any key
    strict: FakeUpstreamProcess  # accepts the managed key only
    clients: dict[str, openai.OpenAI]  # "<workspace>/<key name>" -> client
    key_ids: dict[str, str]  # same -> lookup id


def _save_credential(live: Live, workspace: str, body: dict[str, object]) -> None:
    token = live.manage("createtoken", "--workspace", workspace, "--role", "admin").strip()
    response = httpx.post(
        f"{live.gateway.url}/api/v1/workspaces/{workspace}/credentials",
        headers={"Authorization": f"Bearer {token}"}, json=body, timeout=10,
    )  # fmt: skip
    assert response.status_code == 201, response.text


def _wait_for_credential(live: Live, key: str, provider: str, timeout_s: float = 5) -> None:
    """The gateway's snapshot has the credential once its `/health` lists it."""

    def listed() -> bool:
        health = httpx.get(f"{live.gateway.url}/health",
                           headers={"Authorization": f"Bearer {key}"}).json()  # fmt: skip
        return provider in health["credentials"]

    wait_for(listed, f"/health to list the credential for {provider}", timeout_s)


@pytest.fixture(scope="module")
def byok(live: Live) -> Iterator[Installation]:
    with (
        running_fake_upstream("fast", name="byok-open") as open_fake,
        running_fake_upstream("fast", name="byok-strict", api_key=UPSTREAM_KEY) as strict,
        live.applied(f"""
providers:
  - {{slug: byok-open, name: Open, base_url: "{open_fake.base_url}",
      api_key_env: LIVE_UPSTREAM_KEY}}
  - {{slug: byok-strict, name: Strict, base_url: "{strict.base_url}",
      api_key_env: LIVE_UPSTREAM_KEY}}
models:
  - {{slug: {ALPHA}, capabilities: [text], context_window: 8192}}
  - {{slug: {BETA}, capabilities: [text], context_window: 8192}}
  - {{slug: {GAMMA}, capabilities: [text], context_window: 8192}}
endpoints:
  - {{id: open-alpha, provider: byok-open, model: {ALPHA}, upstream_model: a, region: r,
      price: {{input: 0.1, output: 0.1}}}}
  - {{id: open-beta, provider: byok-open, model: {BETA}, upstream_model: b, region: r,
      price: {{input: 0.1, output: 0.1}}}}
  - {{id: strict-gamma, provider: byok-strict, model: {GAMMA}, upstream_model: g, region: r,
      price: {{input: 0.1, output: 0.1}}}}
workspaces:
  - {{slug: byok-scope, name: Scope, policy: {{max_attempts: 3}}}}
  - {{slug: byok-nofb, name: No fallback, policy: {{max_attempts: 3}}}}
  - {{slug: byok-fb, name: Fallback, policy: {{max_attempts: 3}}}}
"""),  # fmt: skip
    ):
        clients, key_ids = {}, {}
        for workspace, name in [("byok-scope", "bot"), ("byok-scope", "other-bot"),
                                ("byok-nofb", "bot"), ("byok-fb", "bot")]:  # fmt: skip
            key = live.new_key(workspace, name)
            clients[f"{workspace}/{name}"] = openai.OpenAI(
                base_url=live.base_url, api_key=key, max_retries=0, timeout=20
            )
            key_ids[f"{workspace}/{name}"] = key.split("-")[2]  # sk-sy-<lookup id>-<secret>
        _save_credential(live, "byok-scope", {
            "provider": "byok-open", "api_key": OWN_KEY,
            "allowed_models": [ALPHA], "api_keys": [key_ids["byok-scope/bot"]],
        })  # fmt: skip
        _save_credential(live, "byok-nofb", {"provider": "byok-strict", "api_key": REFUSED_KEY})
        _save_credential(live, "byok-fb", {"provider": "byok-strict", "api_key": REFUSED_KEY,
                                           "managed_fallback": True})  # fmt: skip
        for workspace, provider in [("byok-scope", "byok-open"), ("byok-nofb", "byok-strict"),
                                    ("byok-fb", "byok-strict")]:  # fmt: skip
            _wait_for_credential(live, clients[f"{workspace}/bot"].api_key, provider)
        yield Installation(live, open_fake, strict, clients, key_ids)


@pytest.fixture
def installation(byok: Installation) -> Installation:
    byok.open.reset()
    byok.strict.reset()
    return byok


def _last_key_sent(fake: FakeUpstreamProcess) -> str:
    return fake.stats()["last_request"]["headers"]["authorization"]


def test_r_byok_1_a_credential_restricted_to_models_serves_only_those(installation):
    bot = installation.clients["byok-scope/bot"]
    # when the key it is restricted to asks for a model it is restricted to
    bot.chat.completions.create(model=ALPHA, messages=MESSAGES)
    # then the workspace's own key went upstream
    assert _last_key_sent(installation.open) == _sent(OWN_KEY)
    # and for another model of the same provider the managed key did: not a BYOK request
    bot.chat.completions.create(model=BETA, messages=MESSAGES)
    assert _last_key_sent(installation.open) == _sent(UPSTREAM_KEY)


def test_r_byok_1_a_credential_restricted_to_keys_serves_only_those(installation):
    # when another key of the same workspace asks for the credential's model
    installation.clients["byok-scope/other-bot"].chat.completions.create(
        model=ALPHA, messages=MESSAGES
    )
    # then the managed key went upstream, not the workspace's own
    assert _last_key_sent(installation.open) == _sent(UPSTREAM_KEY)
    assert installation.open.stats()["requests"] == 1


def test_r_byok_1_without_managed_fallback_a_byok_401_is_the_answer(installation):
    # when the provider refuses the workspace's own key
    with pytest.raises(openai.APIStatusError) as failed:
        installation.clients["byok-nofb/bot"].chat.completions.create(
            model=GAMMA, messages=MESSAGES
        )
    # then that refusal is the answer: one attempt, with the own key; the managed key,
    # which this provider would have accepted, was never sent
    attempts = failed.value.body["attempts"]
    assert [(a["endpoint"], a["http_status"]) for a in attempts] == [("strict-gamma", 401)]
    assert installation.strict.stats()["requests"] == 1
    assert _last_key_sent(installation.strict) == _sent(REFUSED_KEY)
    assert REFUSED_KEY not in str(failed.value.body)


def test_r_byok_1_with_managed_fallback_the_managed_key_serves_next(installation):
    # when the provider refuses the workspace's own key
    raw = installation.clients["byok-fb/bot"].chat.completions.with_raw_response.create(
        model=GAMMA, messages=MESSAGES
    )
    # then the managed key was tried next on the same endpoint, and answered
    answer = raw.parse()
    assert answer.model_extra["switchyard"]["endpoint"] == "strict-gamma"
    assert installation.strict.stats()["requests"] == 2
    assert _last_key_sent(installation.strict) == _sent(UPSTREAM_KEY)
    attempts = orjson.loads(raw.headers["x-switchyard-attempts"])
    assert [(a["endpoint"], a["http_status"]) for a in attempts] == [
        ("strict-gamma", 401), ("strict-gamma", 200),
    ]  # fmt: skip


def test_r_bey_5_other_workspaces_never_get_a_workspaces_own_key(installation, fresh_live):
    # when a workspace without credentials calls the same provider and model
    acme = openai.OpenAI(base_url=fresh_live.base_url, api_key=fresh_live.keys["acme"],
                         max_retries=0)  # fmt: skip
    acme.chat.completions.create(model=ALPHA, messages=MESSAGES)
    # then the managed key went upstream
    assert _last_key_sent(installation.open) == _sent(UPSTREAM_KEY)
