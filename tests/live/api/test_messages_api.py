"""`POST /v1/messages` with the official `anthropic` SDK (SPEC R-API-9), through both kinds
of upstream: an OpenAI-style fake (`cheap`, llama) and an Anthropic-style one (`anthro`,
sonnet). Routing is the chat path's own, so the answer says which endpoint served it."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import pytest

LLAMA, SONNET = "meta/llama-3.3-70b", "anthropic/claude-sonnet-4"
BY_MODEL = [pytest.param(LLAMA, "cheap", id="openai-style"),
            pytest.param(SONNET, "anthro", id="anthropic")]  # fmt: skip
WEATHER_TOOL = {
    "name": "get_weather",
    "description": "The weather in a city",
    "input_schema": {"type": "object", "properties": {"location": {"type": "string"}},
                     "required": ["location"]},
}  # fmt: skip


def _client(live: Any, **auth: str) -> anthropic.Anthropic:
    credentials = auth or {"api_key": live.keys["acme"]}
    return anthropic.Anthropic(base_url=live.gateway.url, max_retries=0, timeout=20,
                               **credentials)  # type: ignore[arg-type]  # fmt: skip


def _no_upstream_call(live: Any) -> bool:
    return all(fake.stats()["requests"] == 0 for fake in live.fakes.values())


@pytest.mark.live
@pytest.mark.parametrize(("model", "fake"), BY_MODEL)
def test_r_api_9_a_message_is_answered_in_anthropics_shape(fresh_live, model, fake):
    # when
    raw = _client(fresh_live).messages.with_raw_response.create(
        model=model, max_tokens=64, messages=[{"role": "user", "content": "Say hello"}]
    )
    message = raw.parse()
    # then the SDK read an Anthropic message, and the headers say who served it
    assert message.type == "message"
    assert message.role == "assistant"
    assert message.content[0].type == "text"
    assert message.content[0].text
    assert message.stop_reason == "end_turn"
    assert message.usage.output_tokens > 0
    assert message.model == model
    assert raw.headers["x-switchyard-provider"] == fake
    assert fresh_live.fakes[fake].stats()["requests"] == 1
    # and the trace records the anthropic-version the SDK sent
    trace = httpx.get(
        f"{fresh_live.base_url}/traces/{raw.headers['x-switchyard-trace-id']}",
        headers={"Authorization": f"Bearer {fresh_live.keys['acme']}"},
    ).json()
    assert trace["operation"] == "messages"
    assert trace["decision"]["anthropic_version"] == raw.http_request.headers["anthropic-version"]


@pytest.mark.live
@pytest.mark.parametrize(("model", "fake"), BY_MODEL)
def test_r_api_9_a_stream_is_anthropics_event_sequence(fresh_live, model, fake):
    # when
    with _client(fresh_live).messages.stream(
        model=model, max_tokens=64, messages=[{"role": "user", "content": "Say hello"}]
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    # then the deltas make the final message's text, with its stop reason and usage
    assert text
    assert final.content[0].text == text
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens > 0
    assert fresh_live.fakes[fake].stats()["requests"] == 1


@pytest.mark.live
@pytest.mark.parametrize(("model", "fake"), BY_MODEL)
def test_r_api_9_the_tool_loop_runs_to_a_text_answer(fresh_live, model, fake):
    client = _client(fresh_live)
    question: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"}]
    # when the first turn calls the tool
    first = client.messages.create(model=model, max_tokens=128, messages=question,
                                   tools=[WEATHER_TOOL])  # type: ignore[list-item]  # fmt: skip
    calls = [block for block in first.content if block.type == "tool_use"]
    assert first.stop_reason == "tool_use"
    assert [(c.name, c.input) for c in calls] == [("get_weather", {"location": "Paris"})]
    # and its result is sent back
    answer = client.messages.create(
        model=model, max_tokens=128, tools=[WEATHER_TOOL],  # type: ignore[list-item]
        messages=[*question, {"role": "assistant", "content": first.content},
                  {"role": "user", "content": [{"type": "tool_result",
                                                "tool_use_id": calls[0].id,
                                                "content": "18 C and sunny"}]}],
    )  # fmt: skip
    # then the model answers in text
    assert answer.stop_reason == "end_turn"
    assert answer.content[0].type == "text"


@pytest.mark.live
def test_r_api_9_models_are_listed_in_anthropics_shape_when_the_request_names_a_version(
    fresh_live,
):
    # when (the SDK sends anthropic-version on every request)
    page = _client(fresh_live).models.list()
    # then
    ids = [model.id for model in page.data]
    assert SONNET in ids
    assert {model.type for model in page.data} == {"model"}
    assert page.first_id == ids[0]
    assert page.last_id == ids[-1]
    assert page.has_more is False


@pytest.mark.live
def test_r_api_9_the_workspace_key_is_taken_from_x_api_key_or_a_bearer_token(fresh_live):
    # when the key comes as `auth_token` (Authorization: Bearer), as Claude Code's
    # ANTHROPIC_AUTH_TOKEN sends it, and as `api_key` (x-api-key)
    key = fresh_live.keys["acme"]
    for client in (_client(fresh_live, auth_token=key), _client(fresh_live, api_key=key)):
        message = client.messages.create(
            model=LLAMA, max_tokens=16, messages=[{"role": "user", "content": "hi"}]
        )
        # then both are the workspace's key
        assert message.type == "message"


@pytest.mark.live
@pytest.mark.parametrize(
    ("call", "error", "kind"),
    [
        pytest.param({"model": "nope/none"}, anthropic.NotFoundError, "not_found_error",
                     id="unknown model"),
        pytest.param({"tools": [{"type": "web_search_20250305", "name": "web_search"}]},
                     anthropic.BadRequestError, "invalid_request_error", id="server tool"),
        pytest.param({"max_tokens": 0}, anthropic.BadRequestError, "invalid_request_error",
                     id="max_tokens 0"),
    ],
)  # fmt: skip
def test_r_api_9_errors_are_anthropics_envelope_before_any_upstream_call(
    fresh_live, call, error, kind
):
    # given
    request = {"model": LLAMA, "max_tokens": 16,
               "messages": [{"role": "user", "content": "hi"}], **call}  # fmt: skip
    # when
    with pytest.raises(error) as caught:
        _client(fresh_live).messages.create(**request)
    # then
    assert caught.value.body["type"] == "error"
    assert caught.value.body["error"]["type"] == kind
    assert _no_upstream_call(fresh_live)


@pytest.mark.live
def test_r_api_9_a_wrong_key_is_an_authentication_error(fresh_live):
    with pytest.raises(anthropic.AuthenticationError) as caught:
        _client(fresh_live, api_key="sk-sy-nope-nope").messages.create(
            model=LLAMA, max_tokens=16, messages=[{"role": "user", "content": "hi"}]
        )
    assert caught.value.body["error"]["type"] == "authentication_error"


@pytest.mark.live
def test_r_api_9_thinking_sends_a_tiered_alias_to_its_hard_tier(fresh_live):
    # given the acme workspace's tiered alias `normal` (easy: llama, hard: sonnet)
    client = _client(fresh_live)
    easy = client.messages.with_raw_response.create(
        model="normal", max_tokens=2048, messages=[{"role": "user", "content": "hi"}]
    )
    # when the same request asks for extended thinking (SPEC R-TIER-2)
    hard = client.messages.with_raw_response.create(
        model="normal", max_tokens=2048, messages=[{"role": "user", "content": "hi"}],
        thinking={"type": "enabled", "budget_tokens": 1024},
    )  # fmt: skip
    # then the tier verdict moved it to the hard tier's model, on the Anthropic upstream
    assert easy.headers["x-switchyard-tier"] == "easy"
    assert easy.headers["x-switchyard-provider"] in ("cheap", "pricey")
    assert hard.headers["x-switchyard-tier"] == "hard"
    assert hard.headers["x-switchyard-provider"] == "anthro"


@pytest.mark.live
@pytest.mark.parametrize(("model", "fake"), BY_MODEL)
def test_r_api_9_a_claude_code_shaped_request_streams_through(fresh_live, model, fake):
    # given the request shape Claude Code sends (docs.claude.com, "LLM gateway" and prompt
    # caching pages): system blocks with cache_control, tools, metadata.user_id, streaming
    system = [
        {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
        {"type": "text", "text": "Follow the repository's conventions.",
         "cache_control": {"type": "ephemeral"}},
    ]  # fmt: skip
    # when
    with _client(fresh_live).messages.stream(
        model=model, max_tokens=4096, system=system,  # type: ignore[arg-type]
        tools=[WEATHER_TOOL],  # type: ignore[list-item]
        metadata={"user_id": "user_abc_account_def_session_0123"},
        messages=[{"role": "user",
                   "content": [{"type": "text", "text": "Say hello",
                                "cache_control": {"type": "ephemeral"}}]}],
    ) as stream:  # fmt: skip
        final = stream.get_final_message()
    # then it was served by the model's upstream, as an Anthropic message
    assert final.content[0].type == "text"
    assert final.stop_reason == "end_turn"
    assert fresh_live.fakes[fake].stats()["requests"] == 1


@pytest.mark.live
def test_r_bey_6_the_anthropic_shaped_409_lists_each_excluded_endpoint_with_its_reason(
    fresh_live,
):
    # given a workspace allowing EU-owned endpoints only, and llama served by none
    client = _client(fresh_live, api_key=fresh_live.keys["euonly"])
    # when a Messages request names llama
    with pytest.raises(anthropic.APIStatusError) as caught:
        client.messages.create(model=LLAMA, max_tokens=16,
                               messages=[{"role": "user", "content": "hi"}])  # fmt: skip
    # then the 409 in Anthropic's envelope carries the same exclusions as the OpenAI shape
    assert caught.value.status_code == 409
    error = caught.value.body["error"]  # type: ignore[index]
    assert error["type"] == "invalid_request_error"
    assert error["message"].endswith("Residency is never relaxed silently.")
    assert {(x["endpoint"], x["reason"]) for x in error["excluded"]} == {
        ("cheap-llama", "sovereignty_not_allowed"),
        ("pricey-llama", "sovereignty_not_allowed"),
    }
    assert all(fake.stats()["requests"] == 0 for fake in fresh_live.fakes.values())
