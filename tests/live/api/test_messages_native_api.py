"""`POST /v1/messages` to an Anthropic-style upstream, called natively (SPEC R-API-9): the
official `anthropic` SDK against the gateway, whose `anthro` fake holds every request to
Anthropic's Messages schema. What only Anthropic reads (cache_control, top_k, an earlier
turn's thinking blocks, betas) reaches it; its answer and its stream come back as it sent
them; failover to an OpenAI-style upstream within the request still answers in
Anthropic's shape."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest

from tests.gateway.claude_code_turn import CLAUDE_CODE_TURN, READ_TOOL

pytestmark = pytest.mark.live

SONNET, LLAMA = "anthropic/claude-sonnet-4", "meta/llama-3.3-70b"
BETA = "interleaved-thinking-2025-05-14"
# `top_k`, which this SDK's typed methods no longer take, goes as an extra field.
TOP_K = {"top_k": 40}


def _client(live: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=live.gateway.url, api_key=live.keys["acme"],
                               max_retries=0, timeout=20)  # fmt: skip


def _sent(live: Any) -> dict[str, Any]:
    return live.fakes["anthro"].stats()["last_request"]  # type: ignore[no-any-return]


def _trace(live: Any, trace_id: str) -> dict[str, Any]:
    """The request's trace, once written (a stream's when its relay has ended)."""
    return live.stored_trace(trace_id, live.keys["acme"])  # type: ignore[no-any-return]


def test_r_api_9_the_anthropic_upstream_gets_the_request_as_the_client_wrote_it(fresh_live):
    # when
    raw = _client(fresh_live).messages.with_raw_response.create(
        model=SONNET, **CLAUDE_CODE_TURN,
        extra_headers={"anthropic-beta": BETA},
        extra_body={**TOP_K, "models": [SONNET, LLAMA], "routing": {"mode": "price"}},
    )  # fmt: skip
    message = raw.parse()
    # then it sent everything as written — thinking history, cache_control, top_k — with
    # the endpoint's model, the beta header, and without Switchyard's fields
    sent = _sent(fresh_live)
    assert raw.headers["x-switchyard-provider"] == "anthro"
    assert sent["path"] == "/v1/messages"
    assert sent["body"] == {**CLAUDE_CODE_TURN, **TOP_K, "model": sent["body"]["model"],
                            "stream": False}  # fmt: skip
    assert sent["body"]["model"] != SONNET  # the endpoint's upstream model
    assert sent["headers"]["anthropic-beta"] == BETA
    # and the answer is the upstream's message, under the gateway's id
    assert message.id == f"msg_{raw.headers['x-switchyard-trace-id'].replace('-', '')}"
    assert message.model == SONNET
    assert message.content[0].type in ("text", "tool_use")
    assert message.usage.input_tokens > 0


def test_r_api_9_a_native_stream_reaches_the_sdk_and_is_costed(fresh_live):
    # when
    with _client(fresh_live).messages.stream(model=SONNET, **CLAUDE_CODE_TURN,
                                             extra_body=TOP_K) as stream:  # fmt: skip
        final = stream.get_final_message()
        trace_id = stream.response.headers["x-switchyard-trace-id"]
    # then the SDK read the upstream's own stream, the body asked for it as written
    sent = _sent(fresh_live)["body"]
    assert sent["stream"] is True
    assert sent["messages"][1]["content"][0]["type"] == "thinking"
    assert sent["top_k"] == 40
    assert final.stop_reason in ("end_turn", "tool_use")
    assert final.usage.output_tokens > 0
    # and the trace costs it by the usage the stream reported
    trace = _trace(fresh_live, trace_id)
    assert trace["provider"] == "anthro"
    assert trace["usage"]["completion_tokens"] == final.usage.output_tokens
    assert trace["cost_usd"] > 0


def test_r_api_9_a_failed_anthropic_upstream_fails_over_to_an_openai_style_one(fresh_live):
    # given the Anthropic upstream failing once
    fresh_live.fakes["anthro"].set_faults(["status:503"])
    # when the request names a second model served OpenAI-style
    raw = _client(fresh_live).messages.with_raw_response.create(
        model=SONNET, max_tokens=64, messages=[{"role": "user", "content": "Say hello"}],
        extra_body={"models": [SONNET, LLAMA]},
    )  # fmt: skip
    # then the second answered, translated into Anthropic's shape
    message = raw.parse()
    assert raw.headers["x-switchyard-provider"] in ("cheap", "pricey")
    attempts = json.loads(raw.headers["x-switchyard-attempts"])
    assert [(a["provider"], a["http_status"]) for a in attempts][0] == ("anthro", 503)
    assert len(attempts) == 2
    assert message.type == "message"
    assert message.content[0].type == "text"


def test_r_api_9_a_native_stream_that_breaks_ends_with_the_gateways_error_event(fresh_live):
    # given the Anthropic upstream dropping its stream after two deltas
    fresh_live.fakes["anthro"].set_faults(["drop_mid_stream:2"])
    # when
    with (
        pytest.raises(anthropic.APIStatusError) as broke,  # noqa: PT012 -- raised mid-stream
        _client(fresh_live).messages.stream(
            model=SONNET, max_tokens=64, messages=[{"role": "user", "content": "Say hello"}]
        ) as stream,
    ):
        for _text in stream.text_stream:
            pass
    # then the client got an `error` event in the gateway's words
    assert broke.value.body == {"type": "error", "error": {
        "type": "api_error", "message": "upstream stream broke"}}  # fmt: skip


def test_r_api_9_the_upstreams_refusal_of_a_native_request_is_its_answer(fresh_live):
    # when the request breaks a rule only Anthropic checks (a tool_result for no tool_use)
    with pytest.raises(anthropic.BadRequestError) as refused:
        _client(fresh_live).messages.create(
            model=SONNET, max_tokens=64, tools=[READ_TOOL],  # type: ignore[list-item]
            messages=[{"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_404", "content": "x"}]}],
        )  # fmt: skip
    # then it is a 400 in Anthropic's envelope quoting the upstream, after one attempt
    assert refused.value.body["type"] == "error"  # type: ignore[index]
    assert refused.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert "toolu_404" in refused.value.message
    assert fresh_live.fakes["anthro"].stats()["requests"] == 1


@pytest.mark.parametrize("stream", [False, True], ids=["message", "stream"])
def test_r_api_6_a_tiered_alias_answered_natively_names_the_model_that_answered(fresh_live, stream):
    # given the tiered alias `normal`, whose hard tier is served by the Anthropic upstream
    request = {
        "model": "normal", "max_tokens": 64,
        "messages": [{"role": "user", "content": "Think hard: what is the root cause?"}],
        "extra_headers": {"X-Switchyard-Tier": "hard"},
    }  # fmt: skip
    # when a request is sent to the hard tier
    if stream:
        with _client(fresh_live).messages.stream(**request) as events:  # type: ignore[arg-type]
            message = events.get_final_message()
            headers = events.response.headers
    else:
        raw = _client(fresh_live).messages.with_raw_response.create(**request)  # type: ignore[call-overload]
        message, headers = raw.parse(), raw.headers
    # then it was answered natively, and the message names the model that answered
    assert headers["x-switchyard-provider"] == "anthro"
    assert headers["x-switchyard-tier"] == "hard"
    assert message.model == headers["x-switchyard-model"] == SONNET
