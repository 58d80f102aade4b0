"""Hostile request bodies through a live gateway (SPEC D-19, R-API-3): the body fuzz's kinds
of bodies, and raw bytes JSON cannot express, posted to `/v1/chat/completions` and
`/v1/responses` get a success or an OpenAI-shaped 4xx, never a 500 or an HTML page. The
example count comes from SWITCHYARD_FUZZ_EXAMPLES (default 60) so CI can turn it up."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.gateway.request_path.test_body_fuzz import (
    MODEL,
    chat_bodies,
    json_values,
    nest,
    param_names,
)
from tests.properties import fuzz_examples

pytestmark = pytest.mark.live

LIVE_EXAMPLES = fuzz_examples(60)
ERROR_FIELDS = {"message", "type", "code", "param"}
# Raw JSON value text that no dict can produce: bad UTF-8, NaN, duplicate keys, overflow.
RAW_TAILS = [b'"\xff"', b"NaN", b"Infinity", b"1e999", b'{"a": 1, "a": [}', b'1, "model": 5',
             b'1, "messages": null, "messages": []',
             b'1, "stream": true, "stream": "x"']  # fmt: skip


@st.composite
def live_requests(draw: st.DrawFn) -> tuple[str, bytes]:
    """(path, raw body): one hostile kind per example, for chat or the Responses API."""
    path = draw(st.sampled_from(["/chat/completions", "/responses"]))
    base: dict[str, Any] = {"model": MODEL}
    if path == "/responses":
        base["input"] = "Say hello"
    else:
        base["messages"] = [{"role": "user", "content": "Say hello"}]
    kind = draw(st.sampled_from(["param", "params", "deep", "wide", "raw"]))
    if kind == "param":
        base[draw(param_names)] = draw(json_values)
    elif kind == "params":
        base.update(draw(chat_bodies()))
        if path == "/responses":
            base["input"] = base.pop("messages")
    elif kind == "wide":
        base["x"] = [0] * draw(st.integers(10_000, 120_000))  # 20 kB to past the 200 kB limit
    else:
        prefix = orjson.dumps(base)[:-1] + b', "x": '
        depth = draw(st.integers(1, 1100))
        tail = nest(depth) if kind == "deep" else draw(st.sampled_from(RAW_TAILS))
        return path, prefix + tail + b"}"
    return path, orjson.dumps(base)


@settings(
    max_examples=LIVE_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(request=live_requests())
def test_live_hostile_bodies_get_a_success_or_an_openai_shaped_4xx(fresh_live, request):
    # given
    path, raw = request
    headers = {"Authorization": f"Bearer {fresh_live.keys['acme']}",
               "Content-Type": "application/json"}  # fmt: skip
    # when
    response = httpx.post(f"{fresh_live.base_url}{path}", headers=headers, content=raw, timeout=20)
    # then
    assert 200 <= response.status_code < 500, (response.status_code, response.text[:300], raw[:300])
    content_type = response.headers["content-type"]
    if response.status_code >= 300:
        assert content_type == "application/json", response.text[:300]
        assert set(response.json()["error"]) >= ERROR_FIELDS, response.text[:300]
    else:
        assert content_type.startswith(("application/json", "text/event-stream")), content_type
