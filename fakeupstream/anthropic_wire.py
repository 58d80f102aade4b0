"""Anthropic Messages API wire shapes: messages (JSON and the SSE event sequence), errors.

The stream follows api.anthropic.com: message_start, content_block_start, ping, one
content_block_delta per token (text_delta, or input_json_delta for tool use),
content_block_stop, message_delta (stop_reason and output tokens), message_stop.
Usage follows Anthropic's accounting: `input_tokens` excludes the tokens read from the
prompt cache, which are reported apart in `cache_read_input_tokens`.
"""

from __future__ import annotations

from typing import Any

import orjson

from fakeupstream.replies import Reply, StreamPlan, render_each

# status -> error.type, as Anthropic names them.
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "overloaded_error",
    529: "overloaded_error",
}


def event(name: str, payload: Any) -> bytes:
    """One named SSE event, as Anthropic frames them (`event:` line, then `data:`)."""
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


def error_payload(status: int, message: str) -> dict[str, Any]:
    fallback = "invalid_request_error" if status < 500 else "api_error"
    return {
        "type": "error",
        "error": {"type": _ERROR_TYPES.get(status, fallback), "message": message},
    }


def error_body(status: int, message: str) -> bytes:
    return orjson.dumps(error_payload(status, message))


def usage(reply: Reply, output_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": reply.prompt_tokens - reply.cached_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": reply.cached_tokens,
        "output_tokens": output_tokens,
    }


def message_body(reply: Reply) -> bytes:
    """A non-stream `message`."""
    message = _message(reply)
    message["content"] = [_full_block(reply)]
    message["stop_reason"] = _stop_reason(reply)
    message["usage"] = usage(reply, reply.completion_tokens)
    return orjson.dumps(message)


def message_stream(reply: Reply) -> StreamPlan:
    """The Messages stream event sequence for the reply."""
    start = _message(reply)
    start["usage"] = usage(reply, 1)  # Anthropic reports a provisional output count here
    lead = [
        event("message_start", {"type": "message_start", "message": start}),
        event("content_block_start", _block_start(reply)),
        event("ping", {"type": "ping"}),
    ]
    tokens = render_each(
        lambda piece: event("content_block_delta", _delta(reply, piece)), _pieces(reply)
    )
    message_delta = {
        "type": "message_delta",
        "delta": {"stop_reason": _stop_reason(reply), "stop_sequence": None},
        "usage": {"output_tokens": reply.completion_tokens},
    }
    tail = [
        event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        event("message_delta", message_delta),
        event("message_stop", {"type": "message_stop"}),
    ]
    return StreamPlan(lead, tokens, tail)


def _message(reply: Reply) -> dict[str, Any]:
    return {
        "id": reply.id,
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
    }


def _stop_reason(reply: Reply) -> str:
    return "end_turn" if reply.tool_call is None else "tool_use"


def _full_block(reply: Reply) -> dict[str, Any]:
    if reply.tool_call is None:
        return {"type": "text", "text": reply.text}
    call = reply.tool_call
    return {
        "type": "tool_use",
        "id": call.id,
        "name": call.name,
        "input": orjson.loads(call.arguments_json),
    }


def _block_start(reply: Reply) -> dict[str, Any]:
    if reply.tool_call is None:
        block: dict[str, Any] = {"type": "text", "text": ""}
    else:
        block = {"type": "tool_use", "id": reply.tool_call.id, "name": reply.tool_call.name}
        block["input"] = {}
    return {"type": "content_block_start", "index": 0, "content_block": block}


def _pieces(reply: Reply) -> list[str]:
    return list(reply.tokens) if reply.tool_call is None else reply.tool_call.fragments()


def _delta(reply: Reply, piece: str) -> dict[str, Any]:
    if reply.tool_call is None:
        delta = {"type": "text_delta", "text": piece}
    else:
        delta = {"type": "input_json_delta", "partial_json": piece}
    return {"type": "content_block_delta", "index": 0, "delta": delta}
