"""Live-metric rollups on a two-worker gateway (SPEC R-OBS-2, R-API-8, D-31): `/health` on
either worker reports both workers' traffic, and a provider that slows down moves both
workers' routers — not only the one that happened to serve the slow requests. The
workers share the rollup through the database (SQLite) or Redis (CI's second run).

Each request opens a new connection, so the kernel spreads them over both workers."""

from __future__ import annotations

import logging
import time

import httpx
import pytest

from gateway.processes import running_gateway
from tests.live.installation import Live
from tests.waiting import wait_for

pytestmark = pytest.mark.live
log = logging.getLogger(__name__)
ROLLUP_S = 0.5
MODEL = "meta/llama-3.3-70b"


def _chat(base: str, key: str, provider: str) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}],
            "provider": {"only": [provider]}}  # fmt: skip
    response = httpx.post(f"{base}/chat/completions", json=body,
                          headers={"Authorization": f"Bearer {key}"}, timeout=20)  # fmt: skip
    assert response.status_code == 200, response.text


def _requests(base: str) -> dict[str, int]:
    providers = httpx.get(f"{base.removesuffix('/v1')}/health", timeout=5).json()["providers"]
    return {name: int(shown["requests"]) for name, shown in providers.items()}


def _first_choice(live: Live, base: str, key: str) -> str:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}],
            "provider": {"sort": "latency"}}  # fmt: skip
    return str(live.explain(key, body, base_url=base)["decisions"][0]["ordered"][0])


def _within(seconds: float, read, wanted) -> float:
    """How long until `read()` gives `wanted` on 12 calls in a row (both workers, surely)."""
    started = time.monotonic()

    def on_every_worker() -> float | None:
        batch_at = time.monotonic()
        seen = [read() for _ in range(12)]
        return batch_at if all(value == wanted for value in seen) else None

    # when the batch that found it on every worker began
    return wait_for(on_every_worker, f"{wanted} on every worker", seconds) - started


@pytest.fixture
def two_workers(fresh_live):
    env = fresh_live.own_env(SWITCHYARD_LIVE_ROLLUP_S=str(ROLLUP_S))
    with running_gateway(env, workers=2) as gateway:
        yield gateway.base_url


def test_r_obs_2_d_31_health_on_either_worker_reports_both_workers_traffic(fresh_live, two_workers):
    key = fresh_live.keys["acme"]
    for _ in range(9):
        _chat(two_workers, key, "cheap")
    for _ in range(4):
        _chat(two_workers, key, "pricey")
    took = _within(6 * ROLLUP_S, lambda: _requests(two_workers), {"cheap": 9, "pricey": 4})
    log.info("both workers reported all 13 requests %.2f s after the last", took)


def test_r_obs_2_a_provider_slowed_10x_moves_the_routers_of_both_workers(fresh_live, two_workers):
    key = fresh_live.keys["acme"]
    for provider in ("cheap", "pricey"):
        for _ in range(3):
            _chat(two_workers, key, provider)
    fresh_live.fakes["cheap"].set_faults([{"fault": "latency:400", "times": None}])
    fresh_live.fakes["pricey"].set_faults([{"fault": "latency:40", "times": None}])
    for _ in range(5):  # spread over both workers: neither alone sees a slow majority
        _chat(two_workers, key, "cheap")
    for _ in range(4):
        _chat(two_workers, key, "pricey")
    took = _within(
        6 * ROLLUP_S, lambda: _first_choice(fresh_live, two_workers, key), "pricey-llama"
    )
    log.info("both workers' routers moved %.2f s after the slow requests", took)


# The gateway never sends a task itself (beat does), so a broker nothing listens on stands
# for a deployment whose beat is not running.
NO_BEAT = {"CELERY_BROKER_URL": "redis://127.0.0.1:9/0"}


@pytest.mark.parametrize("broker", [{}, NO_BEAT], ids=["no-broker", "broker-without-beat"])
def test_r_api_8_r_obs_2_health_shows_the_fleets_numbers_at_the_default_rollup(fresh_live, broker):
    # given two workers at the documented rollup interval (5 s), with or without a broker
    # whose beat would roll up, and 20 requests spread over them on fresh connections
    interval_s = 5.0
    with running_gateway(fresh_live.own_env(**broker), workers=2) as gateway:
        for _ in range(20):
            _chat(gateway.base_url, fresh_live.keys["acme"], "cheap")
        # then within two intervals (a tick may have just passed) every worker answers
        # /health with all 20, not its own share
        took = _within(2 * interval_s + 1, lambda: _requests(gateway.base_url).get("cheap"), 20)
    log.info("both workers reported all 20 requests %.2f s after the last", took)
