"""The auto router through a live gateway (SPEC R-AUTO-2, R-AUTO-3): the LLM classifier is a
real child request with its own trace, and any failure of it falls back to the local
classifier without failing the client's request. Workspace `autoclf`
(tests/live/installation.py) asks meta/llama-3.3-70b, whose cheapest endpoint is the
`cheap` fake, with a 1 s timeout."""

from __future__ import annotations

import time

import httpx
import pytest

pytestmark = pytest.mark.live

BODY = {"model": "auto", "messages": [{"role": "user", "content": "Why does the sky look blue?"}]}


def _headers(fresh_live) -> dict[str, str]:
    return {"Authorization": f"Bearer {fresh_live.keys['autoclf']}"}


def _auto_request(fresh_live) -> tuple[httpx.Response, dict, dict]:
    """Send BODY; return the response, its trace and the classifier child's trace."""
    response = httpx.post(
        f"{fresh_live.base_url}/chat/completions", headers=_headers(fresh_live), json=BODY,
        timeout=10,
    )  # fmt: skip
    assert response.status_code == 200, response.text
    key = fresh_live.keys["autoclf"]
    parent = fresh_live.stored_trace(response.headers["x-switchyard-trace-id"], key)
    child = fresh_live.stored_trace(parent["decision"]["auto"]["classifier"]["trace_id"], key)
    return response, parent, child


def test_r_auto_2_the_classifier_is_a_child_request_with_its_own_trace(fresh_live):
    response, parent, child = _auto_request(fresh_live)
    auto = parent["decision"]["auto"]
    # the fake answers the schema, so the LLM verdict is used
    assert auto["classifier"]["outcome"] == "ok"
    assert auto["workload"]["source"] == "llm"
    assert parent["decision"]["request"]["complexity"] == auto["workload"]["complexity"]
    # the child: same workspace, its own trace and cost, labelled and linked to the parent
    assert child["purpose"] == "auto_routing_classifier"
    assert child["parent_id"] == parent["id"]
    assert child["model"] == "meta/llama-3.3-70b"
    assert child["status_code"] == 200
    assert child["cost_usd"] > 0
    assert parent["purpose"] == ""
    assert parent["parent_id"] is None
    # the client's request and the classifier's both reached an upstream
    assert sum(fake.stats()["requests"] for fake in fresh_live.fakes.values()) == 2
    assert response.json()["switchyard"]["trace_id"] == parent["id"]


@pytest.mark.parametrize(
    ("fault", "outcome"),
    [
        ("hang", "classifier_timeout"),
        ("ignore_format", "classifier_invalid_output"),  # prose instead of the schema
        ("malformed", "upstream_error"),  # bytes that are not JSON, from both endpoints (D-18)
    ],
)
def test_r_auto_2_a_failing_classifier_falls_back_to_the_local_verdict(fresh_live, fault, outcome):
    # given the classifier's upstreams misbehave on their next request (the child comes
    # first; a malformed answer fails over, so both of the model's endpoints get it)
    for name in ("cheap", "pricey") if fault == "malformed" else ("cheap",):
        fresh_live.fakes[name].set_faults([fault])
    started = time.monotonic()
    # when
    _response, parent, child = _auto_request(fresh_live)
    # then the client's request still succeeds, routed on the local verdict
    auto = parent["decision"]["auto"]
    assert auto["workload"]["source"] == "local"
    assert auto["workload"]["task"] == "reasoning"  # "why does" — the local rule
    assert auto["classifier"]["outcome"] == outcome
    # and the child's trace records the failure
    assert child["purpose"] == "auto_routing_classifier"
    assert child["error_code"] == outcome
    if fault == "hang":
        assert child["status_code"] == 504
        assert time.monotonic() - started < 3  # the strict timeout, not the upstream's


def test_r_auto_3_explain_shows_the_ranking_without_calling_the_classifier(fresh_live):
    explained = fresh_live.explain(fresh_live.keys["autoclf"], BODY)
    assert explained["auto"]["classifier"]["outcome"] == "not_called_in_explain"
    assert explained["auto"]["workload"]["source"] == "local"
    ranking = explained["decisions"][0]["auto_ranking"]
    assert ranking["objective"] == "balanced"
    assert ranking["selected"] == ranking["models"][0]["model"]
    assert [m["model"] for m in ranking["models"]][1:] == ranking["fallback_order"]
    assert sum(fake.stats()["requests"] for fake in fresh_live.fakes.values()) == 0
