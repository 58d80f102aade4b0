"""Request bodies are checked before routing (SPEC D-19, R-API-3): standard OpenAI parameters
by type and range with a 400 naming the parameter, and hostile JSON (too deep, not UTF-8,
NaN) as a clean 400 instead of a 500. The tests need no database; the same checks against a
running gateway are in tests/live/api/test_request_validation_api.py."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from django.test import RequestFactory

from gateway.errors import ApiError
from gateway.request_path.parse import MAX_JSON_DEPTH, is_deeper_than, read_json, validate_chat

MODEL = "meta/llama-3.3-70b"
MESSAGES = [{"role": "user", "content": "Say hello"}]
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
    },
}
MAX_BODY_BYTES = 200_000


def chat(**params: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": copy.deepcopy(MESSAGES), **params}


def nested(depth: int) -> Any:
    """`depth` levels of arrays, innermost empty: nested(1) == []."""
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


def deep_body(depth: int, **fields: Any) -> bytes:
    """A JSON object (level 1) whose `x` nests arrays down to level `depth`, as bytes:
    orjson itself cannot serialise past 254 levels."""
    prefix = orjson.dumps(fields)[:-1] + (b', "x": ' if fields else b'"x": ')
    return prefix + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}"


def post(raw: bytes) -> Any:
    return RequestFactory().post("/v1/chat/completions", data=raw, content_type="application/json")


def with_content(content: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": [{"role": "user", "content": content}]}


BAD_PARAMS = [
    ("temperature a string", chat(temperature="hot"), "temperature"),
    ("temperature above 2", chat(temperature=2.5), "temperature"),
    ("temperature below 0", chat(temperature=-0.1), "temperature"),
    ("temperature a bool", chat(temperature=True), "temperature"),
    ("temperature NaN", chat(temperature=float("nan")), "temperature"),
    ("temperature infinite", chat(temperature=float("inf")), "temperature"),
    ("top_p above 1", chat(top_p=1.5), "top_p"),
    ("top_p a list", chat(top_p=[0.5]), "top_p"),
    ("n zero", chat(n=0), "n"),
    ("n a float", chat(n=1.5), "n"),
    ("n a bool", chat(n=True), "n"),
    ("max_tokens zero", chat(max_tokens=0), "max_tokens"),
    ("max_tokens a bool", chat(max_tokens=True), "max_tokens"),
    ("max_tokens a whole float", chat(max_tokens=16.0), "max_tokens"),
    ("max_tokens a string", chat(max_tokens="16"), "max_tokens"),
    ("max_completion_tokens negative", chat(max_completion_tokens=-1), "max_completion_tokens"),
    ("presence_penalty above 2", chat(presence_penalty=3), "presence_penalty"),
    ("frequency_penalty below -2", chat(frequency_penalty=-2.5), "frequency_penalty"),
    ("frequency_penalty a string", chat(frequency_penalty="0"), "frequency_penalty"),
    ("stop a number", chat(stop=5), "stop"),
    ("stop five strings", chat(stop=["a", "b", "c", "d", "e"]), "stop"),
    ("stop with a number", chat(stop=["a", "b", 3]), "stop[2]"),
    ("stop an object", chat(stop={"a": 1}), "stop"),
    ("seed a float", chat(seed=1.5), "seed"),
    ("seed a string", chat(seed="7"), "seed"),
    ("seed a bool", chat(seed=False), "seed"),
    ("logit_bias an array", chat(logit_bias=[1, 2]), "logit_bias"),
    ("logit_bias to a string", chat(logit_bias={"50256": "-100"}), "logit_bias.50256"),
    ("stream a string", chat(stream="yes"), "stream"),
    ("stream a number", chat(stream=1), "stream"),
    ("tools an object", chat(tools=WEATHER_TOOL), "tools"),
    ("tools item a number", chat(tools=[5]), "tools[0]"),
    ("tool of an unknown type", chat(tools=[{"type": "custom"}]), "tools[0].type"),
    ("tool without a function", chat(tools=[{"type": "function"}]), "tools[0].function"),
    (
        "second tool with an empty name",
        chat(tools=[WEATHER_TOOL, {"type": "function", "function": {"name": ""}}]),
        "tools[1].function.name",
    ),
    (
        "tool without a name",
        chat(tools=[{"type": "function", "function": {"description": "x"}}]),
        "tools[0].function.name",
    ),
    (
        "tool parameters an array",
        chat(tools=[{"type": "function", "function": {"name": "f", "parameters": []}}]),
        "tools[0].function.parameters",
    ),
    (
        "tool description a number",
        chat(tools=[{"type": "function", "function": {"name": "f", "description": 5}}]),
        "tools[0].function.description",
    ),
    ("tool_choice an unknown mode", chat(tool_choice="sometimes"), "tool_choice"),
    ("tool_choice a number", chat(tool_choice=1), "tool_choice"),
    ("tool_choice of another type", chat(tool_choice={"type": "tool"}), "tool_choice.type"),
    (
        "tool_choice without a function",
        chat(tool_choice={"type": "function"}),
        "tool_choice.function",
    ),
    (
        "tool_choice name a number",
        chat(tool_choice={"type": "function", "function": {"name": 3}}),
        "tool_choice.function.name",
    ),
    ("response_format a string", chat(response_format="json"), "response_format"),
    ("response_format of no type", chat(response_format={}), "response_format.type"),
    ("response_format of a type", chat(response_format={"type": "yaml"}), "response_format.type"),
    (
        "json_schema format without its schema block",
        chat(response_format={"type": "json_schema"}),
        "response_format.json_schema",
    ),
    (
        "json_schema without a name",
        chat(response_format={"type": "json_schema", "json_schema": {"schema": {}}}),
        "response_format.json_schema.name",
    ),
    (
        "json_schema schema an array",
        chat(response_format={"type": "json_schema", "json_schema": {"name": "a", "schema": []}}),
        "response_format.json_schema.schema",
    ),
    (
        "json_schema strict a string",
        chat(response_format={"type": "json_schema", "json_schema": {"name": "a", "strict": "y"}}),
        "response_format.json_schema.strict",
    ),
    ("stream_options a bool", chat(stream_options=True), "stream_options"),
    (
        "include_usage a string",
        chat(stream_options={"include_usage": "yes"}),
        "stream_options.include_usage",
    ),
    ("content a number", with_content(5), "messages[0].content"),
    ("content an object", with_content({"type": "text"}), "messages[0].content"),
    ("content part a string", with_content(["hi"]), "messages[0].content[0]"),
    ("content part without type", with_content([{"text": "x"}]), "messages[0].content[0].type"),
    (
        "text part with a number",
        with_content([{"type": "text", "text": 5}]),
        "messages[0].content[0].text",
    ),
    ("no messages", {"model": MODEL}, "messages"),
    ("a message a string", {"model": MODEL, "messages": ["hi"]}, "messages[0]"),
    ("an unknown role", {"model": MODEL, "messages": [{"role": "wizard"}]}, "messages[0].role"),
]


@pytest.mark.parametrize(("_case", "body", "param"), BAD_PARAMS)
def test_a_bad_standard_parameter_is_a_400_naming_it(_case, body, param):
    # when
    with pytest.raises(ApiError) as caught:
        validate_chat(body)
    # then
    error = caught.value.body()["error"]
    assert (caught.value.status, error["code"], error["param"]) == (400, "invalid_request", param)
    assert error["type"] == "invalid_request_error"
    assert error["message"]


def test_the_message_says_what_is_expected():
    # when
    with pytest.raises(ApiError) as caught:
        validate_chat(chat(temperature="hot"))
    # then
    assert caught.value.message == "`temperature` must be a number between 0 and 2"


GOOD_PARAMS = [
    ("temperature bounds and an int", chat(temperature=0, top_p=1, presence_penalty=-2)),
    ("fractional values", chat(temperature=0.7, top_p=0.0, frequency_penalty=2.0)),
    ("integers", chat(n=1, max_tokens=1, max_completion_tokens=2**31, seed=-5)),
    ("stop a string", chat(stop="END")),
    ("stop four strings", chat(stop=["a", "b", "c", "d"])),
    ("stop empty", chat(stop=[])),
    ("logit_bias", chat(logit_bias={"50256": -100, "11": 0.5})),
    ("stream with options", chat(stream=True, stream_options={"include_usage": True})),
    ("stream off, empty options", chat(stream=False, stream_options={})),
    (
        "a full tool and a bare one",
        chat(tools=[WEATHER_TOOL, {"type": "function", "function": {"name": "f"}}]),
    ),  # fmt: skip
    ("no tools", chat(tools=[])),
    *[(f"tool_choice {mode}", chat(tool_choice=mode)) for mode in ("none", "auto", "required")],
    ("named tool_choice", chat(tool_choice={"type": "function", "function": {"name": "f"}})),
    *[
        (f"response_format {kind}", chat(response_format={"type": kind}))
        for kind in ("text", "json_object")
    ],  # fmt: skip
    (
        "response_format json_schema",
        chat(
            response_format={
                "type": "json_schema",
                "json_schema": {
                    "name": "answer",
                    "schema": {"type": "object"},
                    "strict": True,
                    "description": "d",
                },
            }
        ),
    ),  # fmt: skip
    ("content null", with_content(None)),
    (
        "content parts",
        with_content(
            [
                {"type": "text", "text": "hi"},
                {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
            ]
        ),
    ),  # fmt: skip
    (
        "every parameter null",
        chat(
            **dict.fromkeys(
                [
                    "temperature",
                    "top_p",
                    "n",
                    "max_tokens",
                    "max_completion_tokens",
                    "presence_penalty",
                    "frequency_penalty",
                    "stop",
                    "seed",
                    "logit_bias",
                    "stream",
                    "stream_options",
                    "tools",
                    "tool_choice",
                    "response_format",
                ]
            )
        ),
    ),  # fmt: skip
    (
        "null optional fields inside shapes",
        chat(
            tools=[{"type": "function", "function": {"name": "f", "parameters": None}}],
            response_format={"type": "json_schema", "json_schema": {"name": "a", "strict": None}},
            stream_options={"include_usage": None},
        ),
    ),  # fmt: skip
]


@pytest.mark.parametrize(("_case", "body"), GOOD_PARAMS)
def test_good_standard_parameters_pass(_case, body):
    # when / then: no error
    validate_chat(body)


def test_unknown_fields_pass_through_untouched():
    # given fields the gateway does not know, of any shape
    body = chat(reasoning_effort="high", vendor_x={"deep": [1, {"a": None}]}, temperature=1)
    sent = copy.deepcopy(body)
    # when
    validate_chat(body)
    # then
    assert body == sent


@pytest.mark.parametrize(
    ("_case", "raw"),
    [
        ("nested arrays past the limit", deep_body(MAX_JSON_DEPTH + 1)),
        ("300 levels, more than orjson can serialise", deep_body(300)),
        ("past orjson's own parse limit", deep_body(2000)),
        ("nested objects", b'{"a":' * (MAX_JSON_DEPTH + 1) + b"1" + b"}" * (MAX_JSON_DEPTH + 1)),
    ],
)
def test_a_body_nested_too_deep_is_a_400_naming_the_limit(_case, raw):
    # when
    with pytest.raises(ApiError) as caught:
        read_json(post(raw), MAX_BODY_BYTES)
    # then
    assert (caught.value.status, caught.value.code) == (400, "invalid_json")
    assert f"deeper than {MAX_JSON_DEPTH} levels" in caught.value.message


def test_a_body_at_the_depth_limit_is_read():
    # given the body object itself is level 1
    raw = deep_body(MAX_JSON_DEPTH)
    # when
    body = read_json(post(raw), MAX_BODY_BYTES)
    # then
    assert body == {"x": nested(MAX_JSON_DEPTH - 1)}


def test_depth_is_measured_without_recursion():
    # given far more levels than Python's recursion limit
    deep = nested(50_000)
    # when / then
    assert is_deeper_than(deep, MAX_JSON_DEPTH)
    assert not is_deeper_than(deep, 50_000)


@pytest.mark.parametrize(
    ("_case", "raw"),
    [
        ("invalid UTF-8", b'{"model": "m\xff", "messages": []}'),
        ("a lone surrogate escape", b'{"model": "\\ud800"}'),
        ("a NaN literal", b'{"temperature": NaN}'),
        ("an Infinity literal", b'{"temperature": Infinity}'),
        ("a number overflowing a double", b'{"temperature": 1e999}'),
        ("not JSON", b"{not json"),
        ("an array", b"[1, 2]"),
        ("empty", b""),
    ],
)
def test_hostile_json_is_a_400_invalid_json(_case, raw):
    # when
    with pytest.raises(ApiError) as caught:
        read_json(post(raw), MAX_BODY_BYTES)
    # then
    assert (caught.value.status, caught.value.code) == (400, "invalid_json")


def test_duplicate_keys_keep_the_last_value():
    # when
    body = read_json(post(b'{"model": "a", "model": "b"}'), MAX_BODY_BYTES)
    # then
    assert body == {"model": "b"}


def test_a_huge_flat_array_is_read():
    # given 90,000 items: wide, not deep
    raw = orjson.dumps({"x": [0] * 90_000})
    # when
    body = read_json(post(raw), MAX_BODY_BYTES)
    # then
    assert len(body["x"]) == 90_000


def test_a_body_over_the_size_limit_is_a_413():
    # when
    with pytest.raises(ApiError) as caught:
        read_json(post(orjson.dumps({"x": "y" * 300})), 100)
    # then
    assert (caught.value.status, caught.value.code) == (413, "payload_too_large")


@pytest.mark.parametrize("role", [{}, [], 3, None])
def test_a_role_that_is_not_a_string_is_a_400_not_a_crash(role):
    # found by the schema fuzz: `{}` in a frozenset check raised TypeError (a 500)
    with pytest.raises(ApiError) as caught:
        validate_chat({"model": "m", "messages": [{"role": role, "content": "hi"}]})
    assert (caught.value.status, caught.value.param) == (400, "messages[0].role")


@pytest.mark.parametrize(
    ("body", "param"),
    [({"input": [{}]}, "input"), ({"input": []}, "input"), ({"input": [[1, 2], ["x"]]}, "input"),
     ({"input": "a", "encoding_format": {}}, "encoding_format"),
     ({"input": "a", "dimensions": 0}, "dimensions")],
)  # fmt: skip
def test_embeddings_input_must_be_one_of_openais_forms(body, param):
    from gateway.request_path.parse import validate_embeddings

    with pytest.raises(ApiError) as caught:
        validate_embeddings({"model": "m", **body})
    assert caught.value.param == param


@pytest.mark.parametrize("value", ["a", ["a", "b"], [1, 2], [[1, 2], [3]]])
def test_embeddings_input_forms_pass(value):
    from gateway.request_path.parse import validate_embeddings

    validate_embeddings({"model": "m", "input": value})
