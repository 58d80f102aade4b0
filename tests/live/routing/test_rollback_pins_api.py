"""Pins after a rollback (SPEC R-BEY-4, R-EXE-7): a session pin set while a route version
sent the session to its canary must not keep the session on the canary once that version
is rolled back. The canary here is an endpoint of the same model (a `provider.only` on the
canary node), which is where a pin keyed by session and model would otherwise survive.
A gateway of its own with session keeping on; cooldowns stay off (as on the shared
installation), as after a cooldown has expired, so nothing but the pin could move traffic."""

from __future__ import annotations

import uuid

import httpx
import orjson
import pytest

from gateway.processes import running_gateway
from tests.live.installation import Live
from tests.waiting import wait_for

pytestmark = pytest.mark.live

LLAMA = "meta/llama-3.3-70b"
WORKSPACE = """\
workspaces:
  - slug: sticky
    policy: {max_attempts: 1, routing_mode: price}
    keys:
      - {name: sticky-bot, routes: [sticky-canary]}
    routes:
      - slug: sticky-canary
"""
V1 = (
    WORKSPACE
    + """\
        start: stable
        nodes:
          stable: {type: model, model: meta/llama-3.3-70b}
"""
)
V2 = (
    WORKSPACE
    + """\
        start: split
        nodes:
          split: {type: split, by: session, branches: [{weight: 50, next: stable},
                                                       {weight: 50, next: canary}]}
          stable: {type: model, model: meta/llama-3.3-70b, provider: {only: [cheap]}}
          canary: {type: model, model: meta/llama-3.3-70b, provider: {only: [pricey]}}
        rollout_guard: {node: canary, baseline: stable, min_requests: 5,
                        max_error_rate_delta: 0.2}
"""
)


def _apply(live: Live, text: str) -> None:
    path = live.log_path.parent / f"sticky-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(text)
    live.manage("apply", "-f", str(path), "--deploy")


def _chat(client: httpx.Client, session: str) -> tuple[int, str | None]:
    """(status, provider that answered) of one request in `session`."""
    body = {"model": LLAMA, "messages": [{"role": "user", "content": "hi"}]}
    answer = client.post("/chat/completions", headers={"X-Session-Id": session}, json=body)
    attempts = orjson.loads(answer.headers.get("x-switchyard-attempts", "[]"))
    provider = attempts[-1]["provider"] if attempts and answer.status_code == 200 else None
    return answer.status_code, provider


def _version(client: httpx.Client) -> int | None:
    body = {"model": LLAMA, "messages": [{"role": "user", "content": "hi"}]}
    answer = client.post("/routing/explain", json=body)
    return (answer.json().get("route") or {}).get("version") if answer.status_code == 200 else None


def test_r_bey_4_after_a_rollback_no_session_pin_keeps_the_canary(fresh_live):
    _apply(fresh_live, V1)
    _apply(fresh_live, V2)
    key = fresh_live.new_key("sticky", "sticky-bot")
    env = fresh_live.own_env(SWITCHYARD_SESSION_AFFINITY="true")
    with (
        running_gateway(env) as gateway,
        httpx.Client(
            base_url=gateway.base_url, timeout=20, headers={"Authorization": f"Bearer {key}"}
        ) as client,
    ):
        wait_for(lambda: _version(client) == 2, "v2 to reach the gateway", 5)
        # given sessions served by the canary (pinned to its endpoint) and by the baseline
        served = {f"pin-{i}": _chat(client, f"pin-{i}") for i in range(16)}
        on_canary = [s for s, (_status, provider) in served.items() if provider == "pricey"]
        assert {status for status, _provider in served.values()} == {200}
        assert 0 < len(on_canary) < len(served)
        # when the canary's provider fails and the guard rolls v2 back to v1
        fresh_live.fakes["pricey"].set_faults(["status:500"] * 1000)
        for i in range(16):
            _chat(client, f"fail-{i}")
        wait_for(lambda: _version(client) == 1, "the guard to roll v2 back to v1", 5)
        # then the canary's sessions go where v1 chooses (the cheapest endpoint), not to
        # the failing endpoint their pin names
        assert [_chat(client, s) for s in on_canary] == [(200, "cheap")] * len(on_canary)
