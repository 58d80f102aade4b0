"""Prometheus metrics and health (SPEC R-API-8's /metrics part, R-OBS-3, R-BEY-9; the
foundation's /healthz)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import openai
import pytest

from gateway.processes import running_gateway
from tests.live.installation import Live
from tests.waiting import wait_for

pytestmark = pytest.mark.live

MESSAGES = [{"role": "user", "content": "hi"}]
# A workspace of its own whose key a deployed route walks: the route passes the requested
# model through, so its requests are served as the `acme` key's are.
METERED = """\
workspaces:
  - slug: metered
    policy: {routing_mode: price}
    routes:
      - slug: metered-route
        start: pick
        nodes:
          pick: {type: model, model: requested}
    keys:
      - {name: metered-bot, routes: [metered-route]}
"""
# How both series name a request's route: adjacent, whether the labels come out in declared
# order (one worker) or sorted by name (several workers, PROMETHEUS_MULTIPROC_DIR).
ROUTE_LABELS = 'route="metered-route",route_version="1"'
SAMPLE = re.compile(r"^(\w+)\{([^}]*)\} (\S+)$", re.MULTILINE)


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


def _samples(metrics_text: str, name: str) -> list[tuple[dict[str, str], float]]:
    """Each sample of `name` on a /metrics page, as (labels, value)."""
    return [
        (dict(re.findall(r'(\w+)="([^"]*)"', labels)), float(value))
        for series, labels, value in SAMPLE.findall(metrics_text)
        if series == name
    ]


def _served_unrouted(metrics_text: str) -> float:
    return sum(
        value
        for labels, value in _samples(metrics_text, "switchyard_requests_total")
        if (labels["provider"], labels["status"]) == ("cheap", "200")
        and (labels["route"], labels["route_version"]) == ("", "")
    )


def _routed_key(live: Live, folder: Path) -> str:
    config = folder / "metered.yaml"
    config.write_text(METERED)
    live.manage("apply", "-f", str(config))
    live.manage("route", "deploy", "metered-route", "--workspace", "metered")
    key = live.new_key("metered", "metered-bot")
    wait_for(lambda: _route_of(live, key) == ("metered-route", 1),
             "the deploy to be in the gateway's snapshot")  # fmt: skip
    return key


def _route_of(live: Live, key: str) -> tuple[str, int] | None:
    """The route (slug, version) the gateway would walk the key's request by: a dry run
    (`/v1/routing/explain`), which counts in no metric."""
    route = live.explain(key, {"model": "meta/llama-3.3-70b", "messages": MESSAGES})["route"]
    return None if route is None else (route["slug"], route["version"])


def test_r_obs_3_requests_and_attempts_carry_their_route_and_version(fresh_live, tmp_path):
    # given a key a deployed route walks, and the `acme` key that has no route
    routed_key = _routed_key(fresh_live, tmp_path)
    before = httpx.get(f"{fresh_live.gateway.url}/metrics").text
    # when each makes one request for the same model
    blocks = []
    for key in (routed_key, fresh_live.keys["acme"]):
        with openai.OpenAI(base_url=fresh_live.base_url, api_key=key, max_retries=0) as client:
            reply = client.chat.completions.create(model="meta/llama-3.3-70b", messages=MESSAGES)
        blocks.append(reply.model_extra["switchyard"])
    after = httpx.get(f"{fresh_live.gateway.url}/metrics").text
    # then the routed request was walked by version 1 of its route (D-23) ...
    assert (blocks[0]["route"], blocks[0]["route_version"]) == ("metered-route", 1)
    assert "route" not in blocks[1]
    # ... and its request and attempt series carry the route's slug and version
    routed = [line for line in after.splitlines() if ROUTE_LABELS in line and "_total{" in line]
    assert sorted(line.split("{")[0] for line in routed) == [
        "switchyard_requests_total", "switchyard_upstream_attempts_total",
    ]  # fmt: skip
    assert _samples("\n".join(routed), "switchyard_requests_total") == [
        ({"operation": "chat.completions", "model": "meta/llama-3.3-70b", "provider": "cheap",
          "status": "200", "route": "metered-route", "route_version": "1"}, 1.0),
    ]  # fmt: skip
    assert _samples("\n".join(routed), "switchyard_upstream_attempts_total") == [
        ({"provider": "cheap", "endpoint": "cheap-llama", "outcome": "ok",
          "route": "metered-route", "route_version": "1"}, 1.0),
    ]  # fmt: skip
    # and the request without a route counts on the series whose route labels are empty
    assert _served_unrouted(after) - _served_unrouted(before) == 1
    assert re.search(
        r'^switchyard_requests_total\{[^}]*provider="cheap"[^}]*route="",route_version=""',
        after, flags=re.MULTILINE,
    )  # fmt: skip
