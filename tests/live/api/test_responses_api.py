"""`POST /v1/responses` through a live gateway with the official OpenAI SDK (SPEC R-API-1,
R-API-2), against both kinds of upstream (OpenAI-style `cheap`, Anthropic `anthro`): the tool
loop runs to a text answer, a named `tool_choice` forces the call, refusals name the
Responses field before any upstream call, `parse` fills a pydantic model, and a function
call's arguments stream in order."""

from __future__ import annotations

from typing import Any

import openai
import orjson
import pydantic
import pytest

from tests.gateway.api.test_responses import CHAT_WEATHER_TOOL, LLAMA, PARAMETERS, WEATHER_TOOL

pytestmark = pytest.mark.live

SONNET = "anthropic/claude-sonnet-4"
BY_MODEL = [pytest.param(LLAMA, "cheap", id="openai-style"),
            pytest.param(SONNET, "anthro", id="anthropic")]  # fmt: skip


def _no_upstream_call(live) -> bool:
    return all(fake.stats()["requests"] == 0 for fake in live.fakes.values())


@pytest.mark.parametrize(("model", "fake"), BY_MODEL)
def test_live_the_tool_loop_runs_to_a_text_answer(client, fresh_live, model, fake):
    # given a first turn that calls the tool
    conversation: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = client.responses.create(model=model, input=conversation, tools=[WEATHER_TOOL])
    calls = [item for item in first.output if item.type == "function_call"]
    assert [(c.name, orjson.loads(c.arguments)) for c in calls] == [
        ("get_weather", {"location": "Paris"})
    ]
    assert first.tools[0].name == "get_weather"
    # when the calls and their output are sent back, as the SDK's docs do it
    conversation += first.output
    conversation.append(
        {"type": "function_call_output", "call_id": calls[0].call_id, "output": "18C, sunny"}
    )
    second = client.responses.create(model=model, input=conversation, tools=[WEATHER_TOOL])
    # then the model answers with text
    assert f"fake reply from {fake}" in second.output_text
    sent = fresh_live.fakes[fake].stats()["last_request"]["body"]
    if fake == "cheap":
        assert sent["tools"] == [CHAT_WEATHER_TOOL]
        assert sent["messages"][1:] == [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": calls[0].call_id, "type": "function",
                 "function": {"name": "get_weather", "arguments": calls[0].arguments}}]},
            {"role": "tool", "tool_call_id": calls[0].call_id, "content": "18C, sunny"},
        ]  # fmt: skip
    else:
        assert sent["tools"][0]["name"] == "get_weather"
        assert [block["type"] for m in sent["messages"][1:] for block in m["content"]] == [
            "tool_use", "tool_result"
        ]  # fmt: skip


@pytest.mark.parametrize(("model", "fake"), BY_MODEL)
def test_live_a_named_tool_choice_forces_the_call_and_is_echoed(client, fresh_live, model, fake):
    # when the prompt would not call a tool, but tool_choice names one
    response = client.responses.create(
        model=model, input="Say hello", tools=[WEATHER_TOOL],
        tool_choice={"type": "function", "name": "get_weather"}, parallel_tool_calls=False,
    )  # fmt: skip
    # then
    assert [item.type for item in response.output] == ["function_call"]
    assert response.output[0].name == "get_weather"
    assert response.tool_choice.name == "get_weather"
    assert response.parallel_tool_calls is False
    assert [(t.type, t.name, t.parameters) for t in response.tools] == [
        ("function", "get_weather", PARAMETERS)
    ]
    assert response.model_extra["store"] is False


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"tools": [{"type": "web_search_preview"}]}, id="built-in tool"),
        pytest.param({"previous_response_id": "resp_abc"}, id="previous_response_id"),
        pytest.param({"max_output_tokens": 0}, id="max_output_tokens"),
        pytest.param({"input": [{"type": "item_reference", "id": "msg_1"}]}, id="item reference"),
    ],
)
def test_live_refusals_name_the_responses_field_before_any_upstream_call(client, fresh_live, body):
    # when
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(**{"model": LLAMA, "input": "hi", **body})
    # then
    expected = {"tools": "tools[0]", "input": "input[0]"}.get(next(iter(body)), next(iter(body)))
    assert caught.value.body["param"] == expected
    assert _no_upstream_call(fresh_live)


class Forecast(pydantic.BaseModel):
    city: str
    celsius: int
    sunny: bool


@pytest.mark.parametrize(
    ("model", "fake"),
    [
        BY_MODEL[0],
        pytest.param(SONNET, "anthro", id="anthropic"),
    ],
)  # fmt: skip
def test_live_parse_with_a_pydantic_text_format(client, fresh_live, model, fake):
    # when
    response = client.responses.parse(model=model, input="Forecast for Paris", text_format=Forecast)
    # then the fake answers a document of the schema, and the SDK parses it
    assert response.output_parsed == Forecast(city="fake", celsius=1, sunny=True)
    assert response.text.format.name == "Forecast"
    sent = fresh_live.fakes[fake].stats()["last_request"]["body"]
    if fake == "cheap":
        assert sent["response_format"]["type"] == "json_schema"
        assert sent["response_format"]["json_schema"]["name"] == "Forecast"


@pytest.mark.parametrize(("model", "fake"), BY_MODEL)
def test_live_stream_function_call_arguments_arrive_in_order_as_deltas(client, model, fake):
    # when
    with client.responses.stream(
        model=model, input="What is the weather in Paris?", tools=[WEATHER_TOOL]
    ) as stream:
        events = list(stream)
        final = stream.get_final_response()
    # then: added, the argument deltas, done, item done, then the response
    kinds = [e.type for e in events]
    call_events = [k for k in kinds if "function_call" in k or "output_item" in k]
    deltas = kinds.count("response.function_call_arguments.delta")
    assert call_events == [
        "response.output_item.added",
        *["response.function_call_arguments.delta"] * deltas,
        "response.function_call_arguments.done",
        "response.output_item.done",
    ]
    assert deltas > 1  # streamed in fragments, not whole at the end
    assert kinds[-1] == "response.completed"
    added = next(e for e in events if e.type == "response.output_item.added")
    assert (added.item.type, added.item.status, added.item.arguments) == (
        "function_call", "in_progress", ""
    )  # fmt: skip
    streamed = "".join(
        e.delta for e in events if e.type == "response.function_call_arguments.delta"
    )
    assert orjson.loads(streamed) == {"location": "Paris"}
    call = final.output[0]
    assert (call.type, call.name, orjson.loads(call.arguments)) == (
        "function_call", "get_weather", {"location": "Paris"}
    )  # fmt: skip
    assert final.tools[0].name == "get_weather"
