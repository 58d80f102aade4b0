"""`POST /v1/messages/count_tokens` with the official `anthropic` SDK (SPEC R-API-9): routed
as the Messages request would be, counted by the Anthropic-style upstream (`anthro`,
sonnet) that request would try first, else estimated locally (`cheap`, llama, is
OpenAI-style) — and estimated too when that upstream does not count; refused as the
Messages request is, and with the upstream's own 400 for a body it refuses."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

import anthropic
import pytest

from fakeupstream.replies import estimate_prompt_tokens
from gateway.api.openapi import SCHEMA
from tests.live.installation import UPSTREAM_KEY, Live

pytestmark = pytest.mark.live

LLAMA, SONNET, TINY = "meta/llama-3.3-70b", "anthropic/claude-sonnet-4", "acme/tiny"
SONNET_UPSTREAM = (
    "claude-sonnet-4-20250514"  # anthro-sonnet's upstream_model (tests/live/installation.py)
)
COUNT_PATH = "/v1/messages/count_tokens"
SYSTEM = "You are a terse assistant."
MESSAGES: list[Any] = [{"role": "user", "content": "How many tokens is this question, please?"}]
WEATHER_TOOL: Any = {
    "name": "get_weather",
    "description": "The weather in a city",
    "input_schema": {"type": "object", "properties": {"location": {"type": "string"}}},
}
# Switchyard's own routing fields, which route the count but are never sent upstream.
SWITCHYARD_FIELDS = {"models": [SONNET, LLAMA], "provider": {"only": ["anthro", "cheap"]},
                     "routing": {"mode": "price"}, "residency": "any",
                     "session_id": "count-session-1"}  # fmt: skip
PRESET_PROMPT = "You answer questions about counting."


def _client(live: Live, key: str | None = None) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=live.gateway.url, api_key=key or live.keys["acme"],
                               max_retries=0, timeout=20)  # fmt: skip


def _upstream_calls(live: Live) -> dict[str, dict[str, int]]:
    """Each fake's requests by path, for the fakes that had any."""
    calls = {name: fake.stats()["by_path"] for name, fake in live.fakes.items()}
    return {name: paths for name, paths in calls.items() if paths}


def _estimate(live: Live, **request: Any) -> int:
    """The local estimate of this request's prompt: what llama's count answers."""
    raw = _client(live).messages.with_raw_response.count_tokens(model=LLAMA, **request)
    assert raw.headers["x-switchyard-token-count"] == "estimated"
    return raw.parse().input_tokens


@pytest.fixture(scope="module")
def preset_key(live: Live) -> str:
    """A key of workspace `counting` whose preset allows Anthropic models only and gives
    a default prompt."""
    path = live.log_path.parent / f"counting-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(f"""\
workspaces:
  - slug: counting
    policy: {{max_attempts: 3, routing_mode: price}}
    presets:
      - {{slug: claude-only, allowed_models: ["anthropic/*"], default_prompt: "{PRESET_PROMPT}"}}
    keys:
      - {{name: counter, preset: claude-only}}
""")  # fmt: skip
    live.manage("apply", "-f", str(path))
    return live.new_key("counting", "counter")


def test_r_api_9_count_tokens_on_an_anthropic_endpoint_is_the_upstreams_count(fresh_live):
    # when
    raw = _client(fresh_live).messages.with_raw_response.count_tokens(
        model=SONNET, system=SYSTEM, messages=MESSAGES,
        tools=[WEATHER_TOOL],
        extra_headers={"anthropic-beta": "token-counting-2024-11-01"},
        extra_body=SWITCHYARD_FIELDS,
    )  # fmt: skip
    # then the anthro upstream was asked once, for the client's prompt under its own model
    # id, with the managed credential and the client's beta, without Switchyard's fields
    assert _upstream_calls(fresh_live) == {"anthro": {COUNT_PATH: 1}}
    sent = fresh_live.fakes["anthro"].stats()["last_request"]
    assert sent["body"] == {"model": SONNET_UPSTREAM, "system": SYSTEM, "messages": MESSAGES,
                            "tools": [WEATHER_TOOL]}  # fmt: skip
    assert sent["headers"]["x-api-key"] == hashlib.sha256(UPSTREAM_KEY.encode()).hexdigest()
    assert sent["headers"]["anthropic-version"] == "2023-06-01"
    assert sent["headers"]["anthropic-beta"] == "token-counting-2024-11-01"
    # and its count is the answer, which says who counted it, where
    counted = raw.parse().input_tokens
    assert counted == estimate_prompt_tokens(MESSAGES, SYSTEM)
    assert counted != _estimate(fresh_live, system=SYSTEM, messages=MESSAGES)
    assert raw.headers["x-switchyard-token-count"] == "upstream"
    assert raw.headers["x-switchyard-model"] == SONNET
    assert raw.headers["x-switchyard-provider"] == "anthro"
    assert raw.headers["x-switchyard-endpoint"] == "anthro-sonnet"
    # and those are the headers the API description names
    documented = SCHEMA["paths"][COUNT_PATH]["post"]["responses"]["200"]["headers"]
    assert {name.lower() for name in documented} <= set(raw.headers)


def test_r_api_9_count_tokens_is_estimated_without_an_upstream_call(fresh_live):
    # when (llama's endpoints are OpenAI-style: none has Anthropic's count endpoint)
    raw = _client(fresh_live).messages.with_raw_response.count_tokens(
        model=LLAMA, messages=[{"role": "user", "content": "How many tokens is this? " * 40}]
    )
    short = _client(fresh_live).messages.count_tokens(
        model=LLAMA, messages=[{"role": "user", "content": "Hi"}]
    )
    # then
    assert raw.parse().input_tokens > short.input_tokens > 0
    assert raw.headers["x-switchyard-token-count"] == "estimated"
    assert raw.headers["x-switchyard-endpoint"] == "cheap-llama"  # price routing: cheapest
    assert _upstream_calls(fresh_live) == {}


def test_r_api_9_count_tokens_takes_extended_thinking_without_max_tokens(fresh_live):
    # given Claude Code's count of a turn with thinking on (the count endpoint takes no
    # max_tokens, so none can be above the budget)
    thinking = {"type": "enabled", "budget_tokens": 4096}
    # when
    raw = _client(fresh_live).messages.with_raw_response.count_tokens(
        model=SONNET, messages=[{"role": "user", "content": "Hi"}], thinking=thinking
    )
    # then the upstream counted it as sent, with no max_tokens
    sent = fresh_live.fakes["anthro"].stats()["last_request"]["body"]
    assert sent == {"model": SONNET_UPSTREAM, "thinking": thinking,
                    "messages": [{"role": "user", "content": "Hi"}]}  # fmt: skip
    assert raw.headers["x-switchyard-token-count"] == "upstream"
    assert raw.parse().input_tokens > 0


@pytest.mark.parametrize(
    "fault",
    ["status:503", "status:529", "status:429", "status:401", "status:403", "status:404",
     "status:302", "malformed", "error_event", "drop_mid_stream:0", "disconnect", "hang"],
)  # fmt: skip
def test_r_api_9_count_tokens_is_estimated_when_the_upstream_does_not_count(fresh_live, fault):
    # given
    estimate = _estimate(fresh_live, system=SYSTEM, messages=MESSAGES)
    fresh_live.fakes["anthro"].set_faults([fault])
    # when
    raw = _client(fresh_live).messages.with_raw_response.count_tokens(
        model=SONNET, system=SYSTEM, messages=MESSAGES
    )
    # then it was asked, and the answer is still a count: the local estimate
    assert _upstream_calls(fresh_live) == {"anthro": {COUNT_PATH: 1}}
    assert raw.status_code == 200
    assert raw.parse().input_tokens == estimate
    assert raw.headers["x-switchyard-token-count"] == "estimated"
    assert raw.headers["x-switchyard-endpoint"] == "anthro-sonnet"


@pytest.mark.parametrize(
    ("status", "error", "kind"),
    [(400, anthropic.BadRequestError, "invalid_request_error"),
     (413, anthropic.APIStatusError, "request_too_large")],
)  # fmt: skip
def test_r_api_9_a_count_the_upstream_refuses_is_its_error_in_anthropics_envelope(
    fresh_live, status, error, kind
):
    # given an upstream that refuses the body, quoting the credential and the prompt back
    fresh_live.fakes["anthro"].set_faults([f"status:{status}"])
    fresh_live.fakes["anthro"].set_echo(True)
    # when
    with pytest.raises(error) as refused:
        _client(fresh_live).messages.count_tokens(model=SONNET, messages=MESSAGES)
    # then the client gets the upstream's status and words, without the credential
    assert refused.value.status_code == status
    assert refused.value.body["type"] == "error"
    assert refused.value.body["error"]["type"] == kind
    message = refused.value.body["error"]["message"]
    assert message.startswith(f"The upstream rejected the request (HTTP {status}): "
                              f"Injected fault: status {status}")  # fmt: skip
    assert "[redacted]" in message
    assert UPSTREAM_KEY not in message
    assert _upstream_calls(fresh_live) == {"anthro": {COUNT_PATH: 1}}


@pytest.mark.parametrize(
    ("workspace", "model"),
    [
        pytest.param("acme", "nope/none", id="unknown model"),
        pytest.param("euonly", SONNET, id="residency policy"),
        pytest.param("counting", LLAMA, id="preset"),
    ],
)
def test_r_api_9_a_count_is_refused_as_its_messages_request_is(
    fresh_live, preset_key, workspace, model
):
    # given
    key = preset_key if workspace == "counting" else fresh_live.keys[workspace]
    client = _client(fresh_live, key)
    # when
    with pytest.raises(anthropic.APIStatusError) as counted:
        client.messages.count_tokens(model=model, messages=MESSAGES)
    with pytest.raises(anthropic.APIStatusError) as answered:
        client.messages.create(model=model, max_tokens=16, messages=MESSAGES)
    # then the same error, in Anthropic's envelope, and no upstream was asked
    assert counted.value.status_code == answered.value.status_code
    assert counted.value.status_code in (403, 404, 409)
    assert counted.value.body == answered.value.body
    assert counted.value.body["type"] == "error"
    assert _upstream_calls(fresh_live) == {}


def test_r_api_9_the_upstream_counts_the_presets_prompt_where_the_request_has_none(
    fresh_live, preset_key
):
    # when
    _client(fresh_live, preset_key).messages.count_tokens(model=SONNET, messages=MESSAGES)
    # then
    sent = fresh_live.fakes["anthro"].stats()["last_request"]["body"]
    assert sent == {"model": SONNET_UPSTREAM, "system": PRESET_PROMPT, "messages": MESSAGES}


def test_r_api_9_a_prompt_too_long_for_every_endpoint_is_still_counted(fresh_live):
    # given acme/tiny's 64-token window, which a Messages request of this prompt exceeds
    messages = [{"role": "user", "content": "Count me. " * 100}]
    with pytest.raises(anthropic.BadRequestError):
        _client(fresh_live).messages.create(model=TINY, max_tokens=16, messages=messages)
    # when
    raw = _client(fresh_live).messages.with_raw_response.count_tokens(
        model=TINY,
        messages=messages,
    )
    # then
    assert raw.parse().input_tokens > 64
    assert raw.headers["x-switchyard-token-count"] == "estimated"
    assert "x-switchyard-endpoint" not in raw.headers
    assert _upstream_calls(fresh_live) == {}
