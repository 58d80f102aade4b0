"""Cooldowns through a live gateway (SPEC R-EXE-3): a gateway of its own with short
cooldowns, on the shared installation, so the other tests keep theirs off."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import openai
import orjson
import pytest

from gateway.processes import running_gateway

pytestmark = pytest.mark.live

MESSAGES = [{"role": "user", "content": "hi"}]


def _providers(client: openai.OpenAI) -> list[tuple[str, str]]:
    raw = client.chat.completions.with_raw_response.create(
        model="meta/llama-3.3-70b", messages=MESSAGES
    )
    return [
        (a["provider"], a["status"]) for a in orjson.loads(raw.headers["x-switchyard-attempts"])
    ]


@pytest.fixture
def cooling_client(fresh_live):
    env = fresh_live.own_env(SWITCHYARD_COOLDOWN_BASE_S="1", SWITCHYARD_COOLDOWN_MAX_S="2")
    with running_gateway(env) as gateway:
        yield openai.OpenAI(
            base_url=gateway.base_url, api_key=fresh_live.keys["acme"], max_retries=0
        )


def test_r_exe_3_a_429_moves_traffic_away_for_one_cooldown_and_back(cooling_client, fresh_live):
    # given the preferred (cheapest) endpoint answers one 429
    fresh_live.fakes["cheap"].set_faults(["status:429"])
    assert _providers(cooling_client) == [("cheap", "error"), ("pricey", "ok")]
    # then during the cooldown it is not even tried
    assert _providers(cooling_client) == [("pricey", "ok")]
    # and after the cooldown (1 s) traffic comes back
    time.sleep(1.1)
    assert _providers(cooling_client) == [("cheap", "ok")]


def test_r_exe_3_a_dead_key_is_skipped_at_once_for_the_maximum(cooling_client, fresh_live):
    fresh_live.fakes["cheap"].set_faults(["status:401"])
    assert _providers(cooling_client) == [("cheap", "error"), ("pricey", "ok")]
    time.sleep(1.1)  # longer than the base: 401 takes the maximum (2 s)
    assert _providers(cooling_client) == [("pricey", "ok")]
    time.sleep(1.0)
    assert _providers(cooling_client) == [("cheap", "ok")]


def test_r_exe_3_the_cooldown_starts_when_the_attempt_fails_not_when_the_request_ends(
    cooling_client, fresh_live
):
    # given a request whose cheap attempt gets a 429 and whose failover is slow (900 ms)
    fresh_live.fakes["cheap"].set_faults(["status:429"])
    fresh_live.fakes["pricey"].set_faults(["latency:900"])
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(_providers, cooling_client)
        _wait_until_served(fresh_live.fakes["cheap"], requests=1)  # its 429 went out …
        time.sleep(0.2)  # … and reached the gateway; it is still waiting for pricey
        # when another request arrives meanwhile
        second = _providers(cooling_client)
        # then it already skips the cooling endpoint
        assert second == [("pricey", "ok")]
        assert first.result() == [("cheap", "error"), ("pricey", "ok")]


def _wait_until_served(fake, requests: int, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while fake.stats()["requests"] < requests:
        assert time.monotonic() < deadline, "the fake never saw the request"
        time.sleep(0.01)


@pytest.fixture
def long_cooling_client(fresh_live):
    """Cooldowns that outlast the test, so `cheap` stays cooling while it runs."""
    env = fresh_live.own_env(SWITCHYARD_COOLDOWN_BASE_S="60", SWITCHYARD_COOLDOWN_MAX_S="120")
    with running_gateway(env) as gateway:
        yield openai.OpenAI(
            base_url=gateway.base_url, api_key=fresh_live.keys["acme"], max_retries=0
        )


def test_r_exe_3_a_cooling_endpoint_is_tried_last_when_the_others_fail(
    long_cooling_client, fresh_live
):
    # given three 503s from the preferred endpoint, each failed over, which cool it down
    fresh_live.fakes["cheap"].set_faults(["status:503"] * 3)
    for _ in range(3):
        assert _providers(long_cooling_client) == [("cheap", "error"), ("pricey", "ok")]
    assert _providers(long_cooling_client) == [("pricey", "ok")]
    # when the other endpoint answers 503 too
    fresh_live.fakes["pricey"].set_faults(["status:503"])
    # then the cooling endpoint is tried last, and its answer returned (better to try than
    # to refuse)
    assert _providers(long_cooling_client) == [("pricey", "error"), ("cheap", "ok")]
