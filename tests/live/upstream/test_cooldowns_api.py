"""Cooldowns through a live gateway (SPEC R-EXE-3): a gateway of its own with short
cooldowns, on the shared installation, so the other tests keep theirs off.

Whether an endpoint is cooling is read from `POST /v1/routing/explain`, a dry run (no
upstream call, no effect on routing) whose decision notes name the endpoints in cooldown:
a test waits for that, never for a fixed time."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import openai
import orjson
import pytest

from gateway.processes import running_gateway
from tests.live.installation import Live
from tests.waiting import wait_for

pytestmark = pytest.mark.live

MESSAGES = [{"role": "user", "content": "hi"}]
LLAMA = "meta/llama-3.3-70b"
# The cooling gateway's cooldowns (SWITCHYARD_COOLDOWN_BASE_S / _MAX_S), the maximum well
# past the base so that a cooldown of one cannot pass for the other.
BASE_S, MAX_S = 0.2, 0.8
RETRY_AFTER_S = 1.0  # what the shared fakes' 429s carry (fakeupstream/profiles.py)
# A 429 cools for the base, or the upstream's Retry-After when longer, at most the maximum.
RATE_LIMITED_S = min(max(BASE_S, RETRY_AFTER_S), MAX_S)


def _providers(client: openai.OpenAI) -> list[tuple[str, str]]:
    raw = client.chat.completions.with_raw_response.create(model=LLAMA, messages=MESSAGES)
    return [
        (a["provider"], a["status"]) for a in orjson.loads(raw.headers["x-switchyard-attempts"])
    ]


def _wait_until_not_cooling(live: Live, client: openai.OpenAI, endpoint: str) -> float:
    """Wait for `endpoint`'s cooldown to end; return the time.monotonic() it was seen over."""
    base_url = str(client.base_url).rstrip("/")
    wait_for(lambda: not live.cooling(client.api_key, LLAMA, endpoint, base_url),
             f"the cooldown of {endpoint} to end")  # fmt: skip
    return time.monotonic()


@pytest.fixture
def cooling_client(fresh_live):
    env = fresh_live.own_env(
        SWITCHYARD_COOLDOWN_BASE_S=str(BASE_S), SWITCHYARD_COOLDOWN_MAX_S=str(MAX_S)
    )
    with running_gateway(env) as gateway:
        client = openai.OpenAI(
            base_url=gateway.base_url, api_key=fresh_live.keys["acme"], max_retries=0
        )
        # (one request first, so that the tests' own do not pay for warming up the SDK and
        # the gateway: their timing matters)
        assert _providers(client) == [("cheap", "ok")]
        yield client


def test_r_exe_3_a_429_moves_traffic_away_for_one_cooldown_and_back(cooling_client, fresh_live):
    # given the preferred (cheapest) endpoint answers one 429
    fresh_live.fakes["cheap"].set_faults(["status:429"])
    sent = time.monotonic()  # the 429, and so the cooldown's start, come after this
    assert _providers(cooling_client) == [("cheap", "error"), ("pricey", "ok")]
    # then during the cooldown it is not even tried
    assert _providers(cooling_client) == [("pricey", "ok")]
    # and after the cooldown (the Retry-After, capped at the maximum) traffic comes back,
    # not before
    over = _wait_until_not_cooling(fresh_live, cooling_client, "cheap-llama")
    cooled = over - sent
    assert cooled >= RATE_LIMITED_S, f"cheap cooled for {cooled:.2f} s, not {RATE_LIMITED_S} s"
    assert _providers(cooling_client) == [("cheap", "ok")]


def test_r_exe_3_a_dead_key_is_skipped_at_once_for_the_maximum(cooling_client, fresh_live):
    fresh_live.fakes["cheap"].set_faults(["status:401"])
    sent = time.monotonic()  # the 401, and so the cooldown's start, come after this
    assert _providers(cooling_client) == [("cheap", "error"), ("pricey", "ok")]
    # then the next request skips it
    assert _providers(cooling_client) == [("pricey", "ok")]
    # and it comes back once the maximum has passed, not before: a cooldown of the base
    # (what a 5xx gets) would have ended MAX_S - BASE_S earlier
    over = _wait_until_not_cooling(fresh_live, cooling_client, "cheap-llama")
    assert over - sent >= MAX_S, f"cheap cooled for {over - sent:.2f} s, not {MAX_S} s"
    assert _providers(cooling_client) == [("cheap", "ok")]


def test_r_exe_3_the_cooldown_starts_when_the_attempt_fails_not_when_the_request_ends(
    cooling_client, fresh_live
):
    # given a request whose cheap attempt gets a 429 and whose failover is slow (900 ms)
    fresh_live.fakes["cheap"].set_faults(["status:429"])
    fresh_live.fakes["pricey"].set_faults(["latency:900"])
    pricey = fresh_live.fakes["pricey"]
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(_providers, cooling_client)
        # its 429 reached the gateway, which failed over: it is waiting for pricey
        wait_for(lambda: pricey.stats()["in_flight"] == 1, "the failover attempt at pricey")
        # when another request arrives meanwhile
        second = _providers(cooling_client)
        # then it already skips the cooling endpoint
        assert second == [("pricey", "ok")]
        assert first.result() == [("cheap", "error"), ("pricey", "ok")]


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
