"""The least shape of an upstream's answer, per dialect (SPEC D-18; the adapters in
gateway/upstream/providers): valid JSON short of it — a chat completion without choices,
embeddings without data, a message without content, a stream frame that is not a chunk —
is a malformed answer (ValueError, or the translator's error), which the executor fails
over. The fake upstream's wire modules write the good shapes. Pure."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from fakeupstream import anthropic_wire, openai_wire
from fakeupstream.replies import Reply
from gateway.upstream.providers import anthropic, anthropic_native, openai

IDS = {"completion_id": "chatcmpl-1", "created": 1}
REPLY = Reply(id="r-1", model="up", created_s=1, tokens=("Hi",), tool_call=None,
              prompt_tokens=3, cached_tokens=0)  # fmt: skip
COMPLETION = orjson.loads(openai_wire.completion_body(REPLY))
EMBEDDINGS = orjson.loads(openai_wire.embeddings_body(["a"], "e", "float"))
MESSAGE = orjson.loads(anthropic_wire.message_body(REPLY))


def _without(answer: dict[str, Any], key: str, value: Any = ...) -> bytes:
    changed = {k: v for k, v in answer.items() if k != key}
    if value is not ...:
        changed[key] = value
    return orjson.dumps(changed)


def test_d_18_well_formed_answers_pass_in_every_dialect():
    assert openai.parse_response(orjson.dumps(COMPLETION), model="m")["model"] == "m"
    assert openai.parse_embeddings(orjson.dumps(EMBEDDINGS), model="m")["data"]
    assert anthropic.parse_response(orjson.dumps(MESSAGE), model="m", **IDS)["choices"]
    # a message may have nothing to say, and still be an answer
    assert anthropic.parse_response(_without(MESSAGE, "content", []), model="m", **IDS)


@pytest.mark.parametrize(
    "data",
    [_without(COMPLETION, "choices"), _without(COMPLETION, "choices", []),
     _without(COMPLETION, "choices", {"0": {}}), _without(COMPLETION, "choices", [{"index": 0}]),
     b'{"id": "x", "object": "chat.completion"}'],
    ids=["no choices", "empty choices", "choices not a list", "a choice without a message",
         "the issue's body"],
)  # fmt: skip
def test_d_18_a_chat_completion_without_its_choices_is_malformed(data):
    with pytest.raises(ValueError, match="chat completion"):
        openai.parse_response(data, model="m")


@pytest.mark.parametrize(
    "data",
    [_without(EMBEDDINGS, "data"), _without(EMBEDDINGS, "data", []),
     _without(EMBEDDINGS, "data", [{"index": 0}])],
    ids=["no data", "empty data", "an item without an embedding"],
)  # fmt: skip
def test_d_18_embeddings_without_their_vectors_are_malformed(data):
    with pytest.raises(ValueError, match="embeddings"):
        openai.parse_embeddings(data, model="m")


@pytest.mark.parametrize(
    "data",
    [_without(MESSAGE, "content"), _without(MESSAGE, "content", "Hi"),
     _without(MESSAGE, "type", "completion")],
    ids=["no content", "content not a list", "not a message"],
)  # fmt: skip
@pytest.mark.parametrize("native", [False, True], ids=["translated", "native"])
def test_d_18_a_message_without_its_content_is_malformed(data, native):
    parse = anthropic_native.parse_message if native else anthropic.parse_response
    with pytest.raises(ValueError, match="message"):
        parse(data, model="m", **IDS)


@pytest.mark.parametrize(
    "frame",
    [b'data: {"id": "x", "object": "chat.completion.chunk"}\n\n', b"data: [1, 2]\n\n",
     b'data: {"id": "x", "choices": {"0": {}}}\n\n'],
    ids=["no choices", "not an object", "choices not a list"],
)  # fmt: skip
def test_d_18_a_first_stream_frame_that_is_not_a_chunk_fails_the_attempt(frame):
    # given an OpenAI-style stream whose first frame is JSON, but not a chunk
    translator = openai.StreamTranslator(model="m", upstream_model="m")
    # when
    forwarded = translator.feed(frame)
    # then nothing reached the client, and the attempt has failed before its commit point
    assert forwarded == []
    assert not translator.emitted_content
    assert translator.error == ("malformed_response", "upstream sent a frame that is not a chunk")


def test_d_18_a_usage_chunk_is_a_chunk():
    translator = openai.StreamTranslator(model="m", upstream_model="m")
    usage = {"id": "x", "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
    assert translator.feed(b"data: " + orjson.dumps(usage) + b"\n\n")
    assert translator.error is None
