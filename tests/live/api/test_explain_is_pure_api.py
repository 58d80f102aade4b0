"""`POST /v1/routing/explain` is a pure dry run (SPEC D-21, R-BEY-2): explaining a request
takes no round-robin turn and moves no counter, so it never changes what the next real
request does — and it shows exactly what that request will do."""

from __future__ import annotations

import httpx
import openai
import orjson
import pytest

ROUND_ROBIN = (
    "duo-round-robin"  # acme/tiny (cheap-tiny), acme/mini (pricey-mini): tests/live/installation.py
)
# Every routing and affinity series the request path writes (gateway/metrics.py).
ROUTING_SERIES = ("switchyard_", "session_affinity_total", "cache_affinity_total")


def _served(client: openai.OpenAI, model: str) -> str:
    raw = client.chat.completions.with_raw_response.create(
        model=model, messages=[{"role": "user", "content": "hi"}]
    )
    return orjson.loads(raw.headers["x-switchyard-attempts"])[-1]["endpoint"]


def _explained_first(live, model: str) -> str:
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    return live.explain(live.keys["acme"], body)["attempt_order"][0]


def _routing_samples(live) -> list[str]:
    text = httpx.get(f"{live.gateway.url}/metrics").text
    return sorted(line for line in text.splitlines() if line.startswith(ROUTING_SERIES))


@pytest.mark.live
def test_explaining_takes_no_round_robin_turn_and_moves_no_counter(client, fresh_live):
    # given a real request took its round-robin turn
    first = _served(client, ROUND_ROBIN)
    metrics_before = _routing_samples(fresh_live)
    # when the same request is explained three times
    explained = [_explained_first(fresh_live, ROUND_ROBIN) for _ in range(3)]
    metrics_after = _routing_samples(fresh_live)
    second = _served(client, ROUND_ROBIN)
    # then the next real request takes the next turn, as if nothing had been explained,
    # every explanation showed that turn, and no routing counter moved
    assert {first, second} == {"cheap-tiny", "pricey-mini"}
    assert explained == [second, second, second]
    assert metrics_after == metrics_before
