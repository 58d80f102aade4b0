"""Anthropic adapter: OpenAI request -> Anthropic request, Anthropic response/stream/error ->
OpenAI shapes. Pure translation, so these run without Django or a network; the official SDK
types of both vendors check that fixtures and outputs are shapes the real APIs use."""

from __future__ import annotations

from typing import Any

import anthropic.types
import orjson
import pydantic
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from gateway.upstream.providers.anthropic import (
    API_VERSION,
    FIELDS,
    StreamTranslator,
    build_request,
    parse_error,
    parse_response,
)

MODEL = "anthropic/claude-sonnet-4"
COMPLETION_ID = "chatcmpl-test123"
CREATED = 1_700_000_000
PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
USER_HI = {"role": "user", "content": "hi"}


def translate(body: dict[str, Any]) -> dict[str, Any]:
    _headers, payload = build_request(body, "claude-sonnet-4-20250514", "sk-ant-x", stream=False)
    return orjson.loads(payload)


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    function = {"name": name, "arguments": arguments}
    return {"id": call_id, "type": "function", "function": function}


def tool_msg(call_id: str, content: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def user_parts(*parts: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(parts)}


def image_part(image_url: Any) -> dict[str, Any]:
    return user_parts({"type": "image_url", "image_url": image_url})


def assistant_calls(tool_calls: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": tool_calls}


def tool(name: str, parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    function = {"name": name, **({"parameters": parameters} if parameters else {})}
    return {"type": "function", "function": function}


def json_schema(name: str, schema: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, **extra}}


JSON_OBJECT = {"type": "json_object"}


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


@pytest.mark.parametrize(
    ("_case", "body", "expected"),
    [
        (
            "system and developer messages join into top-level system",
            {
                "messages": [
                    {"role": "system", "content": "Be terse."},
                    {"role": "developer", "content": [{"type": "text", "text": "Use metric."}]},
                    USER_HI,
                ]
            },
            {"system": "Be terse.\n\nUse metric.", "messages": [USER_HI]},
        ),
        (
            "string user content stays a string",
            {"messages": [USER_HI]},
            {"messages": [USER_HI]},
        ),
        (
            "text and image parts become blocks",
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "Compare"},
                            {
                                "type": "image_url",
                                "image_url": {"url": f"data:image/png;base64,{PNG_B64}"},
                            },
                            {"type": "image_url", "image_url": {"url": "https://x.test/a.jpg"}},
                        ],
                    }
                ]
            },
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "Compare"},
                            {
                                "type": "image",
                                "source": {
                                    "type": "base64",
                                    "media_type": "image/png",
                                    "data": PNG_B64,
                                },
                            },
                            {
                                "type": "image",
                                "source": {"type": "url", "url": "https://x.test/a.jpg"},
                            },
                        ],
                    }
                ]
            },
        ),
        (
            "assistant tool calls become tool_use; tool results merge into one user turn",
            {
                "messages": [
                    USER_HI,
                    {
                        "role": "assistant",
                        "content": "Checking.",
                        "tool_calls": [
                            call("call_1", "get_weather", '{"city":"Paris"}'),
                            call("call_2", "get_time", ""),
                        ],
                    },
                    tool_msg("call_1", "18C"),
                    tool_msg("call_2", [{"type": "text", "text": "noon"}]),
                ]
            },
            {
                "messages": [
                    USER_HI,
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "text", "text": "Checking."},
                            {
                                "type": "tool_use",
                                "id": "call_1",
                                "name": "get_weather",
                                "input": {"city": "Paris"},
                            },
                            {"type": "tool_use", "id": "call_2", "name": "get_time", "input": {}},
                        ],
                    },
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": "call_1", "content": "18C"},
                            {
                                "type": "tool_result",
                                "tool_use_id": "call_2",
                                "content": [{"type": "text", "text": "noon"}],
                            },
                        ],
                    },
                ]
            },
        ),
        (
            "assistant with only tool calls and null content has no text block",
            {
                "messages": [
                    USER_HI,
                    {"role": "assistant", "content": None, "tool_calls": [call("c", "f", "{}")]},
                ]
            },
            {
                "messages": [
                    USER_HI,
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "c", "name": "f", "input": {}}],
                    },
                ]
            },
        ),
        (
            "consecutive same-role messages merge; tool results go first",
            {"messages": [USER_HI, {"role": "user", "content": "there"}]},
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": "hi"},
                            {"type": "text", "text": "there"},
                        ],
                    }
                ]
            },
        ),
        (
            "tool result followed by user text stays one turn with the result first",
            {"messages": [tool_msg("c", "ok"), {"role": "user", "content": "thanks"}]},
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": "c", "content": "ok"},
                            {"type": "text", "text": "thanks"},
                        ],
                    }
                ]
            },
        ),
        (
            "empty messages are dropped",
            {"messages": [{"role": "assistant", "content": ""}, USER_HI]},
            {"messages": [USER_HI]},
        ),
    ],
)
def test_messages_are_translated(_case: str, body: dict[str, Any], expected: dict[str, Any]):
    # when
    payload = translate(body)
    # then
    assert {key: payload[key] for key in expected} == expected
    if "system" not in expected:
        assert "system" not in payload


ANTHROPIC_WEATHER_TOOL = {
    "name": "get_weather",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    "description": "Weather for a city",
}


@pytest.mark.parametrize(
    ("_case", "extra", "expected"),
    [
        ("no tool_choice", {}, {"tools": [ANTHROPIC_WEATHER_TOOL]}),
        ("auto", {"tool_choice": "auto"}, {"tool_choice": {"type": "auto"}}),
        ("required", {"tool_choice": "required"}, {"tool_choice": {"type": "any"}}),
        ("none", {"tool_choice": "none"}, {"tool_choice": {"type": "none"}}),
        (
            "named function",
            {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
            {"tool_choice": {"type": "tool", "name": "get_weather"}},
        ),
        (
            "parallel off without a choice",
            {"parallel_tool_calls": False},
            {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}},
        ),
        (
            "parallel off with required",
            {"tool_choice": "required", "parallel_tool_calls": False},
            {"tool_choice": {"type": "any", "disable_parallel_tool_use": True}},
        ),
        (
            "parallel off with none",
            {"tool_choice": "none", "parallel_tool_calls": False},
            {"tool_choice": {"type": "none"}},
        ),
    ],
)
def test_tools_are_translated(_case: str, extra: dict[str, Any], expected: dict[str, Any]):
    # given
    body = {"messages": [USER_HI], "tools": [WEATHER_TOOL], **extra}
    # when
    payload = translate(body)
    # then
    assert payload["tools"] == [ANTHROPIC_WEATHER_TOOL]
    assert {key: payload.get(key) for key in expected} == expected


def test_past_tool_calls_without_tools_declare_their_tools_uncallable():
    # given: a conversation with a tool round, asked on without offering tools
    messages = [
        USER_HI,
        {"role": "assistant", "content": None, "tool_calls": [call("c1", "get_weather", "{}")]},
        tool_msg("c1", "18C"),
        {"role": "user", "content": "so?"},
    ]
    # when
    payload = translate({"messages": messages})
    # then
    assert payload["tools"] == [{"name": "get_weather", "input_schema": {"type": "object"}}]
    assert payload["tool_choice"] == {"type": "none"}


def test_tool_without_parameters_gets_an_empty_object_schema():
    # given
    tool = {"type": "function", "function": {"name": "now"}}
    # when
    payload = translate({"messages": [USER_HI], "tools": [tool]})
    # then
    assert payload["tools"] == [
        {"name": "now", "input_schema": {"type": "object", "properties": {}}}
    ]


@pytest.mark.parametrize(
    ("_case", "extra", "expected"),
    [
        ("default max_tokens", {}, {"max_tokens": 4096}),
        ("max_tokens", {"max_tokens": 100}, {"max_tokens": 100}),
        (
            "max_completion_tokens wins",
            {"max_completion_tokens": 50, "max_tokens": 9},
            {"max_tokens": 50},
        ),
        (
            "thinking passes through; default leaves room above the budget",
            {"thinking": {"type": "enabled", "budget_tokens": 2000}},
            {"thinking": {"type": "enabled", "budget_tokens": 2000}, "max_tokens": 6096},
        ),
        ("sampling", {"temperature": 0.2, "top_p": 0.9}, {"temperature": 0.2, "top_p": 0.9}),
        ("stop string", {"stop": "END"}, {"stop_sequences": ["END"]}),
        ("stop list", {"stop": ["A", "B"]}, {"stop_sequences": ["A", "B"]}),
        ("user", {"user": "u-42"}, {"metadata": {"user_id": "u-42"}}),
        ("safety_identifier", {"safety_identifier": "h-1"}, {"metadata": {"user_id": "h-1"}}),
        (
            "user wins over safety_identifier",
            {"user": "u", "safety_identifier": "h"},
            {"metadata": {"user_id": "u"}},
        ),
        ("top_k passes through", {"top_k": 40}, {"top_k": 40}),
        (
            "reasoning_effort becomes a thinking budget above the default answer room",
            {"reasoning_effort": "medium"},
            {"thinking": {"type": "enabled", "budget_tokens": 4096}, "max_tokens": 8192},
        ),
        (
            "reasoning_effort stays inside the client's limit",
            {"reasoning_effort": "high", "max_completion_tokens": 3000},
            {"thinking": {"type": "enabled", "budget_tokens": 2999}, "max_tokens": 3000},
        ),
        ("reasoning_effort none thinks not", {"reasoning_effort": "none"}, {"thinking": None}),
        (
            "reasoning_effort minimal thinks not",
            {"reasoning_effort": "minimal"},
            {"thinking": None},
        ),
        (
            "thinking of the client's own wins over reasoning_effort",
            {"reasoning_effort": "high", "thinking": {"type": "enabled", "budget_tokens": 1024}},
            {"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 5120},
        ),
    ],
)
def test_parameters_are_translated(_case: str, extra: dict[str, Any], expected: dict[str, Any]):
    # when
    payload = translate({"messages": [USER_HI], **extra})
    # then
    assert {key: payload.get(key) for key in expected} == expected


DROPPED_FIELDS = {
    "seed": 7,
    "store": True,
    "metadata": {"tag": "x"},
    "service_tier": "flex",
    "stream_options": {"include_usage": True},
    "prediction": {"type": "content", "content": "draft"},
    "prompt_cache_key": "conversation-1",
    "prompt_cache_retention": "24h",
    "prompt_cache_options": {"mode": "implicit"},
    "verbosity": "low",
}
REFUSED_FIELDS = {
    "n": 2,
    "logprobs": True,
    "top_logprobs": 2,
    "logit_bias": {"50256": -100},
    "presence_penalty": 0.5,
    "frequency_penalty": -0.5,
    "audio": {"voice": "alloy", "format": "wav"},
    "modalities": ["text", "audio"],
    "web_search_options": {"search_context_size": "low"},
    "moderation": {"model": "omni-moderation-latest"},
    "functions": [{"name": "f", "parameters": {"type": "object"}}],
    "function_call": "auto",
}
BARE_REQUEST = {
    "model": "claude-sonnet-4-20250514",
    "max_tokens": 4096,
    "messages": [USER_HI],
    "stream": False,
}


def test_the_field_table_is_covered_by_these_tests():
    # then: every dropped and refused field has a case below; translated ones have theirs
    assert {f for f, how in FIELDS.items() if how == "drop"} == set(DROPPED_FIELDS)
    assert {f for f, how in FIELDS.items() if how == "refuse"} == set(REFUSED_FIELDS)


@pytest.mark.parametrize(("field", "value"), DROPPED_FIELDS.items())
def test_dropped_fields_leave_the_request_as_without_them(field: str, value: Any):
    # when
    payload = translate({"model": MODEL, "messages": [USER_HI], field: value})
    # then
    assert payload == BARE_REQUEST


@pytest.mark.parametrize(("field", "value"), REFUSED_FIELDS.items())
def test_refused_fields_raise_value_error_naming_them(field: str, value: Any):
    # when / then
    with pytest.raises(ValueError, match=f"^{field}: "):
        translate({"messages": [USER_HI], field: value})


def test_refused_fields_at_their_neutral_values_are_sent_as_without_them():
    # given: the defaults some clients always send
    neutral = {
        "n": 1,
        "logprobs": False,
        "top_logprobs": 0,
        "logit_bias": {},
        "presence_penalty": 0,
        "frequency_penalty": 0.0,
        "modalities": ["text"],
        "functions": [],
        "audio": None,
    }
    # when
    payload = translate({"messages": [USER_HI], **neutral})
    # then
    assert payload == BARE_REQUEST


def test_headers_and_stream_flag():
    # when
    headers, payload = build_request({"messages": [USER_HI]}, "claude-x", "sk-ant-1", stream=True)
    # then
    assert headers == {
        "x-api-key": "sk-ant-1",
        "anthropic-version": API_VERSION,
        "content-type": "application/json",
    }
    assert API_VERSION == "2023-06-01"
    assert orjson.loads(payload)["stream"] is True


@pytest.mark.parametrize(
    ("_case", "body", "message"),
    [
        ("n > 1", {"n": 2, "messages": [USER_HI]}, "n:"),
        (
            "tool call arguments not JSON",
            {"messages": [USER_HI, {"role": "assistant", "tool_calls": [call("c", "f", "{x")]}]},
            "messages[1]",
        ),
        (
            "tool call arguments not an object",
            {"messages": [USER_HI, {"role": "assistant", "tool_calls": [call("c", "f", "[1]")]}]},
            "messages[1]",
        ),
        (
            "unsupported content part",
            {"messages": [{"role": "user", "content": [{"type": "input_audio"}]}]},
            "messages[0]",
        ),
        (
            "image that is neither URL nor base64 data URL",
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "image_url", "image_url": {"url": "ftp://x"}}],
                    }
                ]
            },
            "messages[0]",
        ),
        ("unknown role", {"messages": [{"role": "function", "content": "x"}]}, "messages[0]"),
        (
            "system content that is not text",
            {"messages": [{"role": "system", "content": [{"type": "image_url", "image_url": {}}]}]},
            "messages[0]",
        ),
        ("non-function tool", {"messages": [USER_HI], "tools": [{"type": "custom"}]}, "tools[0]"),
        (
            "unknown tool_choice",
            {"messages": [USER_HI], "tools": [WEATHER_TOOL], "tool_choice": "sometimes"},
            "tool_choice",
        ),
        ("message not an object", {"messages": ["hi"]}, "messages[0]"),
        (
            "only a system prompt",
            {"messages": [{"role": "system", "content": "x"}, {"role": "user", "content": ""}]},
            "messages: ",
        ),
        ("content a number", {"messages": [{"role": "user", "content": 5}]}, "messages[0]"),
        ("content part not an object", {"messages": [user_parts("hi")]}, "messages[0]"),
        (
            "text part text a number",
            {"messages": [user_parts({"type": "text", "text": 5})]},
            "messages[0]",
        ),
        (
            "system part not an object",
            {"messages": [{"role": "system", "content": [5]}]},
            "messages[0]",
        ),
        ("image_url a number", {"messages": [image_part(5)]}, "messages[0]"),
        ("image_url a list", {"messages": [image_part([1])]}, "messages[0]"),
        ("image_url url a number", {"messages": [image_part({"url": 5})]}, "messages[0]"),
        (
            "tool_calls not an array",
            {"messages": [USER_HI, assistant_calls("call")]},
            "messages[1]",
        ),
        ("tool call a number", {"messages": [USER_HI, assistant_calls([5])]}, "messages[1]"),
        (
            "tool call function a string",
            {"messages": [USER_HI, assistant_calls([{"id": "c", "function": "f"}])]},
            "messages[1]",
        ),
        (
            "tool call arguments an object",
            {
                "messages": [
                    USER_HI,
                    assistant_calls(
                        [{"id": "c", "function": {"name": "f", "arguments": {"a": 1}}}]
                    ),
                ]
            },
            "messages[1]",
        ),
        (
            "tool call without an id",
            {"messages": [USER_HI, assistant_calls([{"function": {"name": "f"}}])]},
            "messages[1]",
        ),
        (
            "tool message without tool_call_id",
            {"messages": [USER_HI, {"role": "tool", "content": "18C"}]},
            "messages[1]",
        ),
        ("tool a number", {"messages": [USER_HI], "tools": [5]}, "tools[0]"),
        (
            "tool function a string",
            {"messages": [USER_HI], "tools": [{"type": "function", "function": "f"}]},
            "tools[0]",
        ),
        (
            "tool parameters not an object schema",
            {"messages": [USER_HI], "tools": [tool("f", {"type": "array"})]},
            "tools[0].function.parameters",
        ),
        (
            "tool name with the answer tool prefix",
            {"messages": [USER_HI], "tools": [tool("structured_output__x")]},
            "tools[0]",
        ),
        (
            "tool_choice function a string",
            {
                "messages": [USER_HI],
                "tools": [WEATHER_TOOL],
                "tool_choice": {"type": "function", "function": "get_weather"},
            },
            "tool_choice",
        ),
        ("temperature above 1", {"messages": [USER_HI], "temperature": 1.5}, "temperature"),
        ("thinking not an object", {"messages": [USER_HI], "thinking": "on"}, "thinking"),
        (
            "unknown reasoning_effort",
            {"messages": [USER_HI], "reasoning_effort": "extreme"},
            "reasoning_effort",
        ),
        (
            "reasoning_effort with a limit below the minimum thinking budget",
            {"messages": [USER_HI], "reasoning_effort": "low", "max_tokens": 1024},
            "reasoning_effort",
        ),
        (
            "reasoning_effort with a forced tool call",
            {
                "messages": [USER_HI],
                "reasoning_effort": "low",
                "tools": [WEATHER_TOOL],
                "tool_choice": "required",
            },
            "reasoning_effort: .* tool_choice forces",
        ),
        (
            "reasoning_effort with response_format",
            {"messages": [USER_HI], "reasoning_effort": "low", "response_format": JSON_OBJECT},
            "reasoning_effort: .* response_format forces",
        ),
        (
            "reasoning_effort with a temperature",
            {"messages": [USER_HI], "reasoning_effort": "low", "temperature": 0.2},
            "reasoning_effort",
        ),
        (
            "reasoning_effort with a low top_p",
            {"messages": [USER_HI], "reasoning_effort": "low", "top_p": 0.5},
            "reasoning_effort",
        ),
        (
            "unknown response_format type",
            {"messages": [USER_HI], "response_format": {"type": "grammar"}},
            "response_format",
        ),
        (
            "response_format json_schema not an object",
            {"messages": [USER_HI], "response_format": {"type": "json_schema", "json_schema": 1}},
            "response_format.json_schema",
        ),
        (
            "response_format schema whose root is not an object",
            {"messages": [USER_HI], "response_format": json_schema("n", {"type": "array"})},
            "response_format.json_schema.schema",
        ),
    ],
)
def test_untranslatable_requests_raise_value_error(_case: str, body: dict[str, Any], message: str):
    # when / then
    with pytest.raises(ValueError, match=message.replace("[", r"\[")):
        build_request(body, "claude-x", "k", stream=False)


def anthropic_message(content: list[dict[str, Any]], stop_reason: str, **usage: int) -> bytes:
    message = {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-20250514",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5, **usage},
    }
    anthropic.types.Message.model_validate(message)  # the fixture is a real Anthropic shape
    return orjson.dumps(message)


def parse(data: bytes) -> dict[str, Any]:
    completion = parse_response(data, model=MODEL, completion_id=COMPLETION_ID, created=CREATED)
    ChatCompletion.model_validate(completion)  # the output is a real OpenAI shape
    return completion


def test_text_response_is_translated():
    # given
    content = [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "text", "text": "Hello, "},
        {"type": "text", "text": "world."},
    ]
    # when
    completion = parse(anthropic_message(content, "end_turn"))
    # then
    assert completion == {
        "id": COMPLETION_ID,
        "object": "chat.completion",
        "created": CREATED,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Hello, world.", "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": 10,
            "completion_tokens": 5,
            "total_tokens": 15,
            "prompt_tokens_details": {"cached_tokens": 0},
        },
    }


def test_tool_use_only_response_has_null_content_and_tool_calls():
    # given
    content = [
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "toolu_2", "name": "now", "input": {}},
    ]
    # when
    completion = parse(anthropic_message(content, "tool_use"))
    # then
    choice = completion["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    assert choice["message"]["tool_calls"] == [
        {
            "id": "toolu_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
        },
        {"id": "toolu_2", "type": "function", "function": {"name": "now", "arguments": "{}"}},
    ]


def test_cache_tokens_count_as_prompt_tokens():
    # given
    data = anthropic_message(
        [{"type": "text", "text": "ok"}],
        "end_turn",
        cache_read_input_tokens=300,
        cache_creation_input_tokens=40,
    )
    # when
    completion = parse(data)
    # then
    assert completion["usage"] == {
        "prompt_tokens": 350,
        "completion_tokens": 5,
        "total_tokens": 355,
        "prompt_tokens_details": {"cached_tokens": 300},
    }


@pytest.mark.parametrize(
    ("stop_reason", "finish_reason"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
        ("pause_turn", "stop"),
        ("model_context_window_exceeded", "length"),
    ],
)
def test_stop_reasons_map_to_finish_reasons(stop_reason: str, finish_reason: str):
    # when
    completion = parse(anthropic_message([{"type": "text", "text": "x"}], stop_reason))
    # then
    assert completion["choices"][0]["finish_reason"] == finish_reason


def sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: ".encode() + orjson.dumps(data) + b"\n\n"


STREAM_EVENTS: list[tuple[str, dict[str, Any]]] = [
    (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_01",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-20250514",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 25,
                    "cache_read_input_tokens": 100,
                    "cache_creation_input_tokens": 0,
                    "output_tokens": 1,
                },
            },
        },
    ),
    ("ping", {"type": "ping"}),
    (
        "content_block_start",
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
    ),
    (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "Let me"},
        },
    ),
    (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "EqQ="},
        },
    ),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    (
        "content_block_start",
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    ),
    (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "text_delta", "text": "Héllo"},
        },
    ),
    (
        "content_block_delta",
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": " 🌍"}},
    ),
    ("content_block_stop", {"type": "content_block_stop", "index": 1}),
    (
        "content_block_start",
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": {
                "type": "tool_use",
                "id": "toolu_A",
                "name": "get_weather",
                "input": {},
            },
        },
    ),
    (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": ""},
        },
    ),
    (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": '{"city": "Pa'},
        },
    ),
    (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": 'ris"}'},
        },
    ),
    ("content_block_stop", {"type": "content_block_stop", "index": 2}),
    (
        "content_block_start",
        {
            "type": "content_block_start",
            "index": 3,
            "content_block": {"type": "tool_use", "id": "toolu_B", "name": "now", "input": {}},
        },
    ),
    (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 3,
            "delta": {"type": "input_json_delta", "partial_json": "{}"},
        },
    ),
    ("content_block_stop", {"type": "content_block_stop", "index": 3}),
    (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 42},
        },
    ),
    ("message_stop", {"type": "message_stop"}),
]
STREAM_BYTES = b"".join(sse(name, data) for name, data in STREAM_EVENTS)


def test_stream_fixture_is_a_real_anthropic_event_sequence():
    adapter = pydantic.TypeAdapter(anthropic.types.RawMessageStreamEvent)
    for _name, data in STREAM_EVENTS:
        if data["type"] != "ping":  # ping is on the wire but not in the SDK's union
            adapter.validate_python(data)


def translate_stream(data: bytes, piece_bytes: int) -> tuple[StreamTranslator, list[bytes]]:
    translator = StreamTranslator(model=MODEL, completion_id=COMPLETION_ID, created=CREATED)
    frames: list[bytes] = []
    for start in range(0, len(data), piece_bytes):
        frames.extend(translator.feed(data[start : start + piece_bytes]))
    return translator, frames


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {
        "id": COMPLETION_ID,
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    }


EXPECTED_USAGE = {
    "prompt_tokens": 125,
    "completion_tokens": 42,
    "total_tokens": 167,
    "prompt_tokens_details": {"cached_tokens": 100},
}


@pytest.mark.parametrize("piece_bytes", [1, 7, 64, len(STREAM_BYTES)])
def test_stream_translates_to_openai_chunks(piece_bytes: int):
    # when: upstream bytes arrive split at awkward boundaries (inside UTF-8 sequences too)
    translator, frames = translate_stream(STREAM_BYTES, piece_bytes)
    # then
    assert all(frame.startswith(b"data: {") and frame.endswith(b"}\n\n") for frame in frames)
    assert [orjson.loads(frame.removeprefix(b"data: ")) for frame in frames] == [
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Héllo"}),
        chunk({"content": " 🌍"}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "toolu_A",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": ""},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Pa'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'ris"}'}}]}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "toolu_B",
                        "type": "function",
                        "function": {"name": "now", "arguments": ""},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]}),
        chunk({}, finish_reason="tool_calls"),
        {
            "id": COMPLETION_ID,
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": MODEL,
            "choices": [],
            "usage": EXPECTED_USAGE,
        },
    ]
    assert translator.finished is True
    assert translator.error is None
    assert translator.emitted_content is True
    assert translator.usage == EXPECTED_USAGE


def test_stream_chunks_reassemble_with_the_openai_sdk():
    # given
    _translator, frames = translate_stream(STREAM_BYTES, 7)
    state = ChatCompletionStreamState(input_tools=[WEATHER_TOOL])
    # when: the SDK's own accumulator consumes the chunks
    for frame in frames:
        state.handle_chunk(ChatCompletionChunk.model_validate_json(frame.removeprefix(b"data: ")))
    completion = state.get_final_completion()
    # then
    message = completion.choices[0].message
    assert completion.id == COMPLETION_ID
    assert completion.model == MODEL
    assert completion.choices[0].finish_reason == "tool_calls"
    assert message.content == "Héllo 🌍"
    assert [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []] == [
        ("toolu_A", "get_weather", '{"city": "Paris"}'),
        ("toolu_B", "now", "{}"),
    ]
    assert completion.usage is not None
    assert completion.usage.total_tokens == 167
    ChatCompletion.model_validate(completion.model_dump())


def test_stream_usage_is_known_after_message_start():
    # given
    translator = StreamTranslator(model=MODEL, completion_id=COMPLETION_ID, created=CREATED)
    assert translator.usage is None
    # when
    frames = translator.feed(sse(*STREAM_EVENTS[0]) + sse(*STREAM_EVENTS[1]))
    # then
    assert len(frames) == 1
    assert translator.emitted_content is False  # the role chunk carries no content
    assert translator.usage == {
        "prompt_tokens": 125,
        "completion_tokens": 1,
        "total_tokens": 126,
        "prompt_tokens_details": {"cached_tokens": 100},
    }
    assert translator.finished is False


def test_stream_error_event_before_content_is_recorded_without_frames():
    # given
    error_event = sse(
        "error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    )
    translator = StreamTranslator(model=MODEL, completion_id=COMPLETION_ID, created=CREATED)
    # when
    first = translator.feed(sse(*STREAM_EVENTS[0]))
    frames = translator.feed(error_event)
    # then
    assert len(first) == 1
    assert frames == []
    assert translator.error == ("overloaded_error", "Overloaded")
    assert translator.emitted_content is False
    assert translator.finished is False


def test_stream_error_event_after_content():
    # given: everything up to the first text delta, then an error
    head = b"".join(sse(name, data) for name, data in STREAM_EVENTS[:8])
    error_event = sse("error", {"type": "error", "error": {"type": "api_error", "message": "boom"}})
    translator = StreamTranslator(model=MODEL, completion_id=COMPLETION_ID, created=CREATED)
    # when
    frames = translator.feed(head + error_event)
    # then
    assert len(frames) == 2
    assert translator.emitted_content is True
    assert translator.error == ("api_error", "boom")


def test_stream_event_that_is_not_json_is_an_error():
    # given
    translator = StreamTranslator(model=MODEL, completion_id=COMPLETION_ID, created=CREATED)
    # when
    frames = translator.feed(b"event: content_block_delta\ndata: {oops\n\n")
    # then
    assert frames == []
    assert translator.error == ("api_error", "upstream sent a non-JSON content_block_delta event")


@pytest.mark.parametrize(
    ("_case", "status", "body", "expected"),
    [
        (
            "anthropic envelope",
            429,
            b'{"type":"error","error":{"type":"rate_limit_error","message":"Slow down"},'
            b'"request_id":"req_1"}',
            ("rate_limit_error", "Slow down"),
        ),
        (
            "html from a proxy",
            502,
            b"<html>Bad Gateway</html>",
            ("api_error", "<html>Bad Gateway</html>"),
        ),
        ("empty 529", 529, b"", ("overloaded_error", "upstream returned HTTP 529")),
        (
            "json without envelope",
            404,
            b'{"detail":"nope"}',
            ("not_found_error", '{"detail":"nope"}'),
        ),
        ("unlisted 4xx", 422, b"bad", ("invalid_request_error", "bad")),
        ("invalid utf-8", 500, b"\xff\xfe oops", ("api_error", "\ufffd\ufffd oops")),
    ],
)
def test_parse_error(_case: str, status: int, body: bytes, expected: tuple[str, str]):
    # when / then
    assert parse_error(status, body) == expected


def test_parse_error_truncates_long_bodies():
    # when
    _kind, message = parse_error(503, b"x" * 10_000)
    # then
    assert message == "x" * 500


class Person(pydantic.BaseModel):
    name: str
    age: int


PERSON_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
ANSWER_DESCRIPTION = "Give your final answer as this tool's input."
PERSON_TOOL = {
    "name": "structured_output__person",
    "description": ANSWER_DESCRIPTION,
    "input_schema": PERSON_SCHEMA,
}
FORCED_PERSON = {
    "type": "tool",
    "name": "structured_output__person",
    "disable_parallel_tool_use": True,
}


@pytest.mark.parametrize(
    ("_case", "response_format", "tools", "tool_choice"),
    [
        (
            "json_schema: a forced answer tool with the schema",
            json_schema("person", PERSON_SCHEMA, strict=True),
            [PERSON_TOOL],
            FORCED_PERSON,
        ),
        (
            "the name is cut to Anthropic's tool-name rules",
            json_schema("my schema.v2" + "x" * 60, PERSON_SCHEMA),
            [{**PERSON_TOOL, "name": "structured_output__my_schema_v2" + "x" * 33}],
            {**FORCED_PERSON, "name": "structured_output__my_schema_v2" + "x" * 33},
        ),
        (
            "the format's description follows the instruction",
            json_schema("person", PERSON_SCHEMA, description="A person."),
            [{**PERSON_TOOL, "description": f"{ANSWER_DESCRIPTION} A person."}],
            FORCED_PERSON,
        ),
        (
            "a schema without a root type gets type object",
            json_schema("person", {"properties": {"name": {"type": "string"}}}),
            [
                {
                    **PERSON_TOOL,
                    "input_schema": {"properties": {"name": {"type": "string"}}, "type": "object"},
                }
            ],
            FORCED_PERSON,
        ),
        (
            "json_object: a forced answer tool taking any object",
            JSON_OBJECT,
            [
                {
                    "name": "structured_output__json_object",
                    "description": ANSWER_DESCRIPTION,
                    "input_schema": {"type": "object"},
                }
            ],
            {**FORCED_PERSON, "name": "structured_output__json_object"},
        ),
        ("text: nothing to do", {"type": "text"}, None, None),
    ],
)
def test_response_format_becomes_a_forced_answer_tool(
    _case: str, response_format: dict[str, Any], tools: Any, tool_choice: Any
):
    # when
    payload = translate({"messages": [USER_HI], "response_format": response_format})
    # then
    assert payload.get("tools") == tools
    assert payload.get("tool_choice") == tool_choice
    assert "response_format" not in payload


@pytest.mark.parametrize(
    ("_case", "extra", "tools", "tool_choice"),
    [
        (
            "no tool_choice: a client tool call or the answer",
            {},
            [ANTHROPIC_WEATHER_TOOL, PERSON_TOOL],
            {"type": "any"},
        ),
        (
            "auto: the same",
            {"tool_choice": "auto"},
            [ANTHROPIC_WEATHER_TOOL, PERSON_TOOL],
            {"type": "any"},
        ),
        (
            "auto without parallel calls",
            {"parallel_tool_calls": False},
            [ANTHROPIC_WEATHER_TOOL, PERSON_TOOL],
            {"type": "any", "disable_parallel_tool_use": True},
        ),
        (
            "none: only the answer",
            {"tool_choice": "none"},
            [ANTHROPIC_WEATHER_TOOL, PERSON_TOOL],
            FORCED_PERSON,
        ),
        (
            "required: a client tool, no answer tool",
            {"tool_choice": "required"},
            [ANTHROPIC_WEATHER_TOOL],
            {"type": "any"},
        ),
        (
            "a named function: that call, no answer tool",
            {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
            [ANTHROPIC_WEATHER_TOOL],
            {"type": "tool", "name": "get_weather"},
        ),
    ],
)
def test_response_format_beside_client_tools(
    _case: str, extra: dict[str, Any], tools: Any, tool_choice: Any
):
    # given
    body = {"messages": [USER_HI], "tools": [WEATHER_TOOL], **extra}
    # when
    payload = translate({**body, "response_format": json_schema("person", PERSON_SCHEMA)})
    # then
    assert payload["tools"] == tools
    assert payload["tool_choice"] == tool_choice


ANSWER_USE = {
    "type": "tool_use",
    "id": "toolu_9",
    "name": "structured_output__person",
    "input": {"name": "Ada", "age": 36},
}


def test_an_answer_tool_use_comes_back_as_json_content_with_stop():
    # when
    completion = parse(anthropic_message([ANSWER_USE], "tool_use"))
    # then
    choice = completion["choices"][0]
    assert choice["message"] == {
        "role": "assistant",
        "content": '{"name":"Ada","age":36}',
        "refusal": None,
    }
    assert choice["finish_reason"] == "stop"
    assert Person.model_validate_json(choice["message"]["content"]) == Person(name="Ada", age=36)


def test_an_answer_beside_a_client_tool_call_keeps_the_call():
    # given
    weather = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
    # when
    completion = parse(anthropic_message([weather, ANSWER_USE], "tool_use"))
    # then
    choice = completion["choices"][0]
    assert choice["message"]["content"] == '{"name":"Ada","age":36}'
    assert [c["function"]["name"] for c in choice["message"]["tool_calls"]] == ["get_weather"]
    assert choice["finish_reason"] == "tool_calls"


ANSWER_STREAM_EVENTS: list[tuple[str, dict[str, Any]]] = [
    STREAM_EVENTS[0],
    (
        "content_block_start",
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {**ANSWER_USE, "input": {}},
        },
    ),
    *[
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": piece},
            },
        )
        for piece in ("", '{"name": "Ad', 'a", "age": 36}')
    ],
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    STREAM_EVENTS[-2],
    STREAM_EVENTS[-1],
]


def test_answer_stream_fixture_is_a_real_anthropic_event_sequence():
    adapter = pydantic.TypeAdapter(anthropic.types.RawMessageStreamEvent)
    for _name, data in ANSWER_STREAM_EVENTS:
        adapter.validate_python(data)


def test_a_streamed_answer_tool_becomes_content_deltas_with_stop():
    # given
    data = b"".join(sse(name, event) for name, event in ANSWER_STREAM_EVENTS)
    # when
    translator, frames = translate_stream(data, 5)
    # then
    chunks = [orjson.loads(frame.removeprefix(b"data: ")) for frame in frames]
    assert chunks[:-1] == [
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": '{"name": "Ad'}),
        chunk({"content": 'a", "age": 36}'}),
        chunk({}, finish_reason="stop"),
    ]
    assert translator.emitted_content is True
    state = ChatCompletionStreamState(response_format=Person)
    for frame in frames:
        state.handle_chunk(ChatCompletionChunk.model_validate_json(frame.removeprefix(b"data: ")))
    message = state.get_final_completion().choices[0].message
    assert message.parsed == Person(name="Ada", age=36)
    assert message.tool_calls is None


def test_a_stream_event_that_is_not_an_object_is_an_error():
    # given
    translator = StreamTranslator(model=MODEL, completion_id=COMPLETION_ID, created=CREATED)
    # when
    frames = translator.feed(b"event: content_block_delta\ndata: [1, 2]\n\n")
    # then
    assert frames == []
    assert translator.error == (
        "api_error",
        "upstream sent a content_block_delta event that is not a JSON object",
    )


@pytest.mark.parametrize("data", [b"[1, 2]", b'"text"'])
def test_a_message_that_is_not_an_object_is_a_value_error(data: bytes):
    # when / then
    with pytest.raises(ValueError, match="not a JSON object"):
        parse(data)


def test_a_conversation_opening_with_the_assistant_gets_a_placeholder_user_turn_first():
    # given a chatbot's greeting before the user speaks (OpenAI accepts it)
    body = {"messages": [{"role": "system", "content": "Be kind."},
                         {"role": "assistant", "content": "Hi! How can I help?"},
                         {"role": "user", "content": "Hello"}]}  # fmt: skip
    # when
    _headers, raw = build_request(body, "claude", "key", stream=False)
    # then Anthropic's rule (a user turn first) holds and the greeting is kept
    messages = orjson.loads(raw)["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == "Hi! How can I help?"
