"""A Messages request sent natively to an Anthropic-style upstream (SPEC R-API-9,
gateway/upstream/providers/anthropic_native.py): the client's body as it wrote it, less
Switchyard's fields, with a preset's defaults where it is silent; the upstream's message
and its event stream back as they came. Pure: no server, no database. The fake upstream's
wire module writes the upstream's side, so the events are the shapes Anthropic sends."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fakeupstream import anthropic_wire
from fakeupstream.replies import Reply, ToolCall
from fakeupstream.strict import check_messages
from gateway.upstream.providers.anthropic_native import (
    NativeStream,
    build_request,
    native_request,
    parse_message,
)
from gateway.upstream.streaming import SSEParser
from tests.gateway.claude_code_turn import CLAUDE_CODE_TURN as CLAUDE_CODE

MESSAGE_ID = "msg_00112233445566778899aabbccddeeff"
SLUG = "anthropic/claude-sonnet-4"
UPSTREAM = "claude-sonnet-4-20250514"
# What only Anthropic reads, which the chat translation loses: cache_control on the
# system, a message block and a tool; top_k; an earlier turn's signed thinking block.
CLAUDE_CODE_TURN: dict[str, Any] = {**CLAUDE_CODE, "model": SLUG, "top_k": 40}
IDS = {"completion_id": "chatcmpl-00112233445566778899aabbccddeeff", "created": 1}


def sent(body: dict[str, Any], headers: dict[str, str] | None = None,
         **defaults: Any) -> tuple[dict[str, str], dict[str, Any]]:  # fmt: skip
    native = native_request(body, headers or {}, message_id=MESSAGE_ID, **defaults)
    head, content = build_request(native, UPSTREAM, "sk-ant-test", stream=False)
    return head, orjson.loads(content)


def test_r_api_9_the_client_body_goes_upstream_as_written_with_the_upstream_model():
    # when
    _head, body = sent({**CLAUDE_CODE_TURN, "models": [SLUG, "meta/llama-3.3-70b"],
                        "routing": {"mode": "price"}, "session_id": "s1",
                        "residency": {"sovereignty": "eu-owned"}})  # fmt: skip
    # then everything the client wrote is there but Switchyard's fields, and the model
    # is the endpoint's own
    assert body == {**CLAUDE_CODE_TURN, "model": UPSTREAM, "stream": False}
    check_messages(body)  # and Anthropic would take it


def test_r_api_9_betas_travel_with_the_request_and_the_credential_is_the_endpoints():
    # when
    head, _body = sent(CLAUDE_CODE_TURN, {"anthropic-beta": "interleaved-thinking-2025-05-14",
                                          "authorization": "Bearer sk-sy-client",
                                          "anthropic-version": "2026-10-21"})  # fmt: skip
    # then the beta is forwarded, the client's own key and version are not
    assert head["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    assert head["x-api-key"] == "sk-ant-test"
    assert head["anthropic-version"] == "2023-06-01"
    assert "authorization" not in head


def test_r_api_9_account_fields_of_the_clients_own_anthropic_account_are_not_sent():
    # when
    _head, body = sent({**CLAUDE_CODE_TURN, "workspace_id": "wrkspc_1",
                        "billing_policy": "x", "fallbacks": [{"model": "claude-haiku"}],
                        "inference_geo": "global"})  # fmt: skip
    # then
    assert not {"workspace_id", "billing_policy", "fallbacks", "inference_geo"} & body.keys()


def test_r_pre_1_a_presets_defaults_fill_only_what_a_messages_request_leaves_out():
    # given a preset with a prompt and chat-named parameters
    defaults = {"default_prompt": "You answer ACME support questions.",
                "default_params": {"temperature": 0.2, "stop": "END", "max_tokens": 7,
                                   "presence_penalty": 0.5}}  # fmt: skip
    silent = {"model": SLUG, "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    # when the request is silent
    _head, body = sent(silent, **defaults)
    # then the prompt is the system and the parameters Messages has are set by its names;
    # one it lacks is not sent, and the request's own max_tokens stays
    assert body["system"] == "You answer ACME support questions."
    assert (body["temperature"], body["stop_sequences"], body["max_tokens"]) == (0.2, ["END"], 64)
    assert "presence_penalty" not in body
    # when it says its own
    _head, body = sent({**silent, "system": "Be terse.", "temperature": 1}, **defaults)
    # then they stay
    assert (body["system"], body["temperature"]) == ("Be terse.", 1)


def reply(*, tokens: tuple[str, ...] = ("Hel", "lo"), tool: ToolCall | None = None) -> Reply:
    return Reply(id="msg_fake_1", model=UPSTREAM, created_s=1, tokens=tokens, tool_call=tool,
                 prompt_tokens=30, cached_tokens=20)  # fmt: skip


def test_r_api_9_a_message_comes_back_as_sent_with_its_usage_read_for_the_cost():
    # when
    chat, message = parse_message(anthropic_wire.message_body(reply()), model=SLUG, **IDS)
    # then the message is the upstream's, and the chat reading counts cached tokens in
    assert message["content"] == [{"type": "text", "text": "Hello"}]
    assert message["usage"]["cache_read_input_tokens"] == 20
    assert chat["usage"]["prompt_tokens"] == 30
    assert chat["usage"]["completion_tokens"] == message["usage"]["output_tokens"]


@pytest.mark.parametrize("data", [b'{"type": "error", "error": {}}', b"[]", b"not json",
                                  b'{"type": "message", "content": "text"}'])  # fmt: skip
def test_r_api_9_an_answer_that_is_not_a_message_fails_the_attempt(data):
    with pytest.raises(ValueError):  # noqa: PT011 -- the executor's malformed-answer signal
        parse_message(data, model=SLUG, **IDS)


def stream_bytes(answer: Reply) -> bytes:
    plan = anthropic_wire.message_stream(answer)
    return b"".join([*plan.lead, *plan.tokens, *plan.tail])


def relayed(data: bytes, cuts: list[int] | None = None) -> tuple[NativeStream, list[bytes]]:
    stream = NativeStream(message_id=MESSAGE_ID, model=SLUG)
    marks = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts or [])})
    frames = [f for a, b in zip(marks, marks[1:], strict=False) for f in stream.feed(data[a:b])]
    return stream, frames


def events(frames: list[bytes]) -> list[dict[str, Any]]:
    return [orjson.loads(e.data) for e in SSEParser().feed(b"".join(frames))]


@given(cuts=st.lists(st.integers(min_value=0), max_size=12))
def test_r_api_9_a_native_stream_is_relayed_as_sent_however_the_wire_cuts_it(cuts):
    # given
    data = stream_bytes(reply())
    # when
    stream, frames = relayed(data, cuts)
    # then every event is the upstream's, but message_start names the gateway's message
    # id and the model's slug
    upstream, client = events([data]), events(frames)
    assert client[1:] == upstream[1:]
    assert client[0]["message"] == {**upstream[0]["message"], "id": MESSAGE_ID, "model": SLUG}
    assert stream.finished
    assert stream.error is None
    assert stream.emitted_content
    # and the usage is read for the cost: input from message_start, output from the end
    assert stream.usage is not None
    assert stream.usage["prompt_tokens"] == 30
    assert stream.usage["completion_tokens"] == upstream[-2]["usage"]["output_tokens"]
    assert stream.streamed_chars == len("Hello")


def test_r_api_9_a_tool_calls_input_counts_as_streamed_characters():
    # when
    call = ToolCall("toolu_1", "Read", '{"path":"a.py"}')
    stream, _frames = relayed(stream_bytes(reply(tokens=(), tool=call)))
    # then
    assert stream.streamed_chars == len('{"path":"a.py"}')


def test_r_api_9_nothing_is_committed_before_the_first_content_delta():
    # given the events up to the first block's start
    data = stream_bytes(reply())
    start = data.index(b"event: content_block_delta")
    # when
    stream, _frames = relayed(data[:start])
    # then an error now would still fail over
    assert not stream.emitted_content
    assert not stream.finished


def test_r_api_9_an_upstream_error_event_is_not_relayed_and_stops_the_stream():
    # given a stream that breaks with the upstream's own words after its first delta
    data = stream_bytes(reply())
    cut = data.index(b"event: content_block_stop")
    error = anthropic_wire.event("error", anthropic_wire.error_payload(529, "sk-ant-test leaked"))
    # when
    stream, frames = relayed(data[:cut] + error + data[cut:])
    # then the gateway holds the error (its relay ends the stream with its own words)
    assert stream.error == ("overloaded_error", "sk-ant-test leaked")
    assert all(b"leaked" not in frame for frame in frames)
    assert not any(event["type"] == "content_block_stop" for event in events(frames))


@pytest.mark.parametrize("bad", [b"event: ping\ndata: {nope\n\n", b"event: ping\ndata: []\n\n"])
def test_r_api_9_an_event_that_is_not_a_json_object_is_a_stream_error(bad):
    # when
    stream, frames = relayed(bad)
    # then
    assert stream.error is not None
    assert stream.error[0] == "api_error"
    assert frames == []
