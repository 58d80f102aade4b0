"""The fake's request validation (fakeupstream/strict/): what the real APIs refuse
is refused, in the provider's words and error shape, and what the gateway's Anthropic
translation sends is accepted."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from fakeupstream.delivery import BadRequest
from fakeupstream.strict import check_chat, check_messages
from gateway.upstream.providers.anthropic import build_request
from tests.fakeupstream.conftest import ANTHROPIC_AUTH, OPENAI_AUTH, chat_body, sse_events

USER_HI = {"role": "user", "content": "hi"}
WEATHER = {"name": "get_weather", "input_schema": {"type": "object"}}
OPENAI_WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
PERSON_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}
TOOL_USE = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}
TOOL_RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"}
MISSING = object()  # a field left out of the body


def message_body(**extra: Any) -> dict[str, Any]:
    return {"model": "claude-test", "max_tokens": 16, "messages": [USER_HI], **extra}


def turns(*contents: Any) -> list[dict[str, Any]]:
    """Alternating user/assistant turns with these contents, user first."""
    roles = ("user", "assistant")
    return [{"role": roles[i % 2], "content": c} for i, c in enumerate(contents)]


def refusal_of(check: Any, body: dict[str, Any]) -> str:
    with pytest.raises(BadRequest) as caught:
        check(body)
    return str(caught.value)


@pytest.mark.parametrize(
    ("_case", "extra", "message"),
    [
        (
            "an OpenAI field",
            {"response_format": {"type": "json_object"}},
            "response_format: Extra inputs are not permitted",
        ),
        ("no max_tokens", {"max_tokens": MISSING}, "max_tokens: Field required"),
        (
            "max_tokens 0",
            {"max_tokens": 0},
            "max_tokens: Input should be greater than or equal to 1",
        ),
        ("max_tokens a string", {"max_tokens": "5"}, "max_tokens: Input should be a valid integer"),
        ("no messages", {"messages": []}, "messages: at least one message is required"),
        (
            "assistant first",
            {"messages": turns("a", "b")[1:]},
            'messages: first message must use the "user" role',
        ),
        (
            "two user turns in a row",
            {"messages": [USER_HI, USER_HI]},
            'messages: roles must alternate between "user" and "assistant", but found multiple '
            '"user" roles in a row',
        ),
        (
            "a system role in messages",
            {"messages": [{"role": "system", "content": "x"}]},
            "messages.0.role: Input should be 'user' or 'assistant'",
        ),
        (
            "an OpenAI message field",
            {"messages": [{**USER_HI, "name": "bob"}]},
            "messages.0.name: Extra inputs are not permitted",
        ),
        (
            "empty content",
            {"messages": turns("")},
            "messages.0: all messages must have non-empty content except for the optional final "
            "assistant message",
        ),
        (
            "content a number",
            {"messages": turns(5)},
            "messages.0.content: Input should be a valid list",
        ),
        (
            "an OpenAI content part",
            {"messages": turns([{"type": "image_url", "image_url": {}}])},
            "messages.0.content.0.type: Input tag 'image_url' found using 'type' does not match",
        ),
        (
            "an empty text block",
            {"messages": turns([{"type": "text", "text": ""}])},
            "messages.0.content.0: text content blocks must be non-empty",
        ),
        (
            "an image of an unknown media type",
            {
                "messages": turns(
                    [
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/bmp", "data": "x"},
                        }
                    ]
                )
            },
            "messages.0.content.0.source.media_type: Input should be 'image/jpeg'",
        ),
        (
            "an OpenAI tool",
            {"tools": [OPENAI_WEATHER]},
            "tools.0.type: unknown tool type 'function'",
        ),
        (
            "a tool without input_schema",
            {"tools": [{"name": "f"}]},
            "tools.0.input_schema: Field required",
        ),
        (
            "a tool whose input is not an object",
            {"tools": [{"name": "f", "input_schema": {"type": "array"}}]},
            "tools.0.input_schema.type: Input should be 'object'",
        ),
        (
            "a tool name with a dot",
            {"tools": [{**WEATHER, "name": "get.weather"}]},
            "tools.0.name: String should match pattern",
        ),
        (
            "two tools of one name",
            {"tools": [WEATHER, WEATHER]},
            "tools: Tool names must be unique.",
        ),
        (
            "an OpenAI tool_choice",
            {"tools": [WEATHER], "tool_choice": "auto"},
            "tool_choice: Input should be a valid dictionary",
        ),
        (
            "tool_choice of type function",
            {"tools": [WEATHER], "tool_choice": {"type": "function"}},
            "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'",
        ),
        (
            "tool_choice naming no declared tool",
            {"tools": [WEATHER], "tool_choice": {"type": "tool", "name": "other"}},
            "tool_choice.name: Tool 'other' not found in provided tools",
        ),
        (
            "an extra tool_choice field",
            {
                "tools": [WEATHER],
                "tool_choice": {"type": "none", "disable_parallel_tool_use": True},
            },
            "tool_choice.disable_parallel_tool_use: Extra inputs are not permitted",
        ),
        (
            "system with an image",
            {"system": [{"type": "image", "source": {"type": "url", "url": "u"}}]},
            "system.0.type: Input should be 'text'",
        ),
        ("temperature above 1", {"temperature": 1.5}, "temperature: must be between 0 and 1"),
        ("temperature null", {"temperature": None}, "temperature: Input should be a valid number"),
        (
            "stop_sequences a string",
            {"stop_sequences": "END"},
            "stop_sequences: Input should be a valid list",
        ),
        (
            "OpenAI metadata",
            {"metadata": {"tag": "x"}},
            "metadata.tag: Extra inputs are not permitted",
        ),
        (
            "tool_use without tools",
            {"messages": turns("hi", [TOOL_USE], [TOOL_RESULT])},
            "tools: Requests which include `tool_use` or `tool_result` blocks must define tools.",
        ),
        (
            "a tool_use without its result",
            {"tools": [WEATHER], "messages": turns("hi", [TOOL_USE], "ok")},
            "messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: "
            "toolu_1.",
        ),
        (
            "a tool_result for no tool_use",
            {"tools": [WEATHER], "messages": turns("hi", "ok", [TOOL_RESULT])},
            "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: "
            "toolu_1.",
        ),
        (
            "a tool_result after text",
            {
                "tools": [WEATHER],
                "messages": turns("hi", [TOOL_USE], [{"type": "text", "text": "x"}, TOOL_RESULT]),
            },
            "messages.2.content.1: tool_result blocks must come first in the content",
        ),
        (
            "thinking with a forced tool",
            {
                "tools": [WEATHER],
                "tool_choice": {"type": "any"},
                "max_tokens": 2048,
                "thinking": {"type": "enabled", "budget_tokens": 1024},
            },
            "Thinking may not be enabled when tool_choice forces tool use.",
        ),
        (
            "a thinking budget not below max_tokens",
            {"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 1024},
            "max_tokens: `max_tokens` must be greater than `thinking.budget_tokens`",
        ),
        (
            "a thinking budget below the minimum",
            {"thinking": {"type": "enabled", "budget_tokens": 100}, "max_tokens": 2048},
            "thinking.budget_tokens: Input should be greater than or equal to 1024",
        ),
        (
            "a tool loop with thinking whose calling turn lost its thinking block",
            {
                "tools": [WEATHER],
                "max_tokens": 2048,
                "thinking": {"type": "enabled", "budget_tokens": 1024},
                "messages": turns(
                    "hi", [{"type": "text", "text": "Checking."}, TOOL_USE], [TOOL_RESULT]
                ),
            },
            "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
            "`text`. When `thinking` is enabled, a final `assistant` message must start with a "
            "thinking block",
        ),
    ],
)
def test_messages_bodies_the_api_refuses_are_refused_naming_the_field(_case, extra, message):
    # given
    body = {key: value for key, value in message_body(**extra).items() if value is not MISSING}
    # when
    refusal = refusal_of(check_messages, body)
    # then
    assert refusal.startswith(message)


def test_a_tool_loop_with_thinking_passes_with_its_thinking_block_kept():
    # given the calling turn sent back as it came, signed thinking first
    thought = {"type": "thinking", "thinking": "Look it up.", "signature": "EqQBCkYI"}
    body = message_body(tools=[WEATHER], max_tokens=2048,
                        thinking={"type": "enabled", "budget_tokens": 1024},
                        messages=turns("hi", [thought, TOOL_USE], [TOOL_RESULT]))  # fmt: skip
    # when / then
    check_messages(body)


def test_a_full_messages_body_passes():
    # given
    body = message_body(
        system=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        messages=turns(
            [
                {"type": "text", "text": "weather?"},
                {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}},
            ],
            [{"type": "text", "text": "Checking."}, TOOL_USE],
            [TOOL_RESULT, {"type": "text", "text": "thanks"}],
            "The answer:",
        ),
        tools=[
            {**WEATHER, "description": "Weather"},
            {"type": "web_search_20250305", "name": "web_search"},
        ],
        tool_choice={"type": "auto", "disable_parallel_tool_use": True},
        metadata={"user_id": "u-1"},
        stop_sequences=["END"],
        temperature=0.5,
        top_p=0.9,
        top_k=40,
        stream=True,
    )
    # when / then: no error
    check_messages(body)


OPENAI_REQUESTS = {
    "system, images and a stop": {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Compare"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}},
                    {"type": "image_url", "image_url": {"url": "https://x.test/a.jpg"}},
                ],
            },
        ],
        "stop": "END",
        "user": "u-1",
        "temperature": 0.3,
    },
    "a tool loop": {
        "messages": [
            {"role": "user", "content": "weather in Paris?"},
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "now", "arguments": ""},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "18C"},
            {
                "role": "tool",
                "tool_call_id": "call_2",
                "content": [{"type": "text", "text": "noon"}],
            },
            {"role": "user", "content": "thanks"},
        ],
        "tools": [OPENAI_WEATHER, {"type": "function", "function": {"name": "now"}}],
        "tool_choice": "required",
        "parallel_tool_calls": False,
    },
    "response_format json_schema": {
        "messages": [USER_HI],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "person", "schema": PERSON_SCHEMA, "strict": True},
        },
    },
    "response_format beside tools": {
        "messages": [USER_HI],
        "tools": [OPENAI_WEATHER],
        "response_format": {"type": "json_object"},
    },
    "past tool calls without tools": {
        "messages": [
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": ""}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "18C"},
        ],
        "response_format": {"type": "json_object"},
    },
    "reasoning_effort": {"messages": [USER_HI], "reasoning_effort": "high"},
    "assistant greeting after the system prompt and empty turns dropped": {
        "messages": [
            {"role": "system", "content": "x"},
            {"role": "user", "content": ""},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": ""},
            {"role": "user", "content": "again"},
        ],
    },
}


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("name", OPENAI_REQUESTS)
def test_what_the_anthropic_translation_sends_is_accepted(name, stream):
    # given
    _headers, payload = build_request(OPENAI_REQUESTS[name], "claude-x", "k", stream=stream)
    # when / then: no error
    check_messages(orjson.loads(payload))


@pytest.mark.parametrize(
    ("_case", "extra", "message"),
    [
        (
            "an Anthropic tool",
            {"tools": [WEATHER]},
            "Invalid value for 'tools[0].type': Supported values are: 'function'.",
        ),
        (
            "a function without a name",
            {"tools": [{"type": "function", "function": {}}]},
            "Missing required parameter: 'tools[0].function.name'.",
        ),
        (
            "parameters a string",
            {"tools": [{"type": "function", "function": {"name": "f", "parameters": "{}"}}]},
            "Invalid type for 'tools[0].function.parameters': expected an object.",
        ),
        (
            "an Anthropic tool_choice",
            {"tools": [OPENAI_WEATHER], "tool_choice": {"type": "tool", "name": "get_weather"}},
            "Invalid value for 'tool_choice.type': Supported values are: 'function'.",
        ),
        (
            "tool_choice any",
            {"tools": [OPENAI_WEATHER], "tool_choice": "any"},
            "Invalid value for 'tool_choice': 'any'. Supported values are: 'none', 'auto', and "
            "'required'.",
        ),
        (
            "tool_choice without tools",
            {"tool_choice": "auto"},
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
            "specified.",
        ),
        (
            "content a number",
            {"messages": [{"role": "user", "content": 5}]},
            "Invalid type for 'messages[0].content': expected a string or array of objects.",
        ),
        (
            "image_url a string",
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": "u"}]}]},
            "Invalid type for 'messages[0].content[0].image_url': expected an object.",
        ),
        (
            "an unknown role",
            {"messages": [{"role": "bot", "content": "x"}]},
            "Invalid value for 'messages[0].role': 'bot'. Supported values are",
        ),
        (
            "tool call arguments an object",
            {
                "messages": [
                    USER_HI,
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "id": "c",
                                "type": "function",
                                "function": {"name": "f", "arguments": {}},
                            }
                        ],
                    },
                ]
            },
            "Invalid type for 'messages[1].tool_calls[0].function.arguments': expected a string.",
        ),
        (
            "a tool message without a call",
            {"messages": [USER_HI, {"role": "tool", "tool_call_id": "c", "content": "x"}]},
            "Invalid value for 'messages[1].role': messages with role 'tool' must be a response "
            "to a preceeding message with 'tool_calls'.",
        ),
        (
            "a call without its tool message",
            {
                "messages": [
                    USER_HI,
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "id": "c",
                                "type": "function",
                                "function": {"name": "f", "arguments": "{}"},
                            }
                        ],
                    },
                    USER_HI,
                ]
            },
            "Invalid value for 'messages[2]': An assistant message with 'tool_calls' must be "
            "followed by tool messages responding to each 'tool_call_id'. The following "
            "tool_call_ids did not have response messages: c",
        ),
        (
            "an unknown response_format",
            {"response_format": {"type": "grammar"}},
            "Invalid value for 'response_format.type': 'grammar'. Supported values are",
        ),
        (
            "json_schema without a name",
            {"response_format": {"type": "json_schema", "json_schema": {"schema": {}}}},
            "Missing required parameter: 'response_format.json_schema.name'.",
        ),
        ("temperature above 2", {"temperature": 3}, "Invalid value for 'temperature'"),
        ("stop of five", {"stop": list("abcde")}, "Invalid value for 'stop'"),
    ],
)
def test_chat_fields_of_a_wrong_shape_are_refused_naming_the_field(_case, extra, message):
    # when
    refusal = refusal_of(check_chat, chat_body(**extra))
    # then
    assert refusal.startswith(message)


def test_unknown_chat_fields_and_nulls_pass_because_the_gateway_forwards_them():
    # given: fields OpenAI refuses but OpenAI-compatible providers may take, and nulls
    body = chat_body(
        vendor_x={"deep": [1]},
        repetition_penalty=1.1,
        temperature=None,
        tools=[{"type": "function", "function": {"name": "f", "parameters": None}}],
        tool_choice=None,
        response_format={"type": "json_schema", "json_schema": {"name": "a", "strict": None}},
        stream_options={"include_usage": None},
    )
    # when / then: no error
    check_chat(copy.deepcopy(body))


def test_a_refused_messages_body_is_an_anthropic_400_that_uses_no_fault(fake, client):
    # given
    fake.set_faults(["status:503"])
    bad = message_body(response_format={"type": "json_object"})
    # when
    refused = client.post("/v1/messages", json=bad, headers=ANTHROPIC_AUTH)
    then_good = client.post("/v1/messages", json=message_body(), headers=ANTHROPIC_AUTH)
    # then
    assert refused.status_code == 400
    assert refused.json() == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "response_format: Extra inputs are not permitted",
        },
    }
    assert then_good.status_code == 503  # the script entry was left for this one


def test_a_refused_chat_body_is_an_openai_400(client):
    # when
    body = chat_body(tools=[WEATHER])
    response = client.post("/v1/chat/completions", json=body, headers=OPENAI_AUTH)
    # then
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "message": "Invalid value for 'tools[0].type': Supported values are: 'function'.",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }


def test_a_forced_tool_gets_input_that_conforms_to_its_schema(client):
    # given: how a gateway asks an Anthropic model for structured output
    tool = {"name": "structured_output__person", "input_schema": PERSON_SCHEMA}
    choice = {"type": "tool", "name": tool["name"]}
    body = message_body(tools=[tool], tool_choice=choice)
    # when
    reply = client.post("/v1/messages", json=body, headers=ANTHROPIC_AUTH).json()
    with client.stream(
        "POST", "/v1/messages", json={**body, "stream": True}, headers=ANTHROPIC_AUTH
    ) as response:
        payloads = [orjson.loads(data) for _name, data in sse_events(response)]
    # then
    (block,) = reply["content"]
    assert (block["name"], block["input"]) == (
        "structured_output__person",
        {"name": "fake", "age": 1},
    )
    deltas = [p["delta"]["partial_json"] for p in payloads if p["type"] == "content_block_delta"]
    assert orjson.loads("".join(deltas)) == {"name": "fake", "age": 1}


def test_a_tool_taking_a_location_still_gets_paris(client):
    # given
    schema = {"type": "object", "properties": {"location": {"type": "string"}}}
    tool = {"type": "function", "function": {"name": "get_weather", "parameters": schema}}
    body = chat_body("weather?", tools=[tool])
    # when
    reply = client.post("/v1/chat/completions", json=body, headers=OPENAI_AUTH).json()
    # then
    arguments = reply["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    assert orjson.loads(arguments) == {"location": "Paris"}
