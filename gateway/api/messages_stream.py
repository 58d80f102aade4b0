"""Streaming for `POST /v1/messages`: the chat path's OpenAI chunk frames re-shaped into the
Anthropic Messages event sequence as they arrive (SPEC R-API-9). `message_start` (an empty
message) and a `ping` open the stream; then each content block comes whole and in order:
`content_block_start`, its deltas (`text_delta`, or `input_json_delta` carrying a tool
call's argument fragments as they arrive), `content_block_stop`. A block ends when the
next one starts or the chat stream ends; then come `message_delta` (stop reason, stop
sequence, usage) and `message_stop`. A chat error frame becomes the `error` event that
ends the stream, as Anthropic ends one. Chat streams report usage only in their last
chunks, so `message_start` carries the caller's input estimate (or 0) and `message_delta`
the counts, cumulative as Anthropic's are.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from gateway.api.messages_response import (
    anthropic_usage,
    matched_stop,
    stop_reason_for,
    tool_use_id,
)
from gateway.api.reshape import reshape
from gateway.upstream.streaming import frame_json

# The type of the `error` event for a chat stream that broke after it began: the chat
# relay's error frame is the gateway's (an upstream failed mid-answer), a server failure.
STREAM_ERROR_TYPE = "api_error"
ENDED_EARLY = "the answer stream ended before it was complete"


@dataclass(slots=True)
class _Call:
    """A chat tool call on its way to a tool_use block, started once its id and name are
    known (they come in a call's first chunk from OpenAI and from our Anthropic adapter)."""

    id: str = ""
    name: str = ""
    pending: list[str] = field(default_factory=list)  # argument fragments not sent yet
    block: int | None = None  # its content block index, once started


def _event(kind: str, **fields: Any) -> bytes:
    return frame_json({"type": kind, **fields}, event=kind)


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


class MessagesStream:
    """Chat chunks in (`feed`), Anthropic events out, between `opening` and `closing`.
    `model` is the model that answers; `input_tokens` what the caller estimated, if any."""

    def __init__(self, *, message_id: str, model: str, input_tokens: int = 0) -> None:
        self.message_id = message_id
        self.model = model
        self.input_tokens = input_tokens
        self.blocks = 0  # content blocks started
        self.open: int | None = None  # the index of the block not yet stopped
        self.open_call: _Call | None = None  # the tool call that block is
        self.calls: dict[int, _Call] = {}  # by the chat tool-call index
        self.usage: dict[str, Any] = {}
        self.finish_reason: str | None = None
        self.stop_sequence: str | None = None
        self.refused = False

    def opening(self) -> list[bytes]:
        usage = {"input_tokens": self.input_tokens, "output_tokens": 0}
        message: dict[str, Any] = {"id": self.message_id, "type": "message", "role": "assistant",
                                   "model": self.model, "content": [], "stop_reason": None,
                                   "stop_sequence": None, "usage": usage}  # fmt: skip
        return [_event("message_start", message=message), _event("ping")]

    def feed(self, payload: dict[str, Any]) -> list[bytes]:
        """One chat.completion.chunk -> Anthropic events. The chunks are the upstream's own
        (the relay passes OpenAI-style frames through), so shapes are not trusted."""
        if isinstance(payload.get("usage"), dict):
            self.usage = payload["usage"]
        out: list[bytes] = []
        for choice in payload.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            delta = _object(choice.get("delta"))
            if isinstance(delta.get("content"), str) and delta["content"]:
                out.extend(self._text(delta["content"]))
            if isinstance(delta.get("refusal"), str) and delta["refusal"]:
                self.refused = True
                out.extend(self._text(delta["refusal"]))
            for call in delta.get("tool_calls") or []:
                if isinstance(call, dict):
                    out.extend(self._call_delta(call))
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
                self.stop_sequence = matched_stop(choice)
        return out

    def _text(self, text: str) -> list[bytes]:
        out: list[bytes] = []
        if self.open is None or self.open_call is not None:
            out.extend(self._stop_open())
            out.append(self._start({"type": "text", "text": ""}))
        delta = {"type": "text_delta", "text": text}
        out.append(_event("content_block_delta", index=self.open, delta=delta))
        return out

    def _call_delta(self, call: dict[str, Any]) -> list[bytes]:
        index = call.get("index")
        item = self.calls.setdefault(index if isinstance(index, int) else 0, _Call())
        function = _object(call.get("function"))
        if item.block is None:
            if isinstance(call.get("id"), str):
                item.id = item.id or call["id"]
            if isinstance(function.get("name"), str):
                item.name += function["name"]
        if isinstance(function.get("arguments"), str) and function["arguments"]:
            item.pending.append(function["arguments"])
        if item.block is None:
            if not (item.id and item.name):
                return []
            return [*self._stop_open(), *self._announce(item), *self._flush(item)]
        # Chat streams send each call whole before the next; a fragment for a call whose
        # block already stopped cannot be sent (Anthropic blocks do not reopen).
        return self._flush(item) if item is self.open_call else []

    def _announce(self, item: _Call) -> list[bytes]:
        fallback = f"toolu_{self.message_id}_{self.blocks}"
        block = {"type": "tool_use", "id": tool_use_id(item.id, fallback), "name": item.name,
                 "input": {}}  # fmt: skip
        started = self._start(block)
        item.block, self.open_call = self.open, item
        return [started]

    def _flush(self, item: _Call) -> list[bytes]:
        fragments = "".join(item.pending)
        item.pending.clear()
        if not fragments:
            return []
        delta = {"type": "input_json_delta", "partial_json": fragments}
        return [_event("content_block_delta", index=item.block, delta=delta)]

    def _start(self, block: dict[str, Any]) -> bytes:
        self.open = self.blocks
        self.blocks += 1
        return _event("content_block_start", index=self.open, content_block=block)

    def _stop_open(self) -> list[bytes]:
        index, self.open, self.open_call = self.open, None, None
        return [] if index is None else [_event("content_block_stop", index=index)]

    def error(self, payload: dict[str, Any]) -> bytes:
        """An in-band chat error as the `error` event that ends the stream."""
        error = payload.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        body = {"type": STREAM_ERROR_TYPE, "message": str(message or ENDED_EARLY)}
        return _event("error", error=body)

    def closing(self) -> list[bytes]:
        out = self._stop_open()
        for item in self.calls.values():
            if item.block is None:  # never got its id or name: sent whole, as it came
                out.extend([*self._announce(item), *self._flush(item), *self._stop_open()])
        stop_reason = stop_reason_for(
            self.finish_reason,
            has_tool_use=bool(self.calls),
            refused=self.refused,
            stop_sequence=self.stop_sequence,
        )
        usage = anthropic_usage(self.usage)
        if not self.usage:
            usage["input_tokens"] = self.input_tokens
        delta = {"stop_reason": stop_reason, "stop_sequence": self.stop_sequence}
        return [*out, _event("message_delta", delta=delta, usage=usage), _event("message_stop")]


async def translate(frames: AsyncIterator[bytes], stream: MessagesStream) -> AsyncIterator[bytes]:
    """Chat SSE bytes in, this API's SSE bytes out (gateway/api/reshape.py)."""
    async for frame in reshape(frames, stream):
        yield frame
