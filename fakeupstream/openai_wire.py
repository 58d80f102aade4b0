"""OpenAI wire shapes: chat completions (JSON and SSE chunks), embeddings, models, errors.

Shapes follow what api.openai.com sends, including the optional final usage chunk
(`stream_options.include_usage`) and tool calls streamed as an id/name delta followed by
argument fragments.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from collections.abc import Sequence
from typing import Any

import orjson

from fakeupstream.replies import CHARS_PER_TOKEN, Reply, StreamPlan, render_each

DONE_EVENT = b"data: [DONE]\n\n"
EMBEDDING_DIMENSIONS = 8

# status -> (error.type, error.code), as OpenAI fills them for these statuses.
_ERROR_KINDS: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "permission_denied"),
    404: ("invalid_request_error", "model_not_found"),
    408: ("server_error", "timeout"),
    413: ("invalid_request_error", "request_too_large"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    502: ("server_error", "bad_gateway"),
    503: ("server_error", "service_unavailable"),
    504: ("server_error", "timeout"),
}


def sse(payload: Any) -> bytes:
    """One `data:` event."""
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def error_payload(status: int, message: str) -> dict[str, Any]:
    fallback = ("invalid_request_error", None) if status < 500 else ("server_error", None)
    error_type, code = _ERROR_KINDS.get(status, fallback)
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


def error_body(status: int, message: str) -> bytes:
    return orjson.dumps(error_payload(status, message))


def usage(reply: Reply) -> dict[str, Any]:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
    }


def completion_body(reply: Reply) -> bytes:
    """A non-stream `chat.completion`."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
    finish_reason = "stop"
    if reply.tool_call is not None:
        call = reply.tool_call
        function = {"name": call.name, "arguments": call.arguments_json}
        message["content"] = None
        message["tool_calls"] = [{"id": call.id, "type": "function", "function": function}]
        finish_reason = "tool_calls"
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}
    body = {**_envelope(reply, "chat.completion"), "choices": [choice], "usage": usage(reply)}
    return orjson.dumps(body)


def completion_stream(reply: Reply, include_usage: bool) -> StreamPlan:
    """A stream of `chat.completion.chunk` events ending in `data: [DONE]`.

    Text: one chunk per token (the first also carries the role), then a chunk with the
    finish reason. Tool call: a chunk with id, type, name and empty arguments, then one
    chunk per argument fragment, then the finish chunk.
    """
    envelope = _envelope(reply, "chat.completion.chunk")
    if include_usage:
        envelope["usage"] = None  # OpenAI sends null usage on every chunk but the last

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return sse({**envelope, "choices": [choice]})

    lead: list[bytes] = []
    if reply.tool_call is None:
        tokens = render_each(lambda token: chunk({"content": token}), reply.tokens)
        if tokens:
            tokens[0] = chunk({"role": "assistant", "content": reply.tokens[0]})
        else:
            lead = [chunk({"role": "assistant", "content": ""})]
        finish_reason = "stop"
    else:
        call = reply.tool_call
        start = {"index": 0, "id": call.id, "type": "function"}
        start["function"] = {"name": call.name, "arguments": ""}
        lead = [chunk({"role": "assistant", "content": None, "tool_calls": [start]})]
        tokens = render_each(
            lambda piece: chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
            call.fragments(),
        )
        finish_reason = "tool_calls"
    tail = [chunk({}, finish_reason)]
    if include_usage:
        tail.append(sse({**envelope, "choices": [], "usage": usage(reply)}))
    tail.append(DONE_EVENT)
    return StreamPlan(lead, tokens, tail)


def _envelope(reply: Reply, object_name: str) -> dict[str, Any]:
    return {
        "id": reply.id,
        "object": object_name,
        "created": reply.created_s,
        "model": reply.model,
        "system_fingerprint": "fp_fakeupstream",
    }


def embeddings_body(inputs: Sequence[Any], model: str, encoding_format: str) -> bytes:
    """Deterministic 8-dimension unit vectors derived from a hash of each input.

    `encoding_format: base64` (the openai SDK's default) gets little-endian float32 bytes
    in base64, as OpenAI sends them.
    """
    data = []
    for index, item in enumerate(inputs):
        vector = embedding_vector(item)
        embedding: Any = vector
        if encoding_format == "base64":
            packed = struct.pack(f"<{len(vector)}f", *vector)
            embedding = base64.b64encode(packed).decode()
        data.append({"object": "embedding", "index": index, "embedding": embedding})
    chars = sum(len(item) if isinstance(item, str) else len(orjson.dumps(item)) for item in inputs)
    tokens = max(chars // CHARS_PER_TOKEN, 1)
    body = {"object": "list", "data": data, "model": model}
    body["usage"] = {"prompt_tokens": tokens, "total_tokens": tokens}
    return orjson.dumps(body)


def embedding_vector(item: Any) -> list[float]:
    """A unit vector in [-1, 1]^8 from the sha256 of the input (its JSON when not a string)."""
    raw = item.encode() if isinstance(item, str) else orjson.dumps(item)
    digest = hashlib.sha256(raw).digest()
    values = [n / 2**31 - 1.0 for n in struct.unpack("<8I", digest)]
    norm = sum(v * v for v in values) ** 0.5 or 1.0
    return [v / norm for v in values]


def models_body(models: Sequence[str], created_s: int) -> bytes:
    """`GET /v1/models`: the served ids, or a single `*` when any model is accepted."""
    ids = list(models) or ["*"]
    data = [
        {"id": m, "object": "model", "created": created_s, "owned_by": "fakeupstream"} for m in ids
    ]
    return orjson.dumps({"object": "list", "data": data})
