"""Session keeping and cache-aware routing through a live gateway (SPEC R-EXE-6, R-EXE-7):
a gateway of its own with affinity and short cooldowns on, so the shared one keeps both off
(cache-aware pinning is on everywhere, but the shared fakes report no cache reads)."""

from __future__ import annotations

import time

import openai
import orjson
import pytest

from gateway.processes import running_gateway
from tests.waiting import wait_for

pytestmark = pytest.mark.live

LLAMA = "meta/llama-3.3-70b"
LONG = "Summarise the quarterly report we discussed yesterday, please."  # > 1 prompt token
COOLDOWN_S = 0.3  # the sticky gateway's cooldowns (base and maximum)


def _served(
    client: openai.OpenAI, session: str, text: str = "hi", **extra
) -> list[tuple[str, str]]:
    raw = client.chat.completions.with_raw_response.create(
        model=LLAMA,
        messages=[{"role": "user", "content": text}],
        extra_body={"session_id": session, **extra},
    )
    return [
        (a["provider"], a["status"]) for a in orjson.loads(raw.headers["x-switchyard-attempts"])
    ]


@pytest.fixture
def sticky_client(fresh_live):
    env = fresh_live.own_env(
        SWITCHYARD_SESSION_AFFINITY="true",
        SWITCHYARD_COOLDOWN_BASE_S=str(COOLDOWN_S),
        SWITCHYARD_COOLDOWN_MAX_S=str(COOLDOWN_S),
    )
    with running_gateway(env) as gateway:
        yield openai.OpenAI(
            base_url=gateway.base_url, api_key=fresh_live.keys["acme"], max_retries=0
        )


def test_r_exe_7_a_session_stays_on_its_target_and_moves_only_on_cooldown(
    sticky_client, fresh_live
):
    # given a session that was served by the dearer endpoint
    assert _served(sticky_client, "s-1", provider={"only": ["pricey"]}) == [("pricey", "ok")]
    # when it asks again, with the cheaper endpoint first in the price order
    assert _served(sticky_client, "s-1") == [("pricey", "ok")]  # kept (honored)
    assert _served(sticky_client, "s-2") == [("cheap", "ok")]  # another session is not
    # then only a cooldown of its target releases the pin, and it re-pins to the choice
    fresh_live.fakes["pricey"].set_faults(["status:429"])
    sent = time.monotonic()  # pricey's cooldown starts after this
    assert _served(sticky_client, "s-1") == [("pricey", "error"), ("cheap", "ok")]
    assert _served(sticky_client, "s-1") == [("cheap", "ok")]
    # pricey's cooldown is over, but the session now lives on cheap
    base_url = str(sticky_client.base_url).rstrip("/")
    wait_for(lambda: not fresh_live.cooling(sticky_client.api_key, LLAMA, "pricey-llama", base_url),
             "pricey's cooldown to end")  # fmt: skip
    cooled = time.monotonic() - sent
    assert cooled >= COOLDOWN_S, f"pricey cooled for {cooled:.2f} s, not {COOLDOWN_S} s"
    assert _served(sticky_client, "s-1") == [("cheap", "ok")]


def test_r_exe_7_the_request_can_opt_out(sticky_client):
    assert _served(sticky_client, "s-3", provider={"only": ["pricey"]}) == [("pricey", "ok")]
    no_affinity = {"routing": {"session_affinity": False}}
    assert _served(sticky_client, "s-3", **no_affinity) == [("cheap", "ok")]


def test_r_exe_6_a_conversation_stays_with_the_provider_that_cached_its_prompt(client, fresh_live):
    # given pricey reports prompt-cache reads, and served the session once
    fresh_live.fakes["pricey"].set_cache_mode("always")
    only_pricey = {"provider": {"only": ["pricey"]}}
    assert _served(client, "c-1", LONG, **only_pricey) == [("pricey", "ok")]
    # when the session asks again, with cheap first in the price order
    # then it stays with the provider holding its cache; other sessions do not
    assert _served(client, "c-1", LONG) == [("pricey", "ok")]
    assert _served(client, "c-2", LONG) == [("cheap", "ok")]
    # and the request can opt out
    no_cache = {"provider": {"cache_aware_routing": False}}
    assert _served(client, "c-1", LONG, **no_cache) == [("cheap", "ok")]


def test_r_exe_6_no_cache_read_no_pin(client, fresh_live):
    assert _served(client, "c-3", LONG, provider={"only": ["pricey"]}) == [("pricey", "ok")]
    assert _served(client, "c-3", LONG) == [("cheap", "ok")]  # no cached tokens reported
