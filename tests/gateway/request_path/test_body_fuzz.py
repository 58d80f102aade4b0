"""Hostile request bodies never break the gateway (SPEC D-19, R-API-3): whatever arrives,
the answer is a success or an OpenAI-shaped 4xx, never a 500 or an HTML page.

The pure properties drive `read_json` + `validate_chat` directly; the live fuzz, which
posts the same kinds of bodies to a running gateway, is tests/live/api/test_body_fuzz_api.py.
"""

from __future__ import annotations

from typing import Any

import orjson
from django.test import RequestFactory
from hypothesis import given
from hypothesis import strategies as st

from gateway.errors import ApiError
from gateway.request_path.params import STANDARD_PARAMS
from gateway.request_path.parse import MAX_JSON_DEPTH, read_json, validate_chat

MODEL = "meta/llama-3.3-70b"
MAX_BODY_BYTES = 200_000  # what tests/live/installation.py gives the live gateway

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
