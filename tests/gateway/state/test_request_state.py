"""The request path reads the process's state once and changes it in one place
(ARCHITECTURE.md; gateway/state/request_state.py): explain provably changes nothing, and a
request reads the wall clock once. Served in this process, so the state can be looked at."""

from __future__ import annotations

import sys
import time
from typing import Any

import orjson
import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient
from prometheus_client import REGISTRY

from gateway.api import chat
from gateway.request_path import caller as request_clock
from gateway.request_path import serve
from gateway.state import runtime
from gateway.upstream.client import close_client
from tests.gateway.request_path.inprocess import ROUND_ROBIN, TIERED, in_process_gateway

HARD = {"role": "user", "content": "Prove step by step that the algorithm terminates " * 20}
OUR_CODE = ("gateway.", "routing.", "audit.", "workspaces.")
# Not the request path: with REDIS_URL, the replicas' sharing runs in a background task of
# its own and stamps what it publishes (gateway/state/shared_state.py).
BACKGROUND = ("gateway.state.shared_state",)


def _fingerprint() -> dict[str, Any]:
    """Everything a request may change in this process: turns, pins, tier pins, cooldowns,
    live samples (endpoints' and own credentials'), adaptive load, queued traces and every
    Prometheus sample."""
    adaptive = runtime.adaptive()
    return {
        "turns": runtime.round_robin_turns(),
        "session_pins": dict(runtime.session_pins()._pins),
        "cache_pins": dict(runtime.cache_pins()._pins),
        "warm": dict(runtime.warm_targets()._pins),
        "tier_pins": dict(runtime.tier_pins()._pins),
        "cooldowns": sorted(runtime.cooldowns()._state),
        "live": {k: len(v) for k, v in runtime.live()._samples.items()},
        "credential_live": {k: len(v) for k, v in runtime.credential_live()._samples.items()},
        "adaptive": (dict(adaptive.in_flight), sorted(adaptive.ewma)),
        "traces": len(runtime.traces()._pending),
        "metrics": sorted(
            (s.name, tuple(sorted(s.labels.items())), s.value)
            for family in REGISTRY.collect() if family.name.startswith("switchyard")
            for s in family.samples if not s.name.endswith("_created")
        ),
    }  # fmt: skip


def _post(client: AsyncClient, key: str, path: str, payload: dict[str, Any]) -> Any:
    return client.post(
        path, orjson.dumps(payload), content_type="application/json",
        headers={"Authorization": f"Bearer {key}", "X-Session-Id": "s-1"},
    )  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_d_21_explain_applies_no_effect_and_changes_no_state(settings, monkeypatch):
    applied: list[object] = []
    real_apply = serve.apply
    monkeypatch.setattr(serve, "apply", lambda effects: (applied.append(effects),
                                                         real_apply(effects)))  # fmt: skip
    with in_process_gateway(settings) as key:

        async def scenario() -> tuple[list[int], dict[str, Any], dict[str, Any], int, bool]:
            client = AsyncClient()
            statuses = []
            # given real requests left turns, pins, samples and counters behind
            for model in (ROUND_ROBIN, TIERED):
                body = {"model": model, "messages": [HARD]}
                statuses.append(
                    (await _post(client, key, "/v1/chat/completions", body)).status_code
                )
            before = _fingerprint()
            applied.clear()
            # when requests that would take a turn and pin a session hard are explained
            for model in (ROUND_ROBIN, TIERED, ROUND_ROBIN):
                body = {"model": model, "messages": [HARD]}
                statuses.append((await _post(client, key, "/v1/routing/explain", body)).status_code)
            after = _fingerprint()
            explained_applies = len(applied)
            # and a real request, which must change the state the fingerprint looks at
            body = {"model": ROUND_ROBIN, "messages": [HARD]}
            statuses.append((await _post(client, key, "/v1/chat/completions", body)).status_code)
            changed = _fingerprint() != after
            await close_client()
            return statuses, before, after, explained_applies, changed

        statuses, before, after, explained_applies, real_changes = async_to_sync(scenario)()
    # then nothing was applied and nothing changed, while a real request does change it
    assert statuses == [200] * 6
    assert explained_applies == 0
    assert after == before
    assert real_changes


@pytest.mark.django_db(transaction=True)
def test_a_chat_request_reads_the_wall_clock_once(settings, monkeypatch):
    with in_process_gateway(settings) as key:
        readers: list[str] = []
        real_time = time.time

        def counting_time() -> float:
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if caller.startswith(OUR_CODE) and not caller.startswith(BACKGROUND):
                readers.append(caller)
            return real_time()

        async def scenario() -> list[int]:
            client = AsyncClient()
            body = {"model": TIERED, "messages": [HARD]}
            warm = await _post(client, key, "/v1/chat/completions", body)  # snapshot loaded
            monkeypatch.setattr(time, "time", counting_time)
            try:
                hot = await _post(client, key, "/v1/chat/completions", body)
                stream = await _post(client, key, "/v1/chat/completions", {**body, "stream": True})
                b"".join([chunk async for chunk in stream.streaming_content])
            finally:
                monkeypatch.setattr(time, "time", real_time)
            await close_client()
            return [warm.status_code, hot.status_code, stream.status_code]

        statuses = async_to_sync(scenario)()
    # then each of the two requests read it once, in the request path's serve
    assert statuses == [200, 200, 200]
    assert readers == ["gateway.request_path.serve", "gateway.request_path.serve"]


class _ClockAhead:
    """The `time` module as a module sees it, its `perf_counter` (a request's elapsed
    time, gateway/request_path/caller.py) moved on by `ahead_s`: a slow step, taken at
    once."""

    def __init__(self) -> None:
        self.ahead_s = 0.0

    def perf_counter(self) -> float:
        return time.perf_counter() + self.ahead_s

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


@pytest.mark.django_db(transaction=True)
def test_the_answer_is_handed_over_before_its_record(settings, monkeypatch):
    # The record step's effects (trace, live samples, counters) run on the loop's next turn,
    # so the client does not wait for them; they are still applied, once, with the latency
    # of the answer, not of the bookkeeping after it.
    events: list[str] = []
    traces: list[dict[str, Any]] = []
    answered_at: list[float] = []
    real_apply, real_render = serve.apply, chat.json_response
    clock = _ClockAhead()

    def apply(effects: Any) -> None:
        if effects.traces and answered_at:
            events.append("recorded")
            traces.extend(effects.traces)
        real_apply(effects)

    def slow_json_response(payload: dict[str, Any]) -> Any:
        events.append("answered")
        answered_at.append(time.perf_counter())
        # a slow hand-over (0.3 s pass on the request's clock): not counted in the
        # trace's latency
        clock.ahead_s += 0.3
        return real_render(payload)

    monkeypatch.setattr(serve, "apply", apply)
    with in_process_gateway(settings) as key:

        async def scenario() -> tuple[int, float]:
            client = AsyncClient()
            body = {"model": ROUND_ROBIN, "messages": [HARD]}
            # a first request warms the gateway (a cold one may take longer than the hand-over)
            assert (await _post(client, key, "/v1/chat/completions", body)).status_code == 200
            monkeypatch.setattr(chat, "json_response", slow_json_response)
            monkeypatch.setattr(request_clock, "time", clock)
            sent_at = time.perf_counter()
            status = (await _post(client, key, "/v1/chat/completions", body)).status_code
            await close_client()
            return status, sent_at

        status, sent_at = async_to_sync(scenario)()
    assert status == 200
    assert events == ["answered", "recorded"]
    assert len(traces) == 1
    # the latency ends no later than the hand-over began (+1 for the trace's whole ms)
    assert traces[0]["latency_ms"] <= (answered_at[0] - sent_at) * 1000 + 1
