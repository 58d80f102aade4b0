"""The OpenAI-compatible routes of the fake: chat (JSON, SSE, tools), embeddings, models."""

from __future__ import annotations

import base64
import struct

import httpx
import orjson

from tests.fakeupstream.conftest import OPENAI_AUTH, chat_body, sse_events

TWENTY_TOKENS = (
    "This is a fake reply from fast. This is a fake reply from fast. This is a fake reply from"
)
WEATHER_TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {}}}
OTHER_TOOL = {"type": "function", "function": {"name": "get_time", "parameters": {}}}


def test_chat_completion_replies_with_twenty_tokens_and_usage(client):
    # given
    body = chat_body("hello there, friend")  # 19 characters -> 4 prompt tokens
    # when
    response = client.post("/v1/chat/completions", json=body, headers=OPENAI_AUTH)
    # then
    assert response.status_code == 200
    reply = response.json()
    assert reply["object"] == "chat.completion"
    assert reply["model"] == "gpt-test"
    assert reply["choices"][0]["message"]["content"] == TWENTY_TOKENS
    assert reply["choices"][0]["finish_reason"] == "stop"
    assert reply["usage"] == {
        "prompt_tokens": 4,
        "completion_tokens": 20,
        "total_tokens": 24,
        "prompt_tokens_details": {"cached_tokens": 0},
    }


def test_max_tokens_and_max_completion_tokens_set_the_reply_length(client):
    # when
    short = client.post("/v1/chat/completions", json=chat_body(max_tokens=3), headers=OPENAI_AUTH)
    newer = client.post(
        "/v1/chat/completions", json=chat_body(max_completion_tokens=9), headers=OPENAI_AUTH
    )
    # then
    assert short.json()["choices"][0]["message"]["content"] == "This is a"
    assert newer.json()["usage"]["completion_tokens"] == 9


def test_stream_sends_one_chunk_per_token_then_finish_then_done(client):
    # when
    with client.stream(
        "POST", "/v1/chat/completions", json=chat_body(stream=True), headers=OPENAI_AUTH
    ) as response:
        events = [data for _, data in sse_events(response)]
    # then
    assert response.headers["content-type"] == "text/event-stream"
    assert events[-1] == "[DONE]"
    chunks = [orjson.loads(data) for data in events[:-1]]
    content = [c for c in chunks if c["choices"][0]["delta"].get("content")]
    assert len(content) == 20
    assert content[0]["choices"][0]["delta"]["role"] == "assistant"
    assert "".join(c["choices"][0]["delta"]["content"] for c in content) == TWENTY_TOKENS
    assert chunks[-1]["choices"][0] == {
        "index": 0,
        "delta": {},
        "logprobs": None,
        "finish_reason": "stop",
    }
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert {c["model"] for c in chunks} == {"gpt-test"}


def test_stream_with_include_usage_ends_with_a_usage_chunk(client):
    # given
    body = chat_body(stream=True, max_tokens=5, stream_options={"include_usage": True})
    # when
    with client.stream("POST", "/v1/chat/completions", json=body, headers=OPENAI_AUTH) as response:
        events = [data for _, data in sse_events(response)]
    # then
    usage_chunk = orjson.loads(events[-2])
    assert events[-1] == "[DONE]"
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"]["completion_tokens"] == 5
    assert usage_chunk["usage"]["total_tokens"] == 5 + usage_chunk["usage"]["prompt_tokens"]


def test_weather_question_with_tools_gets_a_tool_call(client):
    # given
    body = chat_body("What is the weather in Paris?", tools=[WEATHER_TOOL, OTHER_TOOL])
    # when
    reply = client.post("/v1/chat/completions", json=body, headers=OPENAI_AUTH).json()
    # then
    choice = reply["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    (call,) = choice["message"]["tool_calls"]
    assert call["type"] == "function"
    assert call["function"] == {"name": "get_weather", "arguments": '{"location": "Paris"}'}


def test_tool_choice_naming_a_function_forces_that_call(client):
    # given
    choice = {"type": "function", "function": {"name": "get_time"}}
    body = chat_body("hi", tools=[WEATHER_TOOL, OTHER_TOOL], tool_choice=choice)
    # when
    reply = client.post("/v1/chat/completions", json=body, headers=OPENAI_AUTH).json()
    # then
    assert reply["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_time"


def test_tool_result_as_last_message_gets_a_text_reply(client):
    # given
    messages = [
        {"role": "user", "content": "weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]  # fmt: skip
    body = {"model": "gpt-test", "messages": messages, "tools": [WEATHER_TOOL]}
    # when
    reply = client.post("/v1/chat/completions", json=body, headers=OPENAI_AUTH).json()
    # then
    assert reply["choices"][0]["finish_reason"] == "stop"


def test_streamed_tool_call_sends_name_first_then_argument_fragments(client):
    # given
    body = chat_body("weather?", tools=[WEATHER_TOOL], stream=True)
    # when
    with client.stream("POST", "/v1/chat/completions", json=body, headers=OPENAI_AUTH) as response:
        events = [data for _, data in sse_events(response)]
    # then
    assert events[-1] == "[DONE]"
    deltas = [orjson.loads(data)["choices"][0] for data in events[:-1]]
    first_call = deltas[0]["delta"]["tool_calls"][0]
    assert first_call["function"] == {"name": "get_weather", "arguments": ""}
    assert first_call["id"].startswith("call_")
    assert first_call["type"] == "function"
    fragments = [d["delta"]["tool_calls"][0]["function"]["arguments"] for d in deltas[1:-1]]
    assert len(fragments) > 1
    assert "".join(fragments) == '{"location": "Paris"}'
    assert deltas[-1]["finish_reason"] == "tool_calls"


def test_embeddings_are_deterministic_unit_vectors_of_dimension_8(client):
    # given
    body = {"model": "embed-test", "input": ["alpha", "beta", "alpha"]}
    # when
    reply = client.post("/v1/embeddings", json=body, headers=OPENAI_AUTH).json()
    # then
    vectors = [item["embedding"] for item in reply["data"]]
    assert [len(v) for v in vectors] == [8, 8, 8]
    assert vectors[0] == vectors[2]
    assert vectors[0] != vectors[1]
    assert abs(sum(x * x for x in vectors[0]) - 1.0) < 1e-9
    assert reply["model"] == "embed-test"
    assert reply["usage"] == {"prompt_tokens": 3, "total_tokens": 3}


def test_base64_embeddings_decode_to_the_float_vectors(client):
    # given
    floats = {"model": "e", "input": "alpha"}
    packed = {"model": "e", "input": "alpha", "encoding_format": "base64"}
    # when
    vector = client.post("/v1/embeddings", json=floats, headers=OPENAI_AUTH).json()
    encoded = client.post("/v1/embeddings", json=packed, headers=OPENAI_AUTH).json()
    # then
    decoded = struct.unpack("<8f", base64.b64decode(encoded["data"][0]["embedding"]))
    assert all(
        abs(a - b) < 1e-6 for a, b in zip(decoded, vector["data"][0]["embedding"], strict=True)
    )


def test_models_lists_a_wildcard_when_any_model_is_accepted(client):
    # when
    reply = client.get("/v1/models", headers=OPENAI_AUTH).json()
    # then
    assert [model["id"] for model in reply["data"]] == ["*"]


def test_missing_bearer_token_is_401_in_openai_shape(client):
    # when
    response = client.post("/v1/chat/completions", json=chat_body())
    # then
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"
    assert set(response.json()["error"]) == {"message", "type", "param", "code"}


def test_invalid_bodies_are_400(client):
    # when
    not_json = client.post("/v1/chat/completions", content=b"{nope", headers=OPENAI_AUTH)
    no_messages = client.post("/v1/chat/completions", json={"model": "m"}, headers=OPENAI_AUTH)
    bad_limit = client.post(
        "/v1/chat/completions", json=chat_body(max_tokens=0), headers=OPENAI_AUTH
    )
    # then
    assert [not_json.status_code, no_messages.status_code, bad_limit.status_code] == [400] * 3
    assert no_messages.json()["error"]["type"] == "invalid_request_error"


def test_unknown_path_is_404_and_counted(fake, client):
    # when
    response = client.post("/v1/nothing", json={}, headers=OPENAI_AUTH)
    # then
    assert response.status_code == 404
    assert fake.stats()["by_path"] == {"/v1/nothing": 1}


def test_requests_on_one_keep_alive_connection_are_answered_in_order(fake):
    # given
    transport = httpx.HTTPTransport(retries=0)
    # when
    with httpx.Client(base_url=fake.root_url, transport=transport) as http:
        lengths = [
            http.post(
                "/v1/chat/completions", json=chat_body(max_tokens=n), headers=OPENAI_AUTH
            ).json()["usage"]["completion_tokens"]
            for n in (1, 2, 3)
        ]
    # then
    assert lengths == [1, 2, 3]


SCHEMA_FORMAT = {
    "type": "json_schema",
    "json_schema": {
        "name": "verdict",
        "schema": {
            "type": "object",
            "properties": {
                "label": {"type": "string", "enum": ["yes", "no"]},
                "score": {"type": "number", "minimum": 0, "maximum": 1},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["label", "score", "tags"],
        },
    },
}


def test_a_json_schema_response_format_gets_a_conforming_document(client):
    body = {**chat_body("classify this"), "response_format": SCHEMA_FORMAT}
    reply = client.post("/v1/chat/completions", json=body, headers=OPENAI_AUTH).json()
    content = reply["choices"][0]["message"]["content"]
    assert orjson.loads(content) == {"label": "yes", "score": 0.5, "tags": ["fake"]}
    # streamed, the pieces join back into the same document
    stream = client.post("/v1/chat/completions", json={**body, "stream": True}, headers=OPENAI_AUTH)
    chunks = [orjson.loads(data) for _name, data in sse_events(stream) if data != "[DONE]"]
    pieces = [c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]]
    assert "".join(pieces) == content


def test_the_ignore_format_fault_answers_prose_despite_the_schema(client):
    body = {**chat_body("classify this"), "response_format": SCHEMA_FORMAT}
    headers = {**OPENAI_AUTH, "X-Fake-Fault": "ignore_format"}
    reply = client.post("/v1/chat/completions", json=body, headers=headers).json()
    assert reply["choices"][0]["message"]["content"] == TWENTY_TOKENS


def test_the_cache_mode_can_be_switched_at_run_time_until_reset(fake, client):
    def cached() -> int:
        body = chat_body("hello there, friend")  # 4 prompt tokens
        reply = client.post("/v1/chat/completions", json=body, headers=OPENAI_AUTH).json()
        return reply["usage"]["prompt_tokens_details"]["cached_tokens"]

    assert cached() == 0
    fake.set_cache_mode("always")
    assert cached() == 3
    fake.reset()
    assert cached() == 0
