"""Tenant-scoped health through live gateways (SPEC R-BEY-7): a workspace's failing own key
cools that credential for that workspace, never the shared endpoint, and each workspace
sees its credentials' health in `GET /health` — their cooldowns, and the live numbers of
the attempts with them rolled up over every worker (R-OBS-2). Gateways of their own with
cooldowns on (the shared one keeps them off), on the shared installation.

Model `byokh/model` has two endpoints: `byokh-strict` (cheapest; a fake that accepts only
the managed key) and `byokh-cheap` (the shared `cheap` fake). Workspace `byokh-a` has its
own key for the strict provider, which refuses it; `byokh-b` has none; `byokh-own` has
one the strict provider accepts (the managed key's value, its own credential all the
same)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import httpx
import openai
import orjson
import pytest

from fakeupstream.process import FakeUpstreamProcess, running_fake_upstream
from gateway.processes import GatewayProcess, running_gateway
from tests.live.installation import UPSTREAM_KEY, Live
from tests.waiting import wait_for

pytestmark = pytest.mark.live

MODEL = "byokh/model"
PROVIDER = "byokh-strict"
MESSAGES = [{"role": "user", "content": "hi"}]
COOLDOWNS = {"SWITCHYARD_COOLDOWN_BASE_S": "1", "SWITCHYARD_COOLDOWN_MAX_S": "60"}


@pytest.fixture(scope="module")
def tenants(live: Live) -> Iterator[tuple[FakeUpstreamProcess, dict[str, str]]]:
    """The strict fake and the API keys of `byokh-a` and `byokh-b`."""
    with (
        running_fake_upstream("fast", name=PROVIDER, api_key=UPSTREAM_KEY) as strict,
        live.applied(f"""
providers:
  - {{slug: {PROVIDER}, name: Strict, base_url: "{strict.base_url}",
      api_key_env: LIVE_UPSTREAM_KEY}}
models:
  - {{slug: {MODEL}, capabilities: [text], context_window: 8192}}
endpoints:
  - {{id: byokh-strict, provider: {PROVIDER}, model: {MODEL}, upstream_model: s, region: r,
      price: {{input: 0.1, output: 0.1}}}}
  - {{id: byokh-cheap, provider: cheap, model: {MODEL}, upstream_model: c, region: r,
      price: {{input: 0.5, output: 0.5}}}}
workspaces:
  - slug: byokh-a
    name: A
    policy: {{max_attempts: 3, routing_mode: price}}
    credentials:
      - {{provider: {PROVIDER}, api_key: byok-key-the-provider-refuses}}
  - {{slug: byokh-b, name: B, policy: {{max_attempts: 3, routing_mode: price}}}}
  - slug: byokh-fb
    name: Fallback
    policy: {{max_attempts: 3, routing_mode: price}}
    credentials:
      - {{provider: {PROVIDER}, api_key: byok-key-the-provider-refuses, managed_fallback: true}}
  - slug: byokh-own
    name: Own
    policy: {{max_attempts: 3, routing_mode: price}}
    credentials:
      - {{provider: {PROVIDER}, api_key: {UPSTREAM_KEY}}}
"""),  # fmt: skip
    ):
        workspaces = ("byokh-a", "byokh-b", "byokh-fb", "byokh-own")
        yield strict, {ws: live.new_key(ws, "bot") for ws in workspaces}


@pytest.fixture
def gateway(fresh_live, tenants) -> Iterator[GatewayProcess]:
    tenants[0].reset()
    with running_gateway(fresh_live.own_env(**COOLDOWNS)) as own:
        yield own


def _attempts(gateway: GatewayProcess, key: str) -> list[tuple[str, str]]:
    client = openai.OpenAI(base_url=gateway.base_url, api_key=key, max_retries=0, timeout=20)
    raw = client.chat.completions.with_raw_response.create(model=MODEL, messages=MESSAGES)
    return [
        (a["endpoint"], a["status"]) for a in orjson.loads(raw.headers["x-switchyard-attempts"])
    ]


def _health(gateway: GatewayProcess, key: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.get(f"{gateway.url}/health", headers=headers, timeout=10)


def test_r_bey_7_a_failing_byok_key_cools_its_credential_not_the_shared_endpoint(gateway, tenants):
    _strict, keys = tenants
    # when A's own key is refused (401: the maximum cooldown at once)
    assert _attempts(gateway, keys["byokh-a"]) == [("byokh-strict", "error"),
                                                   ("byokh-cheap", "ok")]  # fmt: skip
    # then B, with the managed key, keeps the cheapest endpoint: it did not cool
    assert _attempts(gateway, keys["byokh-b"]) == [("byokh-strict", "ok")]
    assert _attempts(gateway, keys["byokh-b"]) == [("byokh-strict", "ok")]
    # and A sees its credential cooling, with why
    shown = _health(gateway, keys["byokh-a"]).json()["credentials"]
    assert list(shown) == [PROVIDER]
    health = shown[PROVIDER]
    assert (health["status"], health["cooling_reason"]) == ("cooling", "auth_or_not_found")
    assert (health["last_failure"], health["recent_failures"]) == ("http_401", 1)
    assert health["cooling_until"] > health["last_failure_at"]


def test_r_bey_7_failures_with_the_managed_key_still_cool_the_endpoint(gateway, tenants):
    strict, keys = tenants
    # when the endpoint refuses B's request (the managed key) with a 429
    strict.set_faults(["status:429"])
    assert _attempts(gateway, keys["byokh-b"]) == [("byokh-strict", "error"),
                                                   ("byokh-cheap", "ok")]  # fmt: skip
    # then the endpoint cools for everyone, as before
    assert _attempts(gateway, keys["byokh-b"]) == [("byokh-cheap", "ok")]
    # and no workspace's credential is blamed
    assert _health(gateway, keys["byokh-a"]).json()["credentials"][PROVIDER]["status"] == "ok"


def test_r_byok_1_while_its_own_key_cools_the_managed_key_serves_alone(gateway, tenants):
    strict, keys = tenants
    # given a workspace whose own key may fall back to the managed one, and is refused
    assert _attempts(gateway, keys["byokh-fb"]) == [("byokh-strict", "error"),
                                                    ("byokh-strict", "ok")]  # fmt: skip
    # when it calls again while its credential cools
    strict.reset()
    assert _attempts(gateway, keys["byokh-fb"]) == [("byokh-strict", "ok")]
    # then only the managed key went upstream: the own key was not sent again
    assert strict.stats()["requests"] == 1


def test_r_bey_7_the_cooling_credential_is_skipped_for_its_workspace_alone(gateway, tenants):
    _strict, keys = tenants
    # given A's own key was refused
    assert _attempts(gateway, keys["byokh-a"])[0] == ("byokh-strict", "error")
    # then A's next request skips that endpoint while the credential cools, like a
    # cooling endpoint, and B's does not
    assert _attempts(gateway, keys["byokh-a"]) == [("byokh-cheap", "ok")]
    assert _attempts(gateway, keys["byokh-b"]) == [("byokh-strict", "ok")]


def test_r_bey_7_health_shows_credentials_only_to_a_workspace_key(gateway, tenants):
    _strict, keys = tenants
    # without a key: as before, no credentials section
    anonymous = _health(gateway)
    assert anonymous.status_code == 200
    assert "credentials" not in anonymous.json()
    # a workspace without own keys: an empty section
    assert _health(gateway, keys["byokh-b"]).json()["credentials"] == {}
    # a workspace with one: healthy until it fails, and never its key
    with_key = _health(gateway, keys["byokh-a"])
    assert with_key.json()["credentials"][PROVIDER]["status"] == "ok"
    assert "byok-key-the-provider-refuses" not in with_key.text
    # a key that is not valid is the usual 401
    refused = _health(gateway, "sk-sy-nope-nope")
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "invalid_api_key"


@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="sharing needs REDIS_URL")
def test_r_bey_9_a_credential_cooling_on_one_replica_shows_on_the_other(fresh_live, tenants):
    _strict, keys = tenants
    env = fresh_live.own_env(**COOLDOWNS)  # one prefix for both replicas
    with running_gateway(env) as a, running_gateway(env) as b:
        # when A's own key is refused on replica a
        assert _attempts(a, keys["byokh-a"])[0] == ("byokh-strict", "error")
        # then replica b knows the credential cools, without having seen the failure
        wait_for(
            lambda: (
                _health(b, keys["byokh-a"]).json()["credentials"][PROVIDER]["status"] == "cooling"
            ),
            "the credential's cooldown to reach the other replica",
            2.0,
        )
        assert _health(b, keys["byokh-a"]).json()["credentials"][PROVIDER]["recent_failures"] == 0


ROLLUP_S = 0.5


@pytest.fixture
def two_workers(fresh_live, tenants) -> Iterator[GatewayProcess]:
    """Two workers sharing a rollup every half second; cooldowns and health demotion off,
    as on the shared gateway, so every request tries the cheapest endpoint first."""
    tenants[0].reset()
    env = fresh_live.own_env(SWITCHYARD_LIVE_ROLLUP_S=str(ROLLUP_S))
    with running_gateway(env, workers=2) as gateway:
        yield gateway


def _live_numbers(gateway: GatewayProcess, keys: dict[str, str]) -> dict[str, object]:
    """What `/health` shows of A's and byokh-own's credential, B's credentials and the
    shared strict endpoint, read from whichever worker answers."""
    a, own = (_health(gateway, keys[ws]).json()["credentials"][PROVIDER]
              for ws in ("byokh-a", "byokh-own"))  # fmt: skip
    anonymous = _health(gateway).json()
    endpoint = anonymous["providers"].get(PROVIDER, {}).get("endpoints", {})
    return {
        "byokh-a": (a["requests"], a["error_rate"], a["latency_p50_ms"]),
        "byokh-own": (own["requests"], own["error_rate"]),
        "byokh-b": _health(gateway, keys["byokh-b"]).json()["credentials"],
        "endpoint": {eid: (e["requests"], e["error_rate"]) for eid, e in endpoint.items()},
    }


def test_r_bey_7_r_obs_2_a_failing_credentials_error_rate_shows_to_its_workspace_alone(
    two_workers, tenants
):
    _strict, keys = tenants
    # given six requests whose own key the strict provider refused (the cheap endpoint then
    # served them with the managed key), three with byokh-own's accepted own key and two of
    # B's with the managed key, spread over both workers (a new connection each)
    for _ in range(6):
        assert _attempts(two_workers, keys["byokh-a"]) == [("byokh-strict", "error"),
                                                           ("byokh-cheap", "ok")]  # fmt: skip
    for _ in range(3):
        assert _attempts(two_workers, keys["byokh-own"]) == [("byokh-strict", "ok")]
    for _ in range(2):
        assert _attempts(two_workers, keys["byokh-b"]) == [("byokh-strict", "ok")]
    wanted = {
        # A's credential: its six attempts, all refused, none answered
        "byokh-a": (6, 1.0, None),
        # byokh-own's: its three, none refused; B has no credential to see
        "byokh-own": (3, 0.0),
        "byokh-b": {},
        # the shared endpoint: the five it answered, each once, whichever key; A's six
        # refusals are A's credential's, not the health every tenant's routing reads
        "endpoint": {"byokh-strict": (5, 0.0)},
    }
    # then every worker says so (12 reads in a row: both workers, surely) once rolled up
    wait_for(lambda: [_live_numbers(two_workers, keys) for _ in range(12)] == [wanted] * 12,
             f"{wanted} on every worker (12 reads in a row)", 8 * ROLLUP_S)  # fmt: skip
