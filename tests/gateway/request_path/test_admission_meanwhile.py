"""A budgeted request on Redis decides its first model while its admission waits on Redis
(gateway/request_path/serve.py, decide.py `Plan.decide_first`), and uses that decision:
the engine decides once a model, as a request with no budget does."""

from __future__ import annotations

import os
import uuid

import orjson
import pytest
import redis
from asgiref.sync import async_to_sync
from django.test import AsyncClient

from gateway.request_path import decide as plan_module
from gateway.state import admission_state, runtime
from gateway.upstream.client import close_client
from tests.gateway.request_path.inprocess import MODEL_A, in_process_gateway
from workspaces.models import Policy


@pytest.mark.django_db(transaction=True)
def test_r_pol_2_a_budgeted_request_decides_while_redis_answers_and_once(settings, monkeypatch):
    if not os.environ.get("REDIS_URL"):
        pytest.skip("the Redis admission needs REDIS_URL")
    prefix = f"switchyard-test-{uuid.uuid4().hex[:12]}"
    settings.REDIS_URL, settings.SHARED_STATE_PREFIX = os.environ["REDIS_URL"], prefix
    engine_decisions: list[str | None] = []
    ahead: list[bool] = []
    decide, decide_first = plan_module.decide, plan_module.Plan.decide_first

    def counted(endpoints, step, *args):  # type: ignore[no-untyped-def]
        engine_decisions.append(step.model)
        return decide(endpoints, step, *args)

    def first(plan):  # type: ignore[no-untyped-def]
        # (under way: the admission's calls are out, its verdict not yet in)
        ahead.append(admission_state.stores().admitter._takes_out)
        decide_first(plan)

    monkeypatch.setattr(plan_module, "decide", counted)
    monkeypatch.setattr(plan_module.Plan, "decide_first", first)
    try:
        with in_process_gateway(settings) as key:
            # given a workspace policy with a daily budget, its admission on Redis
            Policy.objects.filter(workspace__slug="w").update(daily_budget_micros=10_000_000)
            runtime.reset()
            body = orjson.dumps({"model": MODEL_A, "messages": [{"role": "user", "content": "hi"}]})

            async def scenario() -> list[int]:
                client, auth = AsyncClient(), {"Authorization": f"Bearer {key}"}
                statuses = []
                for _ in range(2):
                    answer = await client.post(
                        "/v1/chat/completions", body, content_type="application/json",
                        headers=auth,
                    )  # fmt: skip
                    statuses.append(answer.status_code)
                    assert answer["x-switchyard-budget-remaining-usd"]  # it was admitted
                await runtime.traces().flush()
                await admission_state.stop()
                await close_client()
                return statuses

            # when two requests are answered
            assert async_to_sync(scenario)() == [200, 200]
    finally:
        client = redis.Redis.from_url(os.environ["REDIS_URL"])
        for name in client.scan_iter(match=f"{prefix}:*"):
            client.delete(name)
        client.close()
    # then each decided its model while its admission was out, and the engine decided it once
    assert ahead == [True, True]
    assert engine_decisions == [MODEL_A, MODEL_A]
