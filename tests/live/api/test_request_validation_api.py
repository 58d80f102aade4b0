"""Request bodies are checked before routing, through a live gateway (SPEC D-19, R-API-3): a
bad standard parameter or a body nested too deep is a 400 on `/v1/chat/completions`,
`/v1/routing/explain` and `/v1/responses` before any upstream call, and fields the gateway
does not know reach the upstream untouched."""

from __future__ import annotations

import httpx
import orjson
import pytest

from tests.gateway.request_path.test_request_validation import (
    MESSAGES,
    MODEL,
    WEATHER_TOOL,
    chat,
    deep_body,
)

pytestmark = pytest.mark.live


def _post_live(live, path: str, content: bytes) -> httpx.Response:
    headers = {"Authorization": f"Bearer {live.keys['acme']}", "Content-Type": "application/json"}
    return httpx.post(f"{live.base_url}{path}", headers=headers, content=content, timeout=10)


def _no_upstream_call(live) -> bool:
    return all(fake.stats()["requests"] == 0 for fake in live.fakes.values())


@pytest.mark.parametrize(
    ("path", "body", "param"),
    [
        ("/chat/completions", chat(temperature="hot"), "temperature"),
        ("/routing/explain", chat(stop=["a", "b", "c", "d", "e"]), "stop"),
        ("/responses", {"model": MODEL, "input": "hi", "top_p": 7}, "top_p"),
        (
            "/chat/completions",
            chat(tools=[WEATHER_TOOL, {"type": "function", "function": {"name": ""}}]),
            "tools[1].function.name",
        ),
    ],
)
def test_live_a_bad_parameter_is_a_400_before_any_upstream_call(fresh_live, path, body, param):
    # when
    response = _post_live(fresh_live, path, orjson.dumps(body))
    # then
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert (error["code"], error["param"], error["type"]) == (
        "invalid_request", param, "invalid_request_error"
    )  # fmt: skip
    assert error["message"]
    assert _no_upstream_call(fresh_live)


@pytest.mark.parametrize("path", ["/chat/completions", "/responses"])
def test_live_a_300_deep_body_is_a_400_not_a_500(fresh_live, path):
    # given a valid request with one field nested 300 levels
    raw = deep_body(300, model=MODEL, messages=MESSAGES, input="hi")
    # when
    response = _post_live(fresh_live, path, raw)
    # then
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "invalid_json"
    assert _no_upstream_call(fresh_live)


def test_live_unknown_fields_reach_the_upstream_untouched(fresh_live):
    # given
    body = chat(temperature=0.5, vendor_x={"deep": [1, {"a": None}]})
    # when
    response = _post_live(fresh_live, "/chat/completions", orjson.dumps(body))
    # then
    assert response.status_code == 200, response.text
    sent = fresh_live.fakes["cheap"].stats()["last_request"]["body"]
    assert (sent["vendor_x"], sent["temperature"]) == ({"deep": [1, {"a": None}]}, 0.5)
