"""Anthropic Messages streaming -> OpenAI `chat.completion.chunk` frames, plus the
stop-reason and usage vocabulary that the non-streaming `parse_response` shares.

`StreamTranslator` is fed upstream bytes as they arrive (split anywhere) and returns
ready-to-send SSE frames. It never emits `data: [DONE]` and never raises on upstream
content: an upstream `error` event, or an event that is not JSON, is recorded in
`error` for the gateway to act on. Pure: no network, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from gateway.streaming import SSEEvent, SSEParser, frame_json

JSONObject = dict[str, Any]

_FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",  # server-tool turn paused; from the client's view the turn ended
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


def finish_reason_for(stop_reason: str | None) -> str:
    """Anthropic stop_reason -> OpenAI finish_reason; unknown or missing reasons are 'stop'."""
    return _FINISH_REASONS.get(stop_reason or "", "stop")


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
        # Anthropic content-block index -> OpenAI tool_calls index (counts tool_use blocks).
        self._tool_index_by_block: dict[int, int] = {}
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
                return [self._chunk({}, finish_reason=finish_reason_for(stop_reason))]
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
            return [self._content_chunk({"content": delta["text"]})]
        tool_index = self._tool_index_by_block.get(payload.get("index", -1))
        if kind == "input_json_delta" and delta.get("partial_json") and tool_index is not None:
            call = {"index": tool_index, "function": {"arguments": delta["partial_json"]}}
            return [self._content_chunk({"tool_calls": [call]})]
        return []  # thinking/signature/citations deltas, and empty fragments

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
