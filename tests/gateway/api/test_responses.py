"""`POST /v1/responses` (SPEC R-API-1, R-API-2): input items, the tool loop, function tools,
`tool_choice` and `text.format` translated onto the chat path, refusals that name the
Responses field, the response object's echo, and function calls streamed as they arrive.

The tests drive `to_chat_body` and `ResponsesStream` directly; the same through the official
SDK and a running gateway is tests/live/api/test_responses_api.py."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.api.responses import to_chat_body
from gateway.api.responses_stream import ResponsesStream
from gateway.errors import ApiError
from gateway.request_path.parse import validate_chat

LLAMA = "meta/llama-3.3-70b"
PARAMETERS = {"type": "object", "properties": {"location": {"type": "string"}}}
WEATHER_TOOL = {"type": "function", "name": "get_weather", "description": "Weather for a city",
                "parameters": PARAMETERS}  # fmt: skip
CHAT_WEATHER_TOOL = {"type": "function", "function": {"name": "get_weather",
                     "description": "Weather for a city", "parameters": PARAMETERS}}  # fmt: skip
ARGUMENTS = '{"location": "Paris"}'  # what the fake's tool calls always ask for


def _call(call_id: str, name: str = "get_weather") -> dict[str, Any]:
    return {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": name,
            "arguments": ARGUMENTS, "status": "completed"}  # fmt: skip


def _chat_call(call_id: str, name: str = "get_weather") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": ARGUMENTS}}


def _refusal(body: dict[str, Any]) -> ApiError:
    with pytest.raises(ApiError) as caught:
        to_chat_body({"model": LLAMA, **body})
    assert caught.value.status == 400
    return caught.value


def test_a_tool_loop_becomes_an_assistant_message_with_tool_calls_and_tool_messages():
    # given a conversation sent back with the model's text, two calls and their outputs
    items = [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
         "content": [{"type": "output_text", "text": "Looking.", "annotations": []}]},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        _call("call_a"),
        {**_call("call_b"), "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_a", "output": "18C"},
        {"type": "function_call_output", "call_id": "call_b",
         "output": [{"type": "input_text", "text": "21C"}]},
    ]  # fmt: skip
    # when
    chat = to_chat_body({"model": LLAMA, "input": items, "instructions": "Be brief."}).body
    # then: one assistant turn (text and both calls), one tool message per output
    assert chat["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Looking."}],
         "tool_calls": [_chat_call("call_a"),
                        {**_chat_call("call_b"), "function": {"name": "get_weather",
                                                              "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_a", "content": "18C"},
        {"role": "tool", "tool_call_id": "call_b", "content": [{"type": "text", "text": "21C"}]},
    ]  # fmt: skip
    validate_chat(chat)


def test_calls_without_a_preceding_assistant_message_open_one_and_images_become_image_urls():
    # given
    items = [
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "What is this?"},
            {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "low"},
        ]},
        _call("call_a"),
        {"type": "function_call_output", "call_id": "call_a", "output": "a cat"},
    ]  # fmt: skip
    # when
    messages = to_chat_body({"model": LLAMA, "input": items}).body["messages"]
    # then
    assert messages == [
        {"role": "user", "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png",
                                                "detail": "low"}},
        ]},
        {"role": "assistant", "content": None, "tool_calls": [_chat_call("call_a")]},
        {"role": "tool", "tool_call_id": "call_a", "content": "a cat"},
    ]  # fmt: skip


def test_flat_tools_tool_choice_and_text_format_become_their_chat_forms():
    # given
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    body = {
        "model": LLAMA, "input": "hi", "max_output_tokens": 50, "parallel_tool_calls": False,
        "tools": [{**WEATHER_TOOL, "strict": True}, CHAT_WEATHER_TOOL],
        "tool_choice": {"type": "function", "name": "get_weather"},
        "text": {"format": {"type": "json_schema", "name": "city", "schema": schema,
                            "strict": True}, "verbosity": "low"},
        "store": True,
    }  # fmt: skip
    # when
    translated = to_chat_body(body)
    # then the chat body has chat shapes; `store` is not forwarded
    chat = translated.body
    assert chat["tools"] == [
        {"type": "function", "function": {**CHAT_WEATHER_TOOL["function"], "strict": True}},
        CHAT_WEATHER_TOOL,
    ]
    assert chat["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert chat["response_format"] == {
        "type": "json_schema", "json_schema": {"name": "city", "schema": schema, "strict": True}
    }  # fmt: skip
    assert (chat["max_tokens"], chat["parallel_tool_calls"]) == (50, False)
    assert chat["verbosity"] == "low"
    assert not {"store", "max_output_tokens", "text"} & set(chat)
    validate_chat(chat)
    # and the response will echo the Responses forms
    echo = translated.echo
    assert echo["tools"] == [{**WEATHER_TOOL, "strict": True}, {**WEATHER_TOOL, "strict": None}]
    assert echo["tool_choice"] == {"type": "function", "name": "get_weather"}
    assert (echo["parallel_tool_calls"], echo["store"]) == (False, False)
    assert echo["text"] == body["text"]


@pytest.mark.parametrize(
    ("form", "expected"),
    [
        ({"type": "json_object"}, {"type": "json_object"}),
        ({"type": "text"}, None),
    ],
)
def test_json_object_maps_and_text_is_a_no_op(form, expected):
    chat = to_chat_body({"model": LLAMA, "input": "hi", "text": {"format": form}}).body
    assert chat.get("response_format") == expected


@pytest.mark.parametrize(
    ("_case", "body", "param", "says"),
    [
        ("a message without a role", {"input": [{"content": "hi"}]}, "input[0]", "role"),
        ("a chat-only role", {"input": [{"role": "tool", "content": "x"}]}, "input[0].role",
         "one of"),
        ("a call without call_id", {"input": [{**_call("a"), "call_id": None}]},
         "input[0].call_id", "non-empty"),
        ("a call without name", {"input": [{**_call("a"), "name": ""}]}, "input[0].name",
         "non-empty"),
        ("arguments not a string", {"input": [{**_call("a"), "arguments": {}}]},
         "input[0].arguments", "JSON string"),
        ("an output for no call", {"input": [
            _call("a"), {"type": "function_call_output", "call_id": "b", "output": "x"}]},
         "input[1].call_id", "no earlier function_call"),
        ("an output that is an image", {"input": [_call("a"), {
            "type": "function_call_output", "call_id": "a",
            "output": [{"type": "input_image", "image_url": "https://x/y.png"}]}]},
         "input[1].output[0]", "text"),
        ("an image by file id", {"input": [{"role": "user", "content": [
            {"type": "input_image", "file_id": "file-1"}]}]},
         "input[0].content[0].file_id", "no file store"),
        ("an image without url", {"input": [{"role": "user", "content": [
            {"type": "input_image"}]}]}, "input[0].content[0].image_url", "non-empty"),
        ("a file input", {"input": [{"role": "user", "content": [
            {"type": "input_file", "file_id": "f"}]}]}, "input[0].content[0]", "file"),
        ("text not a string", {"input": [{"role": "user", "content": [
            {"type": "input_text", "text": 5}]}]}, "input[0].content[0].text", "string"),
        ("a stored item", {"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0]",
         "does not store"),
        ("a built-in tool's call", {"input": [{"type": "web_search_call", "id": "ws"}]},
         "input[0].type", "not supported"),
        ("an empty input", {"input": []}, "input", "required"),
        ("instructions not a string", {"input": "hi", "instructions": ["x"]}, "instructions",
         "string"),
        ("previous_response_id", {"input": "hi", "previous_response_id": "resp_1"},
         "previous_response_id", "does not store responses"),
        ("a built-in tool", {"input": "hi", "tools": [WEATHER_TOOL, {"type": "web_search"}]},
         "tools[1]", "built-in tool 'web_search'"),
        ("an unknown tool type", {"input": "hi", "tools": [{"type": "magic"}]}, "tools[0]",
         "only function tools"),
        ("a tool without name", {"input": "hi", "tools": [{"type": "function"}]},
         "tools[0].name", "non-empty"),
        ("tool parameters not an object", {"input": "hi", "tools": [
            {**WEATHER_TOOL, "parameters": []}]}, "tools[0].parameters", "object"),
        ("a built-in tool choice", {"input": "hi", "tool_choice": {"type": "file_search"}},
         "tool_choice", "cannot be served"),
        ("a bad tool choice", {"input": "hi", "tool_choice": "always"}, "tool_choice", "auto"),
        ("a named choice without name", {"input": "hi", "tool_choice": {"type": "function"}},
         "tool_choice.name", "non-empty"),
        ("a schema without name", {"input": "hi", "text": {"format": {
            "type": "json_schema", "schema": {}}}}, "text.format.name", "non-empty"),
        ("a schema that is not an object", {"input": "hi", "text": {"format": {
            "type": "json_schema", "name": "x", "schema": "{}"}}}, "text.format.schema",
         "object"),
        ("an unknown format", {"input": "hi", "text": {"format": {"type": "yaml"}}},
         "text.format.type", "json_schema"),
        ("parallel_tool_calls not a boolean", {"input": "hi", "parallel_tool_calls": "yes"},
         "parallel_tool_calls", "boolean"),
    ],
)  # fmt: skip
def test_what_the_chat_path_cannot_express_is_a_400_naming_the_responses_field(
    _case, body, param, says
):
    # when
    error = _refusal(body)
    # then
    assert error.param == param
    assert says in error.message
    assert param.split(".")[0].split("[")[0] in error.message


@pytest.mark.parametrize("value", [0, -3, "10", 2.5, True])
def test_a_bad_max_output_tokens_is_named_as_such(value):
    error = _refusal({"input": "hi", "max_output_tokens": value})
    assert (error.param, error.message) == (
        "max_output_tokens", "`max_output_tokens` must be an integer of at least 1"
    )  # fmt: skip


def test_store_is_accepted_and_reported_false():
    translated = to_chat_body({"model": LLAMA, "input": "hi", "store": True})
    assert translated.echo["store"] is False
    assert "store" not in translated.body


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6)
    | st.sampled_from(["function", "function_call", "function_call_output", "message",
                       "input_text", "input_image", "user", "assistant", "json_schema"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(
        st.sampled_from(["type", "role", "content", "call_id", "name", "arguments", "output",
                         "text", "image_url", "format", "schema", "function", "parameters"]),
        children, max_size=5),
    max_leaves=16,
)  # fmt: skip


@given(
    items=json_values,
    tools=json_values,
    tool_choice=json_values,
    text=json_values,
)
def test_any_input_is_translated_or_refused_and_names_no_chat_only_field(
    items, tools, tool_choice, text
):
    # given a body whose Responses fields hold anything JSON can
    body = {"model": LLAMA, "input": items, "tools": tools, "tool_choice": tool_choice,
            "text": text}  # fmt: skip
    # when
    try:
        chat = to_chat_body(body).body
    except ApiError as error:
        refusal = error
    else:
        # then what is accepted passes the chat checks, which would name chat-only fields
        validate_chat(chat)
        return
    # and a refusal is a 400 naming a field the client sent
    assert refusal.status == 400
    assert refusal.param.split(".")[0].split("[")[0] in body


def _chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {"object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}  # fmt: skip


def _call_chunk(index: int, arguments: str, call_id: str = "", name: str = "") -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if call_id:
        call.update(id=call_id, type="function")
        call["function"]["name"] = name
    return _chunk({"tool_calls": [call]})


def _kinds(frames: list[bytes]) -> list[tuple[str, Any]]:
    """(event type, the delta or item type) of each SSE frame."""
    out = []
    for frame in frames:
        data = orjson.loads(frame.split(b"data: ", 1)[1])
        out.append((data["type"], data.get("delta") or (data.get("item") or {}).get("type")))
    return out


def test_stream_function_calls_are_announced_and_streamed_as_their_chunks_arrive():
    # given
    stream = ResponsesStream(envelope={"id": "resp_1", "object": "response"}, message_id="msg_1")
    opening = stream.opening()
    # when text, then two calls in fragments arrive
    steps = [
        stream.feed(_chunk({"role": "assistant", "content": "Let me check."})),
        stream.feed(_call_chunk(0, "", "call_a", "get_weather")),
        stream.feed(_call_chunk(0, '{"loc')),
        stream.feed(_call_chunk(0, 'ation": "Paris"}')),
        stream.feed(_call_chunk(1, '{}', "call_b", "get_time")),
        stream.feed(_chunk({}, "tool_calls")),
    ]  # fmt: skip
    closing = stream.closing()
    # then each item opens when its first chunk arrives and closes when the next begins
    assert _kinds(opening) == [("response.created", None), ("response.in_progress", None)]
    assert [_kinds(step) for step in steps] == [
        [("response.output_item.added", "message"), ("response.content_part.added", None),
         ("response.output_text.delta", "Let me check.")],
        [("response.output_text.done", None), ("response.content_part.done", None),
         ("response.output_item.done", "message"),
         ("response.output_item.added", "function_call")],
        [("response.function_call_arguments.delta", '{"loc')],
        [("response.function_call_arguments.delta", 'ation": "Paris"}')],
        [("response.function_call_arguments.done", None),
         ("response.output_item.done", "function_call"),
         ("response.output_item.added", "function_call"),
         ("response.function_call_arguments.delta", "{}")],
        [],
    ]  # fmt: skip
    assert _kinds(closing) == [
        ("response.function_call_arguments.done", None),
        ("response.output_item.done", "function_call"),
        ("response.completed", None),
    ]
    final = orjson.loads(closing[-1].split(b"data: ", 1)[1])["response"]
    assert [(o["type"], o.get("call_id"), o.get("arguments")) for o in final["output"]] == [
        ("message", None, None), ("function_call", "call_a", ARGUMENTS),
        ("function_call", "call_b", "{}"),
    ]  # fmt: skip
    numbers = [orjson.loads(f.split(b"data: ", 1)[1])["sequence_number"]
               for f in [*opening, *(f for step in steps for f in step), *closing]]  # fmt: skip
    assert numbers == list(range(1, len(numbers) + 1))


def test_stream_ended_by_the_length_limit_is_incomplete_with_the_reason():
    stream = ResponsesStream(envelope={"id": "resp_1"}, message_id="msg_1")
    stream.opening()
    stream.feed(_chunk({"content": "Half"}, "length"))
    final = orjson.loads(stream.closing()[-1].split(b"data: ", 1)[1])
    assert final["type"] == "response.incomplete"
    assert final["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


def test_stream_an_in_band_error_is_the_next_numbered_error_event():
    stream = ResponsesStream(envelope={"id": "resp_1"}, message_id="msg_1")
    frames = [*stream.opening(), *stream.feed(_chunk({"content": "Hi"}))]
    error = {"message": "upstream broke", "code": "stream_interrupted", "param": "x"}
    event = orjson.loads(stream.error({"error": error}).split(b"data: ", 1)[1])
    assert event == {"type": "error", "sequence_number": len(frames) + 1, "param": None,
                     "code": "stream_interrupted", "message": "upstream broke"}  # fmt: skip


def test_reasoning_effort_reaches_the_chat_body_where_the_smart_tiers_read_it():
    chat = to_chat_body({"model": "m", "input": "hi", "reasoning": {"effort": "high"}}).body
    assert chat["reasoning_effort"] == "high"


@pytest.mark.parametrize(
    ("body", "param"),
    [({"input": "hi", "tools": [{"type": {}, "name": "f"}]}, "tools[0].type"),
     ({"input": [{"role": "user", "content": [{"type": {}, "text": ""}]}]},
      "input[0].content[0].type"),
     ({"input": [{"type": [], "role": "user", "content": "hi"}]}, "input[0].type")],
)  # fmt: skip
def test_a_type_that_is_not_a_string_is_a_400_not_a_crash(body, param):
    # found by the schema fuzz: unhashable values checked against sets raised TypeError
    with pytest.raises(ApiError) as caught:
        to_chat_body({"model": "m", **body})
    assert (caught.value.status, caught.value.param) == (400, param)
