"""An explicit `provider.order` beats session keeping (SPEC D-15, R-EXE-7): the request's
own order is tried as sent, the session's pin is neither followed nor set, and the decision
record says so. A gateway of its own with session keeping on (the shared one keeps it off)."""

from __future__ import annotations

import httpx
import orjson
import pytest

from gateway.processes import running_gateway

pytestmark = pytest.mark.live

LLAMA = "meta/llama-3.3-70b"  # cheap-llama (cheaper, first in acme's price order), pricey-llama


def _note(order: list[str]) -> str:
    return (
        f"Affinity skipped: the request sets provider.order ({', '.join(order)}), which takes "
        "priority over session keeping and prompt-cache pins; no pin is followed or set."
    )


@pytest.fixture
def sticky(fresh_live):
    env = fresh_live.own_env(SWITCHYARD_SESSION_AFFINITY="true")
    with running_gateway(env) as gateway:
        yield gateway


def _body(opening: str, **extra) -> dict:
    # no session id: the session is the hash of the opening messages (R-EXE-7)
    return {"model": LLAMA, "messages": [{"role": "user", "content": opening}], **extra}


def _chat(gateway, key: str, body: dict) -> httpx.Response:
    response = httpx.post(
        f"{gateway.base_url}/chat/completions",
        headers={"Authorization": f"Bearer {key}"},
        json=body,
    )
    assert response.status_code == 200, response.text
    return response


def _attempts(response: httpx.Response) -> list[tuple[str, str]]:
    attempts = orjson.loads(response.headers["x-switchyard-attempts"])
    return [(a["provider"], a["status"]) for a in attempts]


def test_an_explicit_provider_order_is_tried_before_the_session_pin(sticky, fresh_live):
    # given a session kept on the dearer endpoint (its first request allowed only pricey)
    key = fresh_live.keys["acme"]
    opening = "Order beats the pin: plan the offsite agenda."
    only_pricey = _chat(sticky, key, _body(opening, provider={"only": ["pricey"]}))
    assert _attempts(only_pricey) == [("pricey", "ok")]
    assert _attempts(_chat(sticky, key, _body(opening))) == [("pricey", "ok")]  # the pin holds
    # when the same session names its own order, cheap first
    ordered = _body(opening, provider={"order": ["cheap", "pricey"]})
    served = _chat(sticky, key, ordered)
    # then the order is tried as sent, and the decision record says why the pin was skipped
    assert _attempts(served) == [("cheap", "ok")]
    assert served.json()["switchyard"]["provider"] == "cheap"
    trace = fresh_live.stored_trace(served.headers["x-switchyard-trace-id"], key, sticky.base_url)
    assert _note(["cheap", "pricey"]) in trace["decision"]["decisions"][0]["notes"]
    explained = fresh_live.explain(key, ordered, base_url=sticky.base_url)
    assert explained["attempt_order"] == ["cheap-llama", "pricey-llama"]
    assert _note(["cheap", "pricey"]) in explained["decisions"][0]["notes"]
    # and the session's own pin is left as it was for its requests without an order
    kept = fresh_live.explain(key, _body(opening), base_url=sticky.base_url)
    assert kept["attempt_order"][0] == "pricey-llama"
    assert _attempts(_chat(sticky, key, _body(opening))) == [("pricey", "ok")]


def test_a_request_with_an_explicit_order_sets_no_session_pin(sticky, fresh_live):
    # given a new session whose first request puts the dearer provider first
    key = fresh_live.keys["acme"]
    opening = "Order sets no pin: draft the release notes."
    first = _chat(sticky, key, _body(opening, provider={"order": ["pricey", "cheap"]}))
    assert _attempts(first) == [("pricey", "ok")]
    # when the session asks again without an order
    again = _chat(sticky, key, _body(opening))
    # then the workspace's price order decides: the ordered request left no pin behind
    assert _attempts(again) == [("cheap", "ok")]
