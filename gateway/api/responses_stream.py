"""Streaming for `POST /v1/responses`: the chat path's OpenAI chunk frames re-shaped into
Responses API events as they arrive.

Output items are opened and finished one at a time, in order, the way the Responses API
sends them: the message (`response.output_item.added`, `response.content_part.added`,
`response.output_text.delta` …, `response.output_text.done`, `response.content_part.done`,
`response.output_item.done`) and each function call (`response.output_item.added`,
`response.function_call_arguments.delta` …, `response.function_call_arguments.done`,
`response.output_item.done`). An item is finished when the next one starts or the chat
stream ends; the last event is `response.completed` (or `response.incomplete`) carrying
the whole output. Also the shared pieces of a `response` object (usage, final status).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.api.reshape import reshape
from gateway.upstream.streaming import frame_json

# Chat finish reasons that end a response early, with the Responses API's reason for it.
INCOMPLETE_REASONS = {"length": "max_output_tokens", "content_filter": "content_filter"}


def response_usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    """Chat `usage` in the Responses API's names."""
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    return {
        "input_tokens": usage.get("prompt_tokens", 0),
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": usage.get("completion_tokens", 0),
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.get("total_tokens", 0),
    }


def finished_state(finish_reason: str | None) -> tuple[str, dict[str, str] | None]:
    """(`status`, `incomplete_details`) of a response whose chat answer ended so."""
    reason = INCOMPLETE_REASONS.get(finish_reason or "")
    return ("incomplete", {"reason": reason}) if reason else ("completed", None)


@dataclass(slots=True)
class _Item:
    """One output item: the assistant message or a function call. `output_index` is set
    when the item is announced; a call waits for its call id and name before that."""

    kind: str  # "message" or "function_call"
    id: str = ""
    call_id: str = ""
    name: str = ""
    chunks: list[str] = field(default_factory=list)  # text, or argument fragments
    sent: int = 0  # chunks already sent as deltas
    output_index: int | None = None

    def as_output(self, status: str) -> dict[str, Any]:
        joined = "".join(self.chunks) if status != "in_progress" else ""
        if self.kind == "message":
            content = [] if status == "in_progress" else [_text_part(joined)]
            return {
                "type": "message",
                "id": self.id,
                "status": status,
                "role": "assistant",
                "content": content,
            }
        return {
            "type": "function_call",
            "id": self.id,
            "call_id": self.call_id,
            "name": self.name,
            "arguments": joined,
            "status": status,
        }


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": []}


class ResponsesStream:
    """Chat chunks in (`feed`), Responses events out, between `opening` and `closing`.
    `envelope` holds the response fields that do not depend on the answer."""

    def __init__(self, *, envelope: dict[str, Any], message_id: str) -> None:
        self.envelope = envelope
        self.message_id = message_id
        self.sequence = 0
        self.items: list[_Item] = []  # announced, in output order
        self.calls: dict[int, _Item] = {}  # by the chat tool-call index
        self.open: _Item | None = None
        self.usage: dict[str, Any] = {}
        self.finish_reason: str | None = None
        self.switchyard: dict[str, Any] | None = None

    def _event(self, kind: str, **fields: Any) -> bytes:
        self.sequence += 1
        return frame_json({"type": kind, "sequence_number": self.sequence, **fields}, event=kind)

    def _response(self, *, finished: bool) -> dict[str, Any]:
        status, incomplete = (
            finished_state(self.finish_reason) if finished else ("in_progress", None)
        )
        body: dict[str, Any] = {
            **self.envelope,
            "status": status,
            "incomplete_details": incomplete,
            "output": [item.as_output("completed") for item in self.items],
            "usage": response_usage(self.usage) if self.usage else None,
        }
        if self.switchyard is not None:
            body["switchyard"] = self.switchyard
        return body

    def opening(self) -> list[bytes]:
        response = self._response(finished=False)
        return [
            self._event("response.created", response=response),
            self._event("response.in_progress", response=response),
        ]

    def feed(self, payload: dict[str, Any]) -> list[bytes]:
        """One chat.completion.chunk -> Responses events."""
        if payload.get("usage"):
            self.usage = payload["usage"]
        if payload.get("switchyard"):
            self.switchyard = payload["switchyard"]
        out: list[bytes] = []
        for choice in payload.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                out.extend(self._text_delta(delta["content"]))
            for call in delta.get("tool_calls") or []:
                out.extend(self._call_delta(call))
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return out

    def _text_delta(self, text: str) -> list[bytes]:
        out: list[bytes] = []
        item = self.open
        if item is None or item.kind != "message":
            out.extend(self._finish_open())
            count = sum(1 for announced in self.items if announced.kind == "message")
            item = _Item("message", id=self.message_id + (f"_{count}" if count else ""))
            out.extend(self._announce(item))
        item.chunks.append(text)
        out.append(
            self._event(
                "response.output_text.delta",
                item_id=item.id,
                output_index=item.output_index,
                content_index=0,
                delta=text,
            )
        )
        return out

    def _call_delta(self, call: dict[str, Any]) -> list[bytes]:
        index = call.get("index")
        item = self.calls.setdefault(index if isinstance(index, int) else 0, _Item("function_call"))
        function = call.get("function") or {}
        if item.output_index is None:
            # The id and name come in a call's first chunk (OpenAI, and our Anthropic
            # translator); the item is announced once both are known, never re-keyed.
            item.call_id = call.get("id") or item.call_id
            item.name += function.get("name") or ""
        if function.get("arguments"):
            item.chunks.append(function["arguments"])
        if item.output_index is None:
            if not (item.call_id and item.name):
                return []
            return [*self._finish_open(), *self._announce(item), *self._flush(item)]
        # Chat streams send each call whole before the next; a late fragment for a call
        # already finished can only reach the final response.
        return self._flush(item) if item is self.open else []

    def _announce(self, item: _Item) -> list[bytes]:
        if item.kind == "function_call":
            item.id = f"fc_{item.call_id}"
        item.output_index = len(self.items)
        self.items.append(item)
        self.open = item
        out = [
            self._event(
                "response.output_item.added",
                output_index=item.output_index,
                item=item.as_output("in_progress"),
            )
        ]
        if item.kind == "message":
            out.append(
                self._event(
                    "response.content_part.added",
                    item_id=item.id,
                    output_index=item.output_index,
                    content_index=0,
                    part=_text_part(""),
                )
            )
        return out

    def _flush(self, item: _Item) -> list[bytes]:
        pending = "".join(item.chunks[item.sent :])
        item.sent = len(item.chunks)
        if not pending:
            return []
        return [
            self._event(
                "response.function_call_arguments.delta",
                item_id=item.id,
                output_index=item.output_index,
                delta=pending,
            )
        ]

    def _finish_open(self) -> list[bytes]:
        item, self.open = self.open, None
        if item is None:
            return []
        done = item.as_output("completed")
        ids = {"item_id": item.id, "output_index": item.output_index}
        if item.kind == "message":
            part = done["content"][0]
            out = [
                self._event("response.output_text.done", **ids, content_index=0, text=part["text"]),
                self._event("response.content_part.done", **ids, content_index=0, part=part),
            ]
        else:
            out = [
                self._event(
                    "response.function_call_arguments.done",
                    **ids,
                    name=item.name,
                    arguments=done["arguments"],
                )
            ]
        out.append(
            self._event("response.output_item.done", output_index=item.output_index, item=done)
        )
        return out

    def error(self, payload: dict[str, Any]) -> bytes:
        """An in-band chat error as the Responses `error` event that ends the stream."""
        error = payload.get("error")
        error = error if isinstance(error, dict) else {}
        # The chat path's error frame holds the gateway's code and a scrubbed message;
        # it names no field of the Responses request.
        return self._event(
            "error", code=error.get("code"), message=error.get("message", ""), param=None
        )

    def closing(self) -> list[bytes]:
        out = self._finish_open()
        for item in self.calls.values():
            if item.output_index is None:  # never got its id or name; sent whole
                out.extend([*self._announce(item), *self._flush(item), *self._finish_open()])
        response = self._response(finished=True)
        out.append(self._event(f"response.{response['status']}", response=response))
        return out


async def translate(frames: AsyncIterator[bytes], stream: ResponsesStream) -> AsyncIterator[bytes]:
    """Chat SSE bytes in, this API's SSE bytes out (gateway/api/reshape.py)."""
    async for frame in reshape(frames, stream):
        yield frame
