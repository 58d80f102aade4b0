"""Prometheus metrics and health (SPEC R-API-8's /metrics part; the foundation's /healthz)."""

from __future__ import annotations

import re

import httpx
import openai
import pytest

from gateway.processes import running_gateway

pytestmark = pytest.mark.live


def _requests_total(metrics_text: str, provider: str) -> float:
    pattern = (
        rf'^switchyard_requests_total\{{[^}}]*provider="{provider}"[^}}]*status="200"\}} (\S+)$'
    )
    return sum(float(m) for m in re.findall(pattern, metrics_text, flags=re.MULTILINE))


def test_metrics_count_requests_across_two_workers(fresh_live):
    # given a second gateway with two workers on the same installation
    with running_gateway(fresh_live.own_env(), workers=2) as gateway:
        # when twenty requests, each on a new connection, spread over the workers
        for _ in range(20):
            with openai.OpenAI(
                base_url=gateway.base_url, api_key=fresh_live.keys["acme"], max_retries=0
            ) as client:
                client.chat.completions.create(
                    model="meta/llama-3.3-70b", messages=[{"role": "user", "content": "hi"}]
                )
        scrapes = [httpx.get(f"{gateway.url}/metrics").text for _ in range(6)]
    # then every scrape sees all twenty, whichever worker answered it
    assert [_requests_total(text, "cheap") for text in scrapes] == [20] * 6
    assert "switchyard_upstream_latency_seconds_bucket" in scrapes[0]
    assert 'switchyard_selections_total{endpoint="cheap-llama",mode="price"} 20.0' in scrapes[0]
    # every attempt has ended: nothing is left in flight, and the estimate is known
    assert 'switchyard_upstream_in_flight{model="meta/llama-3.3-70b"} 0.0' in scrapes[0]
    assert 'switchyard_latency_estimate_ms{model="meta/llama-3.3-70b"}' in scrapes[0]


def test_healthz_reports_its_checks(fresh_live):
    response = httpx.get(f"{fresh_live.gateway.url}/healthz")
    assert response.status_code == 200
    checks = response.json()["checks"]
    assert checks["database"] is True
    assert ("redis" in checks) == bool(fresh_live.env.get("REDIS_URL"))
    assert checks["budget_store"] is True
    assert response.json()["budget_store"] in ("memory", "database", "redis")
