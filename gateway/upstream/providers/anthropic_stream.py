"""Anthropic answers -> OpenAI shapes: a Messages stream -> `chat.completion.chunk` frames
(`StreamTranslator`), a message -> `chat.completion` (`parse_response`), an error body ->
(type, message) (`parse_error`), with the vocabulary they share: stop reasons, usage, and
the answer tool that carries a `response_format` reply. `gateway.upstream.providers.anthropic`
builds the requests and re-exports these.

`StreamTranslator` is fed upstream bytes as they arrive (split anywhere) and returns
ready-to-send SSE frames. It never emits `data: [DONE]` and never raises on upstream
content: an upstream `error` event, or an event that is not JSON, is recorded in
`error` for the gateway to act on. Pure: no network, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from gateway.upstream.streaming import SSEEvent, SSEParser, frame_json

JSONObject = dict[str, Any]

# Non-JSON error bodies (proxy HTML pages) are cut to this many characters before we log or
# show them: enough to recognise the page, not enough to flood a trace.
ERROR_BODY_MAX_CHARS = 500

_FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",  # server-tool turn paused; from the client's view the turn ended
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
# A `response_format` request goes to Anthropic as a forced tool named with this prefix
# (anthropic_tools.py); the tool's input is the reply's content, not a tool call. The name
# is the only mark: a response and its stream are translated without their request, so
# client tools may not use the prefix (build_request refuses them).
ANSWER_TOOL_PREFIX = "structured_output__"
# From Anthropic's error docs; they use invalid_request_error for unlisted 4xx statuses.
_ERROR_TYPES_BY_STATUS = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


def finish_reason_for(stop_reason: str | None, *, answered_by_tool: bool = False) -> str:
    """Anthropic stop_reason -> OpenAI finish_reason; unknown or missing reasons are 'stop'.
    A turn that used the answer tool and no client tool (`answered_by_tool`) ended with its
    answer, a plain stop."""
    reason = _FINISH_REASONS.get(stop_reason or "", "stop")
    return "stop" if reason == "tool_calls" and answered_by_tool else reason


def is_answer_tool(name: object) -> bool:
    """Whether a tool_use block carries the `response_format` answer (ANSWER_TOOL_PREFIX)."""
    return isinstance(name, str) and name.startswith(ANSWER_TOOL_PREFIX)


def openai_usage(usage: Mapping[str, Any]) -> JSONObject:
    """Anthropic usage -> OpenAI usage. Anthropic's input_tokens excludes cached tokens, so
    cache reads and writes are added back to give OpenAI's all-inclusive prompt_tokens."""
    cached_tokens = usage.get("cache_read_input_tokens") or 0
    prompt_tokens = (
        (usage.get("input_tokens") or 0)
        + cached_tokens
        + (usage.get("cache_creation_input_tokens") or 0)
    )
    completion_tokens = usage.get("output_tokens") or 0
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached_tokens},
    }


class StreamTranslator:
    """Translates one Anthropic message stream into OpenAI chunk frames.

    Public state the gateway reads: `usage` (OpenAI-shaped, once message_start arrived),
    `finished` (message_stop seen), `error` ((type, message) from an upstream error event)
    and `emitted_content` (a content or tool-call delta has been produced, so the response
    is committed to the client)."""

    def __init__(self, *, model: str, completion_id: str, created: int) -> None:
        self._parser = SSEParser()
        self._chunk_head: JSONObject = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
        }
        # Characters of text and tool input streamed: what a stream without usage is
        # charged by (SPEC D-28).
        self.streamed_chars = 0
        # Anthropic content-block index -> OpenAI tool_calls index (counts tool_use blocks).
        self._tool_index_by_block: dict[int, int] = {}
        # Content-block indexes of answer-tool blocks, whose input streams as content.
        self._answer_blocks: set[int] = set()
        self._upstream_usage: dict[str, int] | None = None
        self.finished = False
        self.error: tuple[str, str] | None = None
        self.emitted_content = False

    @property
    def usage(self) -> JSONObject | None:
        if self._upstream_usage is None:
            return None
        return openai_usage(self._upstream_usage)

    def feed(self, chunk: bytes) -> list[bytes]:
        """Upstream SSE bytes -> OpenAI chunk frames (each `data: {...}\\n\\n`)."""
        frames: list[bytes] = []
        for event in self._parser.feed(chunk):
            frames.extend(self._translate_event(event))
        return frames

    def _translate_event(self, event: SSEEvent) -> list[bytes]:
        try:
            payload = orjson.loads(event.data)
        except orjson.JSONDecodeError:
            self.error = ("api_error", f"upstream sent a non-JSON {event.event or 'stream'} event")
            return []
        if not isinstance(payload, dict):
            self.error = (
                "api_error",
                f"upstream sent a {event.event or 'stream'} event that is not a JSON object",
            )
            return []
        match payload.get("type") or event.event:
            case "message_start":
                self._merge_usage((payload.get("message") or {}).get("usage"))
                return [self._chunk({"role": "assistant", "content": ""})]
            case "content_block_start":
                return self._start_block(payload)
            case "content_block_delta":
                return self._translate_delta(payload)
            case "message_delta":
                self._merge_usage(payload.get("usage"))
                stop_reason = (payload.get("delta") or {}).get("stop_reason")
                answered = bool(self._answer_blocks) and not self._tool_index_by_block
                finish_reason = finish_reason_for(stop_reason, answered_by_tool=answered)
                return [self._chunk({}, finish_reason=finish_reason)]
            case "message_stop":
                self.finished = True
                usage = self.usage or openai_usage({})
                return [frame_json({**self._chunk_head, "choices": [], "usage": usage})]
            case "error":
                error = payload.get("error") or {}
                self.error = (
                    error.get("type") or "api_error",
                    error.get("message") or "upstream stream error",
                )
                return []
            case _:  # ping, content_block_stop, and event types added after this was written
                return []

    def _start_block(self, payload: JSONObject) -> list[bytes]:
        block = payload.get("content_block") or {}
        if block.get("type") == "text" and block.get("text"):
            return [self._content_chunk({"content": block["text"]})]
        if block.get("type") != "tool_use":
            return []  # thinking, redacted_thinking, server tools: not part of the OpenAI reply
        if is_answer_tool(block.get("name")):
            self._answer_blocks.add(payload.get("index", -1))
            return []  # its input_json_delta fragments are the content
        tool_index = len(self._tool_index_by_block)
        self._tool_index_by_block[payload.get("index", -1)] = tool_index
        function = {"name": block.get("name"), "arguments": ""}
        call = {
            "index": tool_index,
            "id": block.get("id"),
            "type": "function",
            "function": function,
        }
        return [self._content_chunk({"tool_calls": [call]})]

    def _translate_delta(self, payload: JSONObject) -> list[bytes]:
        delta = payload.get("delta") or {}
        kind = delta.get("type")
        if kind == "text_delta" and delta.get("text"):
            self.streamed_chars += len(delta["text"])
            return [self._content_chunk({"content": delta["text"]})]
        if kind != "input_json_delta" or not delta.get("partial_json"):
            return []  # thinking/signature/citations deltas, and empty fragments
        self.streamed_chars += len(delta["partial_json"])
        block_index = payload.get("index", -1)
        if block_index in self._answer_blocks:
            return [self._content_chunk({"content": delta["partial_json"]})]
        tool_index = self._tool_index_by_block.get(block_index)
        if tool_index is None:
            return []
        call = {"index": tool_index, "function": {"arguments": delta["partial_json"]}}
        return [self._content_chunk({"tool_calls": [call]})]

    def _merge_usage(self, usage: Mapping[str, Any] | None) -> None:
        # message_delta usage is cumulative and may repeat input counts, so later values win.
        if usage is None:
            return
        merged = dict(self._upstream_usage or {})
        merged.update({key: usage[key] for key in _USAGE_FIELDS if usage.get(key) is not None})
        self._upstream_usage = merged

    def _content_chunk(self, delta: JSONObject) -> bytes:
        self.emitted_content = True
        return self._chunk(delta)

    def _chunk(self, delta: JSONObject, finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return frame_json({**self._chunk_head, "choices": [choice]})


def parse_response(data: bytes, *, model: str, completion_id: str, created: int) -> JSONObject:
    """Anthropic message JSON bytes -> OpenAI `chat.completion` dict reporting `model`.

    An answer tool's input (a response_format reply) becomes the content, as JSON text.
    Raises ValueError (orjson.JSONDecodeError) when the body is not a JSON message
    (check_message)."""
    message = orjson.loads(data)
    check_message(message)
    blocks = [block for block in message["content"] if isinstance(block, dict)]
    texts: list[str] = []
    tool_calls: list[JSONObject] = []
    answered = False
    for block in blocks:
        if block.get("type") == "text":
            texts.append(block.get("text") or "")
        elif block.get("type") == "tool_use" and is_answer_tool(block.get("name")):
            texts.append(orjson.dumps(block.get("input") or {}).decode())
            answered = True
        elif block.get("type") == "tool_use":
            tool_calls.append(_tool_call(block))
    reply: JSONObject = {
        "role": "assistant",
        "content": "".join(texts) if texts else None,
        "refusal": None,
    }
    if tool_calls:
        reply["tool_calls"] = tool_calls
    answered_by_tool = answered and not tool_calls
    usage = message.get("usage")
    finish_reason = finish_reason_for(message.get("stop_reason"), answered_by_tool=answered_by_tool)
    choice = {"index": 0, "message": reply, "logprobs": None, "finish_reason": finish_reason}
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [choice],
        "usage": openai_usage(usage if isinstance(usage, dict) else {}),
    }


def check_message(message: object) -> None:
    """Raises ValueError unless `message` is the least shape of an Anthropic answer (SPEC
    D-18): a `message` object with a `content` list (which may be empty: a turn can end
    with nothing to say). Anything short of it is a malformed answer."""
    if not isinstance(message, dict):
        raise ValueError("upstream message is not a JSON object")
    if message.get("type") != "message":
        raise ValueError("upstream answer is not a message")
    if not isinstance(message.get("content"), list):
        raise ValueError("upstream message has no content")


def _tool_call(block: JSONObject) -> JSONObject:
    arguments = orjson.dumps(block.get("input") or {}).decode()
    function = {"name": block.get("name"), "arguments": arguments}
    return {"id": block.get("id"), "type": "function", "function": function}


def parse_error(status: int, data: bytes) -> tuple[str, str]:
    """Anthropic error body -> (error type, message). Bodies that are not Anthropic's JSON
    envelope (gateway HTML, empty) get a type derived from `status` and the text itself."""
    fallback_type = _ERROR_TYPES_BY_STATUS.get(
        status, "invalid_request_error" if 400 <= status < 500 else "api_error"
    )
    try:
        payload = orjson.loads(data)
    except orjson.JSONDecodeError:
        payload = None
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error.get("type") or fallback_type), str(error["message"])
    text = data.decode("utf-8", "replace").strip()[:ERROR_BODY_MAX_CHARS]
    return fallback_type, text or f"upstream returned HTTP {status}"
