"""The Anthropic Messages route of the fake: JSON, the stream event sequence, tool use,
credentials and the Anthropic error shape."""

from __future__ import annotations

import orjson
import pytest

from tests.fakeupstream.conftest import ANTHROPIC_AUTH, sse_events

WEATHER_TOOL = {"name": "get_weather", "input_schema": {"type": "object"}}


def message_body(text: str = "hello there", **extra: object) -> dict[str, object]:
    messages = [{"role": "user", "content": text}]
    return {"model": "claude-test", "max_tokens": 4, "messages": messages, **extra}


def test_message_replies_with_text_block_and_usage(client):
    # when
    response = client.post("/v1/messages", json=message_body(), headers=ANTHROPIC_AUTH)
    # then
    assert response.status_code == 200
    reply = response.json()
    assert reply["type"] == "message"
    assert reply["role"] == "assistant"
    assert reply["model"] == "claude-test"
    assert reply["content"] == [{"type": "text", "text": "This is a fake"}]
    assert reply["stop_reason"] == "end_turn"
    assert reply["usage"]["input_tokens"] == 2
    assert reply["usage"]["output_tokens"] == 4
    assert reply["usage"]["cache_read_input_tokens"] == 0


def test_stream_follows_the_anthropic_event_sequence(client):
    # when
    body = message_body(stream=True)
    with client.stream("POST", "/v1/messages", json=body, headers=ANTHROPIC_AUTH) as response:
        events = sse_events(response)
    # then
    names = [name for name, _ in events]
    assert names == [
        "message_start",
        "content_block_start",
        "ping",
        *["content_block_delta"] * 4,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    payloads = [orjson.loads(data) for _, data in events]
    assert [p["type"] for p in payloads] == names  # data.type repeats the event name
    assert "".join(p["delta"]["text"] for p in payloads[3:7]) == "This is a fake"
    assert payloads[7 + 1]["delta"]["stop_reason"] == "end_turn"
    assert payloads[7 + 1]["usage"] == {"output_tokens": 4}


def test_weather_question_with_tools_gets_a_tool_use_block(client):
    # given
    body = message_body("weather in Paris?", tools=[WEATHER_TOOL])
    # when
    reply = client.post("/v1/messages", json=body, headers=ANTHROPIC_AUTH).json()
    # then
    (block,) = reply["content"]
    assert block["type"] == "tool_use"
    assert block["name"] == "get_weather"
    assert block["input"] == {"location": "Paris"}
    assert block["id"].startswith("toolu_")
    assert reply["stop_reason"] == "tool_use"


def test_streamed_tool_use_sends_input_json_deltas(client):
    # given
    choice = {"type": "tool", "name": "get_weather"}
    body = message_body("hi", tools=[WEATHER_TOOL], tool_choice=choice, stream=True)
    # when
    with client.stream("POST", "/v1/messages", json=body, headers=ANTHROPIC_AUTH) as response:
        payloads = [orjson.loads(data) for _, data in sse_events(response)]
    # then
    start = payloads[1]["content_block"]
    assert start == {"type": "tool_use", "id": start["id"], "name": "get_weather", "input": {}}
    deltas = [p["delta"] for p in payloads if p["type"] == "content_block_delta"]
    assert {d["type"] for d in deltas} == {"input_json_delta"}
    assert "".join(d["partial_json"] for d in deltas) == '{"location": "Paris"}'
    assert payloads[-2]["delta"]["stop_reason"] == "tool_use"


@pytest.mark.parametrize(
    ("_case", "headers", "status", "error_type"),
    [
        ("no credential", {"anthropic-version": "2023-06-01"}, 401, "authentication_error"),
        ("no version", {"x-api-key": "k"}, 400, "invalid_request_error"),
        ("bearer is fine", {"authorization": "Bearer k", "anthropic-version": "1"}, 200, None),
    ],
)
def test_messages_requires_a_credential_and_anthropic_version(
    client, _case, headers, status, error_type
):
    # when
    response = client.post("/v1/messages", json=message_body(), headers=headers)
    # then
    assert response.status_code == status
    if error_type:
        assert response.json() == {
            "type": "error",
            "error": {"type": error_type, "message": response.json()["error"]["message"]},
        }


def test_status_fault_on_messages_is_anthropic_shaped(client):
    # when
    headers = {**ANTHROPIC_AUTH, "X-Fake-Fault": "status:429"}
    response = client.post("/v1/messages", json=message_body(), headers=headers)
    # then
    assert response.status_code == 429
    assert response.headers["retry-after"] == "1"
    assert response.json()["error"]["type"] == "rate_limit_error"


def test_error_event_on_a_messages_stream_is_an_error_event(client):
    # when
    headers = {**ANTHROPIC_AUTH, "X-Fake-Fault": "error_event"}
    body = message_body(stream=True)
    with client.stream("POST", "/v1/messages", json=body, headers=headers) as response:
        events = sse_events(response)
    # then
    assert response.status_code == 200
    (name, data) = events[0]
    assert name == "error"
    assert orjson.loads(data)["error"]["type"] == "overloaded_error"
    assert len(events) == 1
