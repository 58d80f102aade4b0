"""State shared between replicas (SPEC R-BEY-9): two gateway processes against one Redis,
on the shared live installation. Each test runs its own pair of gateways under a key
prefix of its own, so nothing reaches the shared gateway or the other tests. Without
REDIS_URL (the SQLite run of CI) there is nothing to share and the tests are skipped."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
import redis

from gateway.processes import GatewayProcess, running_gateway
from tests.waiting import wait_for

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(
        not os.environ.get("REDIS_URL"), reason="sharing between replicas needs REDIS_URL"
    ),
]

LLAMA = "meta/llama-3.3-70b"
PROPAGATION_S = 2.0  # bound on the wait for the other replica; it takes milliseconds


@pytest.fixture
def replicas(fresh_live) -> Iterator[tuple[GatewayProcess, GatewayProcess]]:
    """Gateways A and B sharing one Redis prefix, with session keeping and cooldowns on."""
    prefix = f"switchyard-test-{uuid.uuid4().hex[:12]}"
    env = {**fresh_live.env, "SWITCHYARD_SHARED_STATE_PREFIX": prefix,
           "SWITCHYARD_SESSION_AFFINITY": "true", "SWITCHYARD_COOLDOWN_BASE_S": "30",
           "SWITCHYARD_COOLDOWN_MAX_S": "30"}  # fmt: skip
    try:
        with running_gateway(env) as a, running_gateway(env) as b:
            yield a, b
    finally:
        store = redis.Redis.from_url(os.environ["REDIS_URL"])
        keys = list(store.scan_iter(match=f"{prefix}:*"))
        if keys:
            store.delete(*keys)
        store.close()


def _post(live, gateway: GatewayProcess, path: str, body: dict[str, Any],
          headers: dict[str, str] | None = None) -> httpx.Response:  # fmt: skip
    response = httpx.post(
        f"{gateway.base_url}{path}",
        headers={"Authorization": f"Bearer {live.keys['acme']}", **(headers or {})},
        json=body,
        timeout=10,
    )
    assert response.status_code == 200, response.text
    return response


def _chat(live, gateway: GatewayProcess, **extra: Any) -> list[tuple[str, str]]:
    """One request for the llama model; the attempts as (provider, status)."""
    body = {"model": LLAMA, "messages": [{"role": "user", "content": "hi"}], **extra}
    response = _post(live, gateway, "/chat/completions", body)
    return [
        (a["provider"], a["status"])
        for a in orjson.loads(response.headers["x-switchyard-attempts"])
    ]


def _attempt_order(live, gateway: GatewayProcess, **extra: Any) -> list[str]:
    """The endpoints the gateway would try, in order (explain: no upstream call, no write)."""
    body = {"model": LLAMA, "messages": [{"role": "user", "content": "hi"}], **extra}
    return live.explain(live.keys["acme"], body, base_url=gateway.base_url)["attempt_order"]


def test_r_bey_9_a_cooldown_started_on_one_replica_is_honoured_by_the_other(replicas, fresh_live):
    a, b = replicas
    no_pin = {"routing": {"session_affinity": False}}  # only the cooldown may move traffic
    # given B would try the cheapest endpoint first
    assert _attempt_order(fresh_live, b, **no_pin) == ["cheap-llama", "pricey-llama"]
    # when A sees a dead key there (401: the maximum cooldown at once)
    fresh_live.fakes["cheap"].set_faults(["status:401"])
    assert _chat(fresh_live, a, **no_pin) == [("cheap", "error"), ("pricey", "ok")]
    # then B tries it last too, without having seen the error itself (R-EXE-3)
    cooled_last = ["pricey-llama", "cheap-llama"]
    wait_for(lambda: _attempt_order(fresh_live, b, **no_pin) == cooled_last,
             "A's cooldown of cheap-llama to reach B", PROPAGATION_S)  # fmt: skip
    assert _chat(fresh_live, b, **no_pin) == [("pricey", "ok")]


def test_r_bey_9_a_session_pinned_on_one_replica_stays_there_on_the_other(replicas, fresh_live):
    a, b = replicas
    # given a session served by the dearer endpoint on A
    assert _chat(fresh_live, a, session_id="s-1", provider={"only": ["pricey"]}) == [
        ("pricey", "ok")
    ]
    # when the same session comes to B, which would choose the cheaper one for any other
    assert _attempt_order(fresh_live, b, session_id="s-2")[0] == "cheap-llama"
    # then B keeps the session where A pinned it
    wait_for(lambda: _attempt_order(fresh_live, b, session_id="s-1")[0] == "pricey-llama",
             "A's pin of session s-1 to reach B", PROPAGATION_S)  # fmt: skip
    assert _chat(fresh_live, b, session_id="s-1") == [("pricey", "ok")]


def test_r_bey_9_a_hard_tier_pin_set_on_one_replica_is_honoured_by_the_other(replicas, fresh_live):
    a, b = replicas

    def tier(gateway: GatewayProcess, text: str, session: str) -> tuple[str, str]:
        body = {"model": "normal", "messages": [{"role": "user", "content": text}]}
        response = _post(fresh_live, gateway, "/chat/completions", body,
                         headers={"X-Session-Id": session})  # fmt: skip
        return response.headers["x-switchyard-tier"], response.headers["x-switchyard-tier-source"]

    def explained_tier(gateway: GatewayProcess, text: str, session: str) -> tuple[str, str]:
        """The tier explain gives (a dry run: it pins nothing, calls no upstream)."""
        body = {"model": "normal", "messages": [{"role": "user", "content": text}]}
        verdict = fresh_live.explain(fresh_live.keys["acme"], body, base_url=gateway.base_url,
                                     headers={"X-Session-Id": session})["tier"]  # fmt: skip
        return verdict["tier"], verdict["source"]

    # given a conversation that turned hard on A
    assert tier(a, "Think hard: what is the root cause?", "t-1") == ("hard", "classifier")
    # when it says thanks on B, where an unpinned conversation saying so is easy
    assert tier(b, "thanks!", "t-2") == ("easy", "classifier")
    # then B keeps it hard, once A's pin has reached it (as B's explain shows)
    pinned = ("hard", "pinned")
    wait_for(lambda: explained_tier(b, "thanks!", "t-1") == pinned,
             "A's hard tier pin of t-1 to reach B", PROPAGATION_S)  # fmt: skip
    assert tier(b, "thanks!", "t-1") == pinned
