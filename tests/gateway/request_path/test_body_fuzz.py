"""Hostile request bodies never break the gateway (SPEC D-19, R-API-3): whatever arrives,
the answer is a success or an OpenAI-shaped 4xx, never a 500 or an HTML page.

The pure properties drive `read_json` + `validate_chat` directly; the live one posts the
same kinds of bodies, and raw bytes JSON cannot express, to a running gateway. The live
example count comes from SWITCHYARD_FUZZ_EXAMPLES (default 60) so CI can turn it up.
"""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
from django.test import RequestFactory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.errors import ApiError
from gateway.request_path.params import STANDARD_PARAMS
from gateway.request_path.parse import MAX_JSON_DEPTH, read_json, validate_chat
from tests.properties import fuzz_examples

MODEL = "meta/llama-3.3-70b"
MAX_BODY_BYTES = 200_000  # what tests/live/installation.py gives the live gateway
LIVE_EXAMPLES = fuzz_examples(60)
ERROR_FIELDS = {"message", "type", "code", "param"}

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | st.sampled_from(["none", "auto", "required", "function", "text", "json_schema", ""])
)
# Keys the checkers look inside, so nested shapes are reached, not only rejected at the top.
SHAPE_KEYS = ["type", "function", "name", "parameters", "description", "json_schema", "schema",
              "strict", "include_usage", "text", "x"]  # fmt: skip
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(st.sampled_from(SHAPE_KEYS) | st.text(max_size=4), children, max_size=5)
    ),
    max_leaves=12,
)
param_names = st.sampled_from(sorted(STANDARD_PARAMS))
messages = st.one_of(
    st.just([{"role": "user", "content": "Say hello"}]),
    st.lists(
        st.fixed_dictionaries(
            {"role": st.sampled_from(["user", "tool", "x"]), "content": json_values}
        ),
        max_size=3,
    ),
    json_values,
)


@st.composite
def chat_bodies(draw: st.DrawFn) -> dict[str, Any]:
    """A chat body with arbitrary values (wrong types, out of range) for standard params."""
    body: dict[str, Any] = {"model": MODEL, "messages": draw(messages)}
    for name in draw(st.lists(param_names, min_size=1, max_size=4, unique=True)):
        body[name] = draw(json_values)
    return body


def nest(depth: int, leaf: bytes = b"0") -> bytes:
    return (
        b'{"a":' * (depth // 2)
        + b"[" * (depth - depth // 2)
        + leaf
        + b"]" * (depth - depth // 2)
        + b"}" * (depth // 2)
    )


HOSTILE_RAW = [
    b'{"model": "m", "messages": [{"role": "user", "content": "\xff\xfe"}]}',
    b'{"model": "m", "messages": [], "temperature": NaN}',
    b'{"model": "m", "temperature": -Infinity}',
    b'{"model": "m", "model": 5, "messages": 1, "messages": [{"role": "user"}]}',
    b'{"model": "\\udfff"}',
    b"\x00\x01\x02",
    b"",
    b"null",
]
# Raw JSON value text that no dict can produce: bad UTF-8, NaN, duplicate keys, overflow.
RAW_TAILS = [b'"\xff"', b"NaN", b"Infinity", b"1e999", b'{"a": 1, "a": [}', b'1, "model": 5',
             b'1, "messages": null, "messages": []',
             b'1, "stream": true, "stream": "x"']  # fmt: skip


def outcome(raw: bytes) -> int:
    """200 when the body is accepted, else the ApiError status; anything else propagates."""
    request = RequestFactory().post(
        "/v1/chat/completions", data=raw, content_type="application/json"
    )
    try:
        validate_chat(read_json(request, MAX_BODY_BYTES))
    except ApiError as error:
        return error.status
    return 200


@given(body=chat_bodies())
def test_any_standard_parameter_value_is_accepted_or_a_400(body):
    # when
    status = outcome(orjson.dumps(body))
    # then
    assert status in (200, 400)


@given(raw=st.binary(max_size=64) | st.sampled_from(HOSTILE_RAW) | st.integers(1, 400).map(nest))
def test_any_bytes_are_accepted_or_a_400_or_413(raw):
    # when
    status = outcome(b'{"model": "m", "messages": [{"role": "user"}], "x": ' + raw + b"}")
    status_bare = outcome(raw)
    # then
    assert {status, status_bare} <= {200, 400, 413}


@given(depth=st.integers(1, 600))
def test_a_body_is_refused_exactly_when_too_deep_and_what_is_accepted_serialises(depth):
    # given a body whose `x` nests `depth` levels below the body object
    raw = b'{"model": "m", "messages": [{"role": "user"}], "x": ' + nest(depth) + b"}"
    request = RequestFactory().post(
        "/v1/chat/completions", data=raw, content_type="application/json"
    )
    # when
    body, refusal = None, None
    try:
        body = read_json(request, MAX_BODY_BYTES)
    except ApiError as error:
        refusal = (error.status, error.code)
    # then: refused past the limit; accepted bodies survive the upstream's re-serialisation
    if depth + 1 > MAX_JSON_DEPTH:
        assert refusal == (400, "invalid_json")
    else:
        assert refusal is None
        assert orjson.loads(orjson.dumps(body)) == body


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


@pytest.mark.live
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
