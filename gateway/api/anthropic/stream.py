"""Streaming for `POST /v1/messages` (SPEC R-API-9). An Anthropic-style upstream's events
are relayed as they came (`NativeStream`, gateway/upstream/providers/anthropic_native.py).
An OpenAI-style upstream's chunks are shaped into Anthropic's event sequence as they
arrive, each parsed once (`ChatToMessages`, with `MessagesStream` deciding the events):
`message_start` (an empty message) and a `ping` open the stream; then each content block
comes whole and in order: `content_block_start`, its deltas (`text_delta`, or
`input_json_delta` carrying a tool call's argument fragments as they arrive),
`content_block_stop`. A block ends when the next one starts or the chat stream ends; then
come `message_delta` (stop reason, stop sequence, usage) and `message_stop`. A stream that
breaks after it began ends with the `error` event, as Anthropic ends one. Chat streams
report usage only in their last chunks, so `message_start` carries the caller's input
estimate (or 0) and `message_delta` the counts, cumulative as Anthropic's are.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.api.anthropic.response import (
    anthropic_usage,
    matched_stop,
    stop_reason_for,
    tool_use_id,
)
from gateway.upstream.attempt import Opened
from gateway.upstream.providers.anthropic_native import NativeStream
from gateway.upstream.relay import relay
from gateway.upstream.streaming import SSEEvent, SSEParser, frame_json

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


def error_event(message: str) -> bytes:
    """The `error` event that ends a stream which broke after it began (the gateway's
    words: an upstream's own error text is not relayed)."""
    return _event("error", error={"type": STREAM_ERROR_TYPE, "message": message})


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
        message: dict[str, Any] = {
            "id": self.message_id,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        }
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
        block = {
            "type": "tool_use",
            "id": tool_use_id(item.id, fallback),
            "name": item.name,
            "input": {},
        }
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
        return error_event(str(message or ENDED_EARLY))

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


class ChatToMessages:
    """An OpenAI-style upstream's stream, read by its chat translator (`chat`: usage,
    errors, the commit point and the end, as for a chat client) and shaped into Anthropic
    events as it arrives: each upstream event is parsed once, and no chat frame is written
    between (SPEC R-API-9). The relay reads it as any translator; `opening` and `closing`
    are the events before and after the upstream's."""

    def __init__(self, chat: Any, shaper: MessagesStream) -> None:
        self.chat = chat
        self.shaper = shaper

    @property
    def finished(self) -> bool:
        return bool(self.chat.finished)

    @property
    def error(self) -> tuple[str, str] | None:
        return self.chat.error  # type: ignore[no-any-return]

    @property
    def usage(self) -> dict[str, Any] | None:
        return self.chat.usage  # type: ignore[no-any-return]

    @property
    def streamed_chars(self) -> int:
        return int(self.chat.streamed_chars)

    def feed(self, chunk: bytes) -> list[bytes]:
        return self._shape(self.chat.accept(chunk))

    def reshape(self, frames: list[bytes]) -> list[bytes]:
        """Chat frames the commit check already wrote (the first few), as events, after
        the opening ones."""
        return [*self.shaper.opening(), *self._shape(SSEParser().feed(b"".join(frames)))]

    def _shape(self, events: list[SSEEvent]) -> list[bytes]:
        out: list[bytes] = []
        for event in events:
            try:
                payload = orjson.loads(event.data)
            except orjson.JSONDecodeError:
                continue
            if isinstance(payload, dict):
                out.extend(self.shaper.feed(payload))
        return out

    def closing(self) -> list[bytes]:
        return self.shaper.closing()


def relay_messages(
    opened: Opened,
    *,
    message_id: str,
    input_tokens: int,
    on_end: Callable[[Opened, str | None], None],
) -> AsyncIterator[bytes]:
    """The client's event stream for a committed upstream stream: an Anthropic-style
    upstream's own events (`NativeStream`), or an OpenAI-style upstream's chunks shaped into
    events as they arrive (`ChatToMessages`); an `error` event when it breaks."""
    if not isinstance(opened.translator, NativeStream):
        model = opened.target.endpoint.model
        shaper = MessagesStream(message_id=message_id, model=model, input_tokens=input_tokens)
        opened.translator = ChatToMessages(opened.translator, shaper)
        opened.buffered = opened.translator.reshape(opened.buffered)

    def tail(opened: Opened, error: str | None) -> list[bytes]:
        return [error_event(error)] if error is not None else opened.translator.closing()

    return relay(opened, tail=tail, on_end=on_end)
