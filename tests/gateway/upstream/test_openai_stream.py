"""SSE parsing and the OpenAI pass-through stream: frames forwarded untouched except the
model rewrite (SPEC R-API-6), usage and in-band errors noticed, [DONE] held back."""

import orjson
import pytest

from gateway.upstream.providers.openai import StreamTranslator, build_request
from gateway.upstream.streaming import SSEParser


def _chunk(content: str, model: str = "llama-up") -> bytes:
    choice = {"index": 0, "delta": {"content": content}, "finish_reason": None}
    payload = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": model,
               "choices": [choice]}  # fmt: skip
    return b"data: " + orjson.dumps(payload) + b"\n\n"


USAGE = b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"llama-up","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}\n\n'  # noqa: E501
TRANSCRIPT = _chunk("Hel") + b": keep-alive\n\n" + _chunk("lo") + USAGE + b"data: [DONE]\n\n"


@pytest.mark.parametrize("step", [1, 5, 64, len(TRANSCRIPT)])
def test_sse_parser_finds_the_same_events_at_any_split(step):
    parser = SSEParser()
    events = []
    for i in range(0, len(TRANSCRIPT), step):
        events.extend(parser.feed(TRANSCRIPT[i : i + step]))
    assert [e.is_done for e in events] == [False, False, False, True]
    assert parser.pending == b""


def test_r_api_6_pass_through_rewrites_model_and_records_usage():
    translator = StreamTranslator(model="meta/llama-3.3-70b", upstream_model="llama-up")
    frames = []
    for i in range(0, len(TRANSCRIPT), 7):
        frames.extend(translator.feed(TRANSCRIPT[i : i + 7]))
    payloads = [orjson.loads(f.removeprefix(b"data: ")) for f in frames]
    assert [p["model"] for p in payloads] == ["meta/llama-3.3-70b"] * 3
    assert [p["choices"][0]["delta"]["content"] for p in payloads[:2]] == ["Hel", "lo"]
    assert translator.usage == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    assert translator.finished
    assert translator.error is None


def test_frames_pass_byte_for_byte_when_the_model_id_is_already_canonical():
    translator = StreamTranslator(model="llama-up", upstream_model="llama-up")
    assert translator.feed(_chunk("Hi")) == [_chunk("Hi")]


def test_in_band_error_before_content_is_recorded_not_forwarded():
    translator = StreamTranslator(model="m", upstream_model="m")
    frames = translator.feed(b'data: {"error": {"message": "overloaded", "type": "server"}}\n\n')
    assert frames == []
    assert translator.error == ("server", "overloaded")
    assert not translator.emitted_content


def test_malformed_first_frame_is_an_error():
    translator = StreamTranslator(model="m", upstream_model="m")
    assert translator.feed(b"data: {not json\n\n") == []
    assert translator.error is not None


def test_build_request_strips_gateway_fields_and_asks_for_usage():
    body = {"model": "meta/llama-3.3-70b", "messages": [], "provider": {"only": ["x"]},
            "models": ["a"], "residency": "eu-owned", "stream": True}  # fmt: skip
    headers, content = build_request(body, "llama-up", "sk-up", stream=True)
    sent = orjson.loads(content)
    assert sent == {"model": "llama-up", "messages": [], "stream": True,
                    "stream_options": {"include_usage": True}}  # fmt: skip
    assert headers["authorization"] == "Bearer sk-up"


def test_the_upstream_chunk_id_and_created_are_remembered_from_the_first_chunk():
    translator = StreamTranslator(model="meta/llama-3.3-70b", upstream_model="llama-up")
    translator.feed(TRANSCRIPT)
    assert (translator.chunk_id, translator.created) == ("c1", 1)
