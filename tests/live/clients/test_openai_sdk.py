"""The official `openai` SDK against the gateway, every feature once per upstream API style:
chat (sync, async, raw response, streaming), `parse`, tools (streamed too) and the tool
loop, a field only OpenAI-style upstreams express, embeddings, models, the Responses API
(create, stream, parse, the function-call loop) and the SDK's error classes and retries."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx2
import openai
import pytest

from tests.live.clients.conftest import (
    CHAT_WEATHER_TOOL,
    EMBEDDING,
    FAKE_PERSON,
    LLAMA,
    MAX_TOKENS,
    PAUSE_PROMPT,
    SONNET,
    WEATHER_ARGUMENTS,
    WEATHER_PARAMETERS,
    WEATHER_PROMPT,
    Person,
    Routed,
)
from tests.live.installation import Live

pytestmark = pytest.mark.live

RESPONSES_WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "name": "get_weather",
    "description": "The current weather in a city",
    "parameters": WEATHER_PARAMETERS,
}


@pytest.fixture
def sdk(gateway: Live, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url, api_key=key, max_retries=0, timeout=20)


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


# --- chat -----------------------------------------------------------------------------


def test_sync_chat(sdk: openai.OpenAI, routed: Routed):
    completion = sdk.chat.completions.create(
        model=routed.model, messages=_user(PAUSE_PROMPT), max_tokens=MAX_TOKENS
    )
    assert routed.reply in (completion.choices[0].message.content or "")
    assert completion.model == routed.model
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    assert completion.usage.completion_tokens == MAX_TOKENS  # the client's limit arrived
    assert completion.model_extra["switchyard"]["model"] == routed.model


def test_async_chat_and_async_stream(gateway: Live, key: str, routed: Routed):
    async def run() -> tuple[openai.types.chat.ChatCompletion, list[Any]]:
        async with openai.AsyncOpenAI(
            base_url=gateway.base_url, api_key=key, max_retries=0, timeout=20
        ) as client:
            completion = await client.chat.completions.create(
                model=routed.model, messages=_user(PAUSE_PROMPT), max_tokens=MAX_TOKENS
            )
            stream = await client.chat.completions.create(
                model=routed.model,
                messages=_user(PAUSE_PROMPT),
                stream=True,
                max_tokens=MAX_TOKENS,
            )
            return completion, [chunk async for chunk in stream]

    completion, chunks = asyncio.run(run())
    assert routed.reply in (completion.choices[0].message.content or "")
    assert completion.model == routed.model
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert routed.reply in text


def test_with_raw_response_carries_the_trace_and_attempts_headers(
    sdk: openai.OpenAI, routed: Routed
):
    raw = sdk.chat.completions.with_raw_response.create(
        model=routed.model, messages=_user(PAUSE_PROMPT), max_tokens=MAX_TOKENS
    )
    assert raw.status_code == 200
    assert raw.headers["x-switchyard-trace-id"]
    attempts = json.loads(raw.headers["x-switchyard-attempts"])
    assert [(a["provider"], a["model"], a["status"]) for a in attempts] == [
        (routed.fake, routed.model, "ok")
    ]
    completion = raw.parse()
    assert completion.model == routed.model
    assert routed.reply in (completion.choices[0].message.content or "")
    assert completion.model_extra["switchyard"]["trace_id"] == raw.headers["x-switchyard-trace-id"]


def test_streaming(sdk: openai.OpenAI, routed: Routed):
    chunks = list(
        sdk.chat.completions.create(
            model=routed.model,
            messages=_user(PAUSE_PROMPT),
            max_tokens=MAX_TOKENS,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert routed.reply in text
    assert {c.model for c in chunks} == {routed.model}
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert [f for f in finishes if f] == ["stop"]
    usage = [c.usage for c in chunks if c.usage]
    assert len(usage) == 1
    assert usage[0].completion_tokens == MAX_TOKENS


def test_parse_with_a_pydantic_model(sdk: openai.OpenAI, routed: Routed):
    completion = sdk.chat.completions.parse(
        model=routed.model, messages=_user("Who wrote the first program?"), response_format=Person
    )
    assert completion.model == routed.model
    assert completion.choices[0].message.parsed == FAKE_PERSON
    assert completion.choices[0].message.tool_calls is None


def test_a_tool_call_and_the_tool_loop(sdk: openai.OpenAI, routed: Routed):
    # the model asks for the tool
    messages: list[dict[str, Any]] = _user(WEATHER_PROMPT)
    first = sdk.chat.completions.create(
        model=routed.model, messages=messages, tools=[CHAT_WEATHER_TOOL]
    )
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert first.model == routed.model
    [call] = choice.message.tool_calls or []
    assert call.type == "function"
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == WEATHER_ARGUMENTS
    assert call.id
    # the tool result goes back, and the model answers with text
    messages.append(choice.message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": "18C and sunny"})
    second = sdk.chat.completions.create(
        model=routed.model, messages=messages, tools=[CHAT_WEATHER_TOOL], max_tokens=MAX_TOKENS
    )
    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.tool_calls is None
    assert routed.reply in (second.choices[0].message.content or "")


def test_a_streamed_tool_call(sdk: openai.OpenAI, routed: Routed):
    chunks = list(
        sdk.chat.completions.create(
            model=routed.model,
            messages=_user(WEATHER_PROMPT),
            tools=[CHAT_WEATHER_TOOL],
            stream=True,
        )
    )
    deltas = [d for c in chunks if c.choices for d in c.choices[0].delta.tool_calls or []]
    assert {d.index for d in deltas} == {0}
    assert [d.function.name for d in deltas if d.function and d.function.name] == ["get_weather"]
    assert [d.id for d in deltas if d.id] != []
    arguments = "".join(d.function.arguments or "" for d in deltas if d.function)
    assert json.loads(arguments) == WEATHER_ARGUMENTS
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert [f for f in finishes if f] == ["tool_calls"]


def test_a_field_only_openai_style_apis_express(sdk: openai.OpenAI, gateway: Live, routed: Routed):
    # `presence_penalty` has no Anthropic counterpart, and dropping it would change the
    # answer: the Anthropic adapter refuses it (gateway/upstream/providers/anthropic.py FIELDS)
    # instead of losing it, and OpenAI-style upstreams get it as sent.
    request = {"model": routed.model, "messages": _user(PAUSE_PROMPT), "max_tokens": MAX_TOKENS}
    if routed.fake == "anthro":
        with pytest.raises(openai.BadRequestError) as caught:
            sdk.chat.completions.create(**request, presence_penalty=0.5)
        assert caught.value.code == "unsupported_request"
        assert "presence_penalty" in caught.value.message
        assert gateway.fakes["anthro"].stats()["requests"] == 0
    else:
        completion = sdk.chat.completions.create(**request, presence_penalty=0.5)
        assert routed.reply in (completion.choices[0].message.content or "")
        sent = gateway.fakes[routed.fake].stats()["last_request"]["body"]
        assert sent["presence_penalty"] == 0.5


def test_embeddings_on_the_openai_style_upstream(sdk: openai.OpenAI):
    # Embeddings have no Anthropic-style counterpart: Anthropic's API has no embeddings
    # endpoint, and the catalog serves `openai/text-embedding-3-small` from `cheap` only.
    result = sdk.embeddings.create(model=EMBEDDING, input=["hello", "world"])
    assert result.model == EMBEDDING
    assert [e.index for e in result.data] == [0, 1]
    for item in result.data:
        assert len(item.embedding) == 8  # the fake's dimension, decoded from base64
        assert abs(sum(x * x for x in item.embedding) - 1) < 1e-5
    assert result.data[0].embedding != result.data[1].embedding
    again = sdk.embeddings.create(model=EMBEDDING, input="hello")
    assert again.data[0].embedding == result.data[0].embedding


# --- models ---------------------------------------------------------------------------


def test_models_list_and_retrieve(sdk: openai.OpenAI, routed: Routed):
    listed = {m.id for m in sdk.models.list()}
    assert {LLAMA, SONNET, EMBEDDING} <= listed
    model = sdk.models.retrieve(routed.model)
    assert model.id == routed.model
    assert model.object == "model"


# --- Responses API --------------------------------------------------------------------


def test_responses_create(sdk: openai.OpenAI, routed: Routed):
    response = sdk.responses.create(
        model=routed.model, input=PAUSE_PROMPT, max_output_tokens=MAX_TOKENS
    )
    assert response.model == routed.model
    assert response.status == "completed"
    assert response.usage is not None
    assert response.usage.output_tokens == MAX_TOKENS
    assert routed.reply in response.output_text


def test_responses_stream(sdk: openai.OpenAI, routed: Routed):
    with sdk.responses.stream(
        model=routed.model, input=PAUSE_PROMPT, max_output_tokens=MAX_TOKENS
    ) as stream:
        events = list(stream)
        response = stream.get_final_response()
    kinds = [e.type for e in events]
    assert (kinds[0], kinds[-1]) == ("response.created", "response.completed")
    deltas = [e.delta for e in events if e.type == "response.output_text.delta"]
    assert len(deltas) > 1
    assert "".join(deltas) == response.output_text
    assert routed.reply in response.output_text
    assert response.model == routed.model


def test_responses_parse_with_text_format(sdk: openai.OpenAI, routed: Routed):
    response = sdk.responses.parse(
        model=routed.model, input="Who wrote the first program?", text_format=Person
    )
    assert response.model == routed.model
    assert response.output_parsed == FAKE_PERSON


def test_responses_tool_loop(sdk: openai.OpenAI, routed: Routed):
    # the model asks for the tool: a function_call item
    items: list[Any] = _user(WEATHER_PROMPT)
    first = sdk.responses.create(model=routed.model, input=items, tools=[RESPONSES_WEATHER_TOOL])
    assert first.model == routed.model
    [call] = [item for item in first.output if item.type == "function_call"]
    assert call.name == "get_weather"
    assert json.loads(call.arguments) == WEATHER_ARGUMENTS
    assert call.call_id
    # its function_call_output goes back with the output items, and the model answers text
    items += first.output
    items.append({"type": "function_call_output", "call_id": call.call_id, "output": "18C"})
    second = sdk.responses.create(
        model=routed.model,
        input=items,
        tools=[RESPONSES_WEATHER_TOOL],
        max_output_tokens=MAX_TOKENS,
    )
    assert [item.type for item in second.output] == ["message"]
    assert routed.reply in second.output_text


def test_responses_stream_of_a_function_call(sdk: openai.OpenAI, routed: Routed):
    with sdk.responses.stream(
        model=routed.model, input=WEATHER_PROMPT, tools=[RESPONSES_WEATHER_TOOL]
    ) as stream:
        events = list(stream)
        response = stream.get_final_response()
    kinds = [e.type for e in events]
    assert kinds[-1] == "response.completed"
    assert "response.function_call_arguments.done" in kinds
    [call] = response.output
    assert call.type == "function_call"
    assert (call.name, json.loads(call.arguments)) == ("get_weather", WEATHER_ARGUMENTS)


# --- errors ---------------------------------------------------------------------------


def test_a_bad_key_is_an_authentication_error(gateway: Live, routed: Routed):
    client = openai.OpenAI(base_url=gateway.base_url, api_key="sk-sy-not-a-key", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as caught:
        client.chat.completions.create(
            model=routed.model, messages=_user(PAUSE_PROMPT), max_tokens=MAX_TOKENS
        )
    assert caught.value.status_code == 401
    assert caught.value.code == "invalid_api_key"


def test_an_unknown_model_is_a_not_found_error(sdk: openai.OpenAI, routed: Routed):
    with pytest.raises(openai.NotFoundError) as caught:
        sdk.chat.completions.create(
            model=f"{routed.vendor}/no-such-model",
            messages=_user(PAUSE_PROMPT),
            max_tokens=MAX_TOKENS,
        )
    assert caught.value.code == "model_not_found"


def test_a_policy_conflict_is_a_conflict_error_after_one_request(gateway: Live, routed: Routed):
    # given the SDK's default retries (2) and a hook that counts the HTTP requests it sends
    sent: list[str] = []

    def count(request: httpx2.Request) -> None:
        sent.append(f"{request.method} {request.url.path}")

    http_client = openai.DefaultHttpxClient(event_hooks={"request": [count]})
    client = openai.OpenAI(
        base_url=gateway.base_url, api_key=gateway.keys["euonly"], http_client=http_client
    )
    assert client.max_retries == 2
    # when nothing passes the workspace's EU-owned residency policy
    with pytest.raises(openai.ConflictError) as caught:
        client.chat.completions.create(
            model=routed.model, messages=_user(PAUSE_PROMPT), max_tokens=MAX_TOKENS
        )
    # then the 409 says so, and the SDK did not retry it (x-should-retry: false)
    assert caught.value.status_code == 409
    assert caught.value.code == "no_endpoint_for_policy"
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert json.loads(caught.value.response.headers["x-switchyard-attempts"]) == []
    assert sent == ["POST /v1/chat/completions"]
    client.close()
