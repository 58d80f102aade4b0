"""`pydantic-ai` agents with an `OpenAIProvider` pointed at the gateway, on `OpenAIChatModel`
(Chat Completions) and `OpenAIResponsesModel` (the Responses API): a text run, a streamed
run, a structured `output_type` (pydantic-ai's default tool output) and a function tool the
agent calls and answers, once per upstream API style."""

from __future__ import annotations

import asyncio

import pytest
from pydantic_ai import Agent
from pydantic_ai.models import Model
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider

from tests.live.clients.conftest import (
    FAKE_PERSON,
    MAX_TOKENS,
    PAUSE_PROMPT,
    WEATHER_PROMPT,
    Person,
    Routed,
)
from tests.live.installation import Live

pytestmark = pytest.mark.live


@pytest.fixture(params=[OpenAIChatModel, OpenAIResponsesModel], ids=["chat", "responses"])
def model(
    request: pytest.FixtureRequest, gateway: Live, key: str, routed: Routed
) -> OpenAIChatModel | OpenAIResponsesModel:
    provider = OpenAIProvider(base_url=gateway.base_url, api_key=key)
    return request.param(routed.model, provider=provider)


def test_a_text_run(model: Model, routed: Routed):
    agent = Agent(model, model_settings={"max_tokens": MAX_TOKENS})
    result = agent.run_sync(PAUSE_PROMPT)
    assert routed.reply in result.output
    assert result.response.model_name == routed.model
    assert result.usage.output_tokens == MAX_TOKENS


def test_a_streamed_run(model: Model, routed: Routed):
    agent = Agent(model, model_settings={"max_tokens": MAX_TOKENS})

    async def run() -> tuple[list[str], str]:
        async with agent.run_stream(PAUSE_PROMPT) as streamed:
            deltas = [delta async for delta in streamed.stream_text(delta=True, debounce_by=None)]
            return deltas, await streamed.get_output()

    deltas, output = asyncio.run(run())
    assert len(deltas) > 1
    assert "".join(deltas) == output
    assert routed.reply in output


def test_structured_output_type(model: Model):
    agent = Agent(model, output_type=Person)
    result = agent.run_sync("Who wrote the first program?")
    assert result.output == FAKE_PERSON


def test_a_function_tool_and_the_tool_loop(model: Model, routed: Routed):
    agent = Agent(model, model_settings={"max_tokens": MAX_TOKENS})
    asked: list[str] = []

    @agent.tool_plain
    def get_weather(location: str) -> str:
        """The current weather in a city."""
        asked.append(location)
        return f"18C and sunny in {location}"

    result = agent.run_sync(WEATHER_PROMPT)
    assert asked == ["Paris"]
    assert routed.reply in result.output
    kinds = [part.part_kind for message in result.all_messages() for part in message.parts]
    assert kinds.count("tool-call") == 1
    assert kinds.count("tool-return") == 1
