"""`litellm` as a client of the gateway: the `openai/` prefix selects its OpenAI-compatible
provider, `api_base` points it at the gateway and `api_key` carries the workspace key.
Completion, streaming, `acompletion` (plain and streamed), tools and `response_format`, once
per upstream API style.

LiteLLM fetches its model cost map (and Anthropic beta-header config) from the internet
when it is imported unless told not to, so the switches are set before the import, and the
import itself runs under `loopback_only()`."""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest

from tests.live.clients.conftest import (
    CHAT_WEATHER_TOOL,
    EMBEDDING,
    FAKE_PERSON,
    MAX_TOKENS,
    PAUSE_PROMPT,
    WEATHER_ARGUMENTS,
    WEATHER_PROMPT,
    Person,
    Routed,
    loopback_only,
)
from tests.live.installation import Live

# Before the import: the bundled cost map instead of a download from GitHub, and offline
# mode for every other catalog or check LiteLLM would fetch on its own.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["LITELLM_OFFLINE_MODE"] = "true"
os.environ["LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS"] = "True"
with loopback_only() as _attempts_at_import:
    import litellm
assert _attempts_at_import == [], _attempts_at_import

pytestmark = [
    pytest.mark.live,
    # LiteLLM's own TypedDicts, built into pydantic models on first use: not ours to fix
    pytest.mark.filterwarnings("ignore:.*`ReadOnly` qualifier:UserWarning"),
]

litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banner on errors
# No logging callbacks (none are registered by default; LiteLLM's `telemetry` package is
# its proxy's, consent-gated and off by default, and the SDK path never imports it).
litellm.success_callback = []
litellm.failure_callback = []
litellm.callbacks = []


def _options(gateway: Live, key: str, routed: Routed) -> dict[str, Any]:
    return {
        "model": f"openai/{routed.model}",  # `openai/`: LiteLLM's OpenAI-compatible provider
        "api_base": gateway.base_url,
        "api_key": key,
        "num_retries": 0,
        "timeout": 20,
        "max_tokens": MAX_TOKENS,
    }


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def test_completion(gateway: Live, key: str, routed: Routed):
    response = litellm.completion(**_options(gateway, key, routed), messages=_user(PAUSE_PROMPT))
    assert routed.reply in response.choices[0].message.content
    assert response.model == routed.model
    assert response.usage.completion_tokens > 0


def test_streaming(gateway: Live, key: str, routed: Routed):
    stream = litellm.completion(
        **_options(gateway, key, routed), messages=_user(PAUSE_PROMPT), stream=True
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert routed.reply in text
    assert {c.model for c in chunks} == {routed.model}
    rebuilt = litellm.stream_chunk_builder(chunks, messages=_user(PAUSE_PROMPT))
    assert rebuilt.choices[0].message.content == text


def test_acompletion_plain_and_streamed(gateway: Live, key: str, routed: Routed):
    async def run() -> tuple[Any, str]:
        options = _options(gateway, key, routed)
        response = await litellm.acompletion(**options, messages=_user(PAUSE_PROMPT))
        stream = await litellm.acompletion(**options, messages=_user(PAUSE_PROMPT), stream=True)
        text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        return response, text

    response, streamed = asyncio.run(run())
    assert routed.reply in response.choices[0].message.content
    assert response.model == routed.model
    assert routed.reply in streamed


def test_a_tool_call_and_the_tool_loop(gateway: Live, key: str, routed: Routed):
    options = {**_options(gateway, key, routed), "tools": [CHAT_WEATHER_TOOL]}
    messages: list[Any] = _user(WEATHER_PROMPT)
    first = litellm.completion(**options, messages=messages)
    assert first.choices[0].finish_reason == "tool_calls"
    [call] = first.choices[0].message.tool_calls
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == WEATHER_ARGUMENTS
    messages += [first.choices[0].message, {"role": "tool", "tool_call_id": call.id,
                                            "content": "18C and sunny"}]  # fmt: skip
    second = litellm.completion(**options, messages=messages)
    assert not second.choices[0].message.tool_calls
    assert routed.reply in second.choices[0].message.content


def test_response_format_with_a_pydantic_model(gateway: Live, key: str, routed: Routed):
    response = litellm.completion(
        **_options(gateway, key, routed),
        messages=_user("Who wrote the first program?"),
        response_format=Person,
    )
    assert Person.model_validate_json(response.choices[0].message.content) == FAKE_PERSON


def test_a_field_anthropic_cannot_express_is_a_bad_request(gateway: Live, key: str, routed: Routed):
    options = {**_options(gateway, key, routed), "presence_penalty": 0.5}
    if routed.fake == "anthro":  # refused by the Anthropic adapter, not lost
        with pytest.raises(litellm.BadRequestError) as caught:
            litellm.completion(**options, messages=_user(PAUSE_PROMPT))
        assert "presence_penalty" in str(caught.value)
        assert caught.value.status_code == 400
    else:
        response = litellm.completion(**options, messages=_user(PAUSE_PROMPT))
        assert routed.reply in response.choices[0].message.content


def test_embedding_on_the_openai_style_upstream(gateway: Live, key: str):
    response = litellm.embedding(
        model=f"openai/{EMBEDDING}", api_base=gateway.base_url, api_key=key, input=["hello"]
    )
    [item] = response.data
    assert len(item["embedding"]) == 8  # the fake's dimension
    assert response.model == EMBEDDING
